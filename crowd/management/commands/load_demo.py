"""Load the demo: a small hierarchy, a dataset of generated images, vote tasks and demo accounts."""

from __future__ import annotations

import io
import random

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction
from PIL import Image as PILImage
from PIL import ImageDraw

from annotation.ingest import IngestItem, images_ingest
from annotation.models import Dataset
from annotation.vote_tasks import vote_tasks_create
from config.roles import ORGANIZERS, REVIEWERS, WORKERS
from crowd.services import roles_ensure, token_for, user_create
from hierarchy.services import concepts_upsert

DEMO_CONCEPTS = [
    {
        "wnid": "n00015388",
        "name": "animal",
        "gloss": "a living organism characterized by voluntary movement",
        "parents": [],
    },
    {
        "wnid": "n02121808",
        "name": "domestic cat",
        "gloss": "any domesticated member of the genus Felis",
        "parents": ["n00015388"],
    },
    {"wnid": "n02084071", "name": "dog", "gloss": "a member of the genus Canis", "parents": ["n00015388"]},
    {
        "wnid": "n04576211",
        "name": "wheeled vehicle",
        "gloss": "a vehicle that moves on wheels",
        "parents": [],
    },
    {
        "wnid": "n02958343",
        "name": "car",
        "gloss": "a motor vehicle with four wheels",
        "parents": ["n04576211"],
    },
]
DEMO_ACCOUNTS = [
    ("organizer", "organizer-demo-pass", (ORGANIZERS,)),
    ("reviewer", "reviewer-demo-pass", (REVIEWERS,)),
    ("worker", "worker-demo-pass", (WORKERS,)),
    ("worker2", "worker2-demo-pass", (WORKERS,)),
]


def demo_image(index: int, rng: random.Random) -> bytes:
    """A small picture of a few coloured shapes, different for every index."""
    image = PILImage.new("RGB", (480, 360), tuple(rng.randrange(150, 256) for _ in range(3)))
    draw = ImageDraw.Draw(image)
    for _ in range(rng.randrange(2, 6)):
        x, y = rng.randrange(0, 400), rng.randrange(0, 280)
        w, h = rng.randrange(30, 160), rng.randrange(30, 160)
        colour = tuple(rng.randrange(0, 200) for _ in range(3))
        (draw.ellipse if rng.random() < 0.5 else draw.rectangle)([x, y, x + w, y + h], fill=colour)
    draw.text((10, 10), f"demo {index}", fill=(0, 0, 0))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


class Command(BaseCommand):
    help = "Load demo data (hierarchy, dataset with generated images, vote tasks, demo accounts). Idempotent."

    def add_arguments(self, parser):
        parser.add_argument(
            "--images", type=int, default=12, help="How many demo images to generate (default 12)."
        )

    def handle(self, *args, images: int, **options):
        if images < 1 or images > 1000:
            self.stderr.write("--images must be between 1 and 1000")
            raise SystemExit(2)
        roles_ensure()
        User = get_user_model()
        with transaction.atomic():
            concepts = concepts_upsert(DEMO_CONCEPTS)
            dataset, _ = Dataset.objects.get_or_create(
                name="demo", defaults={"description": "Generated demo images"}
            )
            logins = []
            for username, password, roles in DEMO_ACCOUNTS:
                user = User.objects.filter(username=username).first()
                if user is None:
                    user = user_create(username=username, password=password, roles=roles)
                if ORGANIZERS in roles:
                    dataset.organizers.add(user)
                logins.append((username, password, token_for(user)))
        rng = random.Random(0)
        report = images_ingest(
            dataset=dataset,
            items=(
                IngestItem(name=f"demo-{i:03d}.png", data=demo_image(i, rng), source="generated")
                for i in range(images)
            ),
        )
        created = vote_tasks_create(dataset=dataset, concept=concepts["n02084071"], answers_wanted=3)
        self.stdout.write(
            f"Demo dataset {dataset.name!r}: {dataset.images.count()} images "
            f"({len(report.stored)} new), {len(created)} new vote tasks."
        )
        self.stdout.write("Demo accounts (username / password / API token):")
        for username, password, token in logins:
            self.stdout.write(f"  {username:<10} {password:<22} {token}")
