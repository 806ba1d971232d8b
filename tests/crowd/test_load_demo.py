"""`load_demo` (`make run`) gives a newcomer every page at once (issue 17): the demo worker can lease a task of
each kind - a yes/no vote, image verification, a hierarchy question, a box to draw, a box to check and a
coverage question - and the demo reviewer gets a review item; loading again adds nothing."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from annotation import queue
from annotation.models import Image, Task
from consensus.models import QuestionKind
from crowd.models import Worker
from tests.conftest import client_for

pytestmark = pytest.mark.django_db(transaction=True)

EVERY_KIND = {
    "binary_vote",
    "hierarchy_question",
    "box_draw",
    QuestionKind.IMAGE_VERIFY,
    QuestionKind.BOX_QUALITY,
    QuestionKind.BOX_COVERAGE,
}


def shown_as(assignment) -> str:
    """The page a lease opens: its task kind, or for a consensus question the question's kind."""
    task = assignment.task
    return task.question.kind if task.kind == "question" else task.kind


def load() -> str:
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    return out.getvalue()


def test_the_demo_worker_leases_every_task_kind_and_the_reviewer_gets_an_item(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    printed = load()
    assert "a coverage question waits for 'worker'" in printed
    worker = Worker.objects.get(user__username="worker")
    seen: dict[str, int] = {}
    for _ in range(Task.objects.count()):
        lease = queue.task_lease_next(worker=worker)
        if lease is None:
            break
        seen.setdefault(shown_as(lease), lease.pk)
    assert set(seen) >= EVERY_KIND, sorted(seen)

    response = client_for(get_user_model().objects.get(username="reviewer")).get("/api/v1/review/next")
    assert response.status_code == 200, response.content
    assert response.json()["kind"] == "duplicate"


def test_the_demo_has_one_real_photograph_and_loading_again_adds_nothing(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    load()
    photo = Image.objects.get(original_name="grace-hopper.jpg")
    assert (photo.width, photo.height) == (512, 600)
    tasks, images = Task.objects.count(), Image.objects.count()
    again = load()
    assert "the demo crowd gave 0 answers" in again
    assert (Task.objects.count(), Image.objects.count()) == (tasks, images)


def test_every_name_and_concept_id_the_demo_creates_is_one_the_api_states_and_routes(settings, tmp_path):
    import re

    import yaml
    from django.urls import resolve

    from annotation.models import Dataset
    from hierarchy.models import Concept
    from tests.config.conftest import REPO_ROOT

    settings.MEDIA_ROOT = tmp_path
    load()
    schema = yaml.safe_load((REPO_ROOT / "docs/openapi.yaml").read_text())
    name = schema["components"]["schemas"]["Dataset"]["properties"]["name"]
    names = list(Dataset.objects.values_list("name", flat=True))
    assert len(names) >= 2
    for dataset_name in names:
        assert (
            re.fullmatch(name["pattern"].strip("^$"), dataset_name) and len(dataset_name) <= name["maxLength"]
        )
    # Every concept the demo asks about has its calibration table's URL.
    wnids = list(Concept.objects.values_list("wnid", flat=True))
    assert wnids
    for wnid in wnids:
        assert resolve(f"/api/v1/concepts/{wnid}/calibration/").url_name == "concept-calibration", wnid


def test_the_shipped_det200_hierarchy_loads_on_the_demo_platform(settings, tmp_path):
    """`make run` loads the demo; an organizer who then uploads the shipped ILSVRC DET-200 hierarchy is not
    refused for renaming the demo's classes (a concept in use keeps its name and gloss: the demo takes them
    from that file)."""
    import json
    from pathlib import Path

    from hierarchy.fixture import parse_fixture
    from hierarchy.services import hierarchy_load

    settings.MEDIA_ROOT = tmp_path
    load()
    path = Path(settings.BASE_DIR) / "fixtures/hierarchies/ilsvrc_det200.json"
    result = hierarchy_load(parse_fixture(json.loads(path.read_text())))
    assert result.created and result.leaves == 200
