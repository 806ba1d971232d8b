"""Load the demo: a small hierarchy, a dataset of generated images (and one real photograph), demo accounts, and
tasks of every kind: yes/no votes, image verification, hierarchy questions, boxes to draw, a drawn box to check,
a coverage question and a duplicate pair of boxes to review (`crowd.demo_tasks`), so a newcomer sees every
worker page and the review page."""

from __future__ import annotations

import io
import random

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction
from PIL import Image as PILImage
from PIL import ImageDraw

from annotation import queue
from annotation.examples import ExampleRefused, example_add
from annotation.imagerefs import image_ref
from annotation.ingest import IngestItem, images_ingest
from annotation.models import Box, Dataset
from annotation.vote_tasks import KIND as VOTE_KIND
from boxes import services as boxes
from config.roles import ORGANIZERS, REVIEWERS, WORKERS
from consensus.binary_vote import vote_tasks_create
from crowd import demo_tasks
from crowd.services import roles_ensure, token_for, user_create
from hierarchy.services import concepts_upsert

# Names and glosses as the shipped ILSVRC DET-200 hierarchy has them (fixtures/hierarchies/), so an organizer
# can load it on the demo platform: a concept in use keeps its name and gloss.
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
    {
        "wnid": "n02084071",
        "name": "dog",
        "gloss": (
            "a member of the genus Canis (probably descended from the common wolf) that has been domesticated by "
            "man since prehistoric times; occurs in many breeds"
        ),
        "parents": ["n00015388"],
    },
    {
        "wnid": "n04576211",
        "name": "wheeled vehicle",
        "gloss": "a vehicle that moves on wheels",
        "parents": [],
    },
    {
        "wnid": "n02958343",
        "name": "car",
        "gloss": "a motor vehicle with four wheels; usually propelled by an internal combustion engine",
        "parents": ["n04576211"],
    },
]
DEMO_ACCOUNTS = [
    ("organizer", "organizer-demo-pass", (ORGANIZERS,)),
    ("reviewer", "reviewer-demo-pass", (REVIEWERS,)),
    ("worker", "worker-demo-pass", (WORKERS,)),
    ("worker2", "worker2-demo-pass", (WORKERS,)),
]


def demo_photograph() -> IngestItem:
    """The one real photograph an installed dependency ships under a free licence: matplotlib's sample portrait
    of Grace Hopper (a U.S. Navy photograph, public domain). No package the project uses ships free photographs
    of the demo's concepts (dogs, cats, cars), so the other demo images stay generated."""
    from matplotlib import cbook

    with cbook.get_sample_data("grace_hopper.jpg") as photo:
        data = photo.read()
    return IngestItem(name="grace-hopper.jpg", data=data, source="matplotlib sample data (public domain)")


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
            # The question hierarchy (and with it the concepts' parents) before any dataset uses the concepts:
            # a concept in use may not change its parents afterwards (hierarchy.services.hierarchy_load).
            demo_tasks.hierarchy_ensure(DEMO_CONCEPTS)
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
            items=[
                *(
                    IngestItem(name=f"demo-{i:03d}.png", data=demo_image(i, rng), source="generated")
                    for i in range(images)
                ),
                demo_photograph(),
            ],
        )
        created = vote_tasks_create(dataset=dataset, concept=concepts["n02084071"], answers_wanted=3)
        drawn, checks = self.box_tasks(dataset, concepts["n02958343"])
        demo_images = list(dataset.images.order_by("id"))
        verifications = demo_tasks.verification_start(dataset, concepts["n02121808"])
        labelings = demo_tasks.hierarchy_start(dataset, DEMO_CONCEPTS, demo_images[-4:])
        organizers = list(dataset.organizers.all())
        boxed, _ = demo_tasks.boxes_dataset(organizers)
        if not boxed.images.exists():
            images_ingest(
                dataset=boxed,
                items=[
                    IngestItem(
                        name="boxes-000.png", data=demo_image(800, random.Random(800)), source="generated"
                    )
                ],
            )
        crowd = demo_tasks.crowd_boxes(boxed, concepts["n02958343"], boxed.images.order_by("id").first())
        for polarity, index, caption in (
            ("positive", 900, "what counts"),
            ("negative", 901, "what does not"),
        ):
            try:  # generated pictures too: they show where examples appear, not what a dog looks like
                example_add(
                    dataset=dataset,
                    concept=concepts["n02084071"],
                    kind=VOTE_KIND,
                    polarity=polarity,
                    data=demo_image(index, random.Random(index)),
                    name=f"example-{polarity}",
                    caption=f"Demo example: {caption}",
                )
            except ExampleRefused:
                pass  # loaded before
        self.stdout.write(
            f"Demo dataset {dataset.name!r}: {dataset.images.count()} images "
            f"({len(report.stored)} new), {len(created)} new vote tasks, {drawn} new box jobs "
            f"(draw tasks), {checks} new drawn boxes to check (quality tasks), {verifications} new image "
            f"verification questions, {labelings} new images with hierarchy questions."
        )
        self.stdout.write(
            f"Dataset {boxed.name!r}: the demo crowd gave {crowd.answers} answers; {crowd.accepted_boxes} boxes "
            f"accepted, a coverage question {'waits' if demo_tasks.coverage_waiting(boxed) else 'does not wait'}"
            f" for 'worker', {crowd.review_items} review items wait for 'reviewer' (/review/)."
        )
        self.stdout.write(
            "Draw tasks: /worker/?kinds=box_draw; the box to check goes to 'worker' (worker2 drew it)."
        )
        self.stdout.write("Demo accounts (username / password / API token):")
        for username, password, token in logins:
            self.stdout.write(f"  {username:<10} {password:<22} {token}")

    def box_tasks(self, dataset, concept) -> tuple[int, int]:
        """Box jobs for `concept` on the first few images (their DRAW tasks), and on one of them a box drawn by
        worker2 through the queue, as a worker would, so its quality check waits for the other demo worker.
        Idempotent: existing jobs and boxes are left as they are."""
        images = list(dataset.images.order_by("id")[:4])
        started = boxes.box_jobs_start(dataset=dataset, concept=concept, images=images)
        drawer = get_user_model().objects.get(username="worker2").worker
        if not images or Box.objects.filter(image__dataset=dataset, drawn_by=drawer).exists():
            return started.created, 0
        assignment = queue.task_lease_next(
            worker=drawer, kinds_wanted=[boxes.DRAW_KIND], dataset_id=dataset.pk
        )
        if assignment is None:
            return started.created, 0
        image = assignment.task.image
        box = [image.width * 0.2, image.height * 0.2, image.width * 0.6, image.height * 0.7]
        queue.assignment_submit(
            assignment=assignment,
            answer={"box": box, "image": image_ref(image.pk)},
            idempotency_key="demo-draw",
        )
        return started.created, 1
