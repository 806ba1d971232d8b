"""Gold looks like the real question of its kind and concept (issue 13, cause 7): the same wording, produced by
one function, and the same payload keys, through the real creation paths (hierarchy labeling, box pipeline)."""

from __future__ import annotations

import pytest

from annotation import queue
from annotation.models import Box, BoxState, Task
from annotation.serializers import WorkerTaskSerializer
from boxes import services as boxes
from consensus.models import Question, QuestionKind
from gold.items import GoldSpec, gold_items_create
from gold.models import GoldItem
from hierarchy.fixture import parse_fixture
from hierarchy.graph import graph_cache_clear, graph_for
from hierarchy.models import QuestionNode
from hierarchy.services import hierarchy_load
from multilabel import asking
from multilabel.labeling import labeling_start, order_cache_clear
from multilabel.models import ImageLabeling
from tests import factories
from tests.annotation import boxhelpers
from tests.hierarchy.conftest import tiny_data

from .conftest import make_images, make_workers, small_qualification

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_caches():
    graph_cache_clear()
    order_cache_clear()
    yield
    graph_cache_clear()
    order_cache_clear()


def shown(task: Task) -> dict:
    return WorkerTaskSerializer().to_representation(Task.objects.get(pk=task.pk))["payload"]


def serve_gold(dataset, kind, concept, image, box=None) -> Task:
    """Serve one gold item of (kind, concept) to a fresh worker through the queue (as the first and only item
    of a qualification set, so it is served on the first lease) and return its task."""
    gold_items_create(
        dataset=dataset, specs=[GoldSpec(kind=kind, concept=concept, image=image, box=box, answer=True)]
    )
    small_qualification(dataset, qualification_size=1, qualification_pass=1)
    (w,) = make_workers(1, prefix="gold")
    a = queue.task_lease_next(worker=w, kinds_wanted=["question"])
    assert a is not None and GoldItem.objects.filter(task_id=a.task_id).exists()
    return a.task


def test_gold_hierarchy_question_is_worded_and_keyed_like_the_hierarchys_own_question(dataset):
    hierarchy = hierarchy_load(parse_fixture(tiny_data())).hierarchy
    images = make_images(dataset, 3)
    labeling_start(dataset=dataset, hierarchy=hierarchy, images=images[:2])
    animal = QuestionNode.objects.get(hierarchy=hierarchy, node_id="q:animal").concept
    real = Question.objects.filter(kind=QuestionKind.HIERARCHY, concept=animal, task__isnull=False).first()
    gold = serve_gold(dataset, QuestionKind.HIERARCHY, animal, images[2])
    assert shown(gold) == shown(real.task), "same wording, same concept, same keys"
    assert shown(gold)["question"] == "Is there ANY animal in this image?"


def test_gold_leaf_question_is_worded_as_the_hierarchy_asks_the_leaf(dataset):
    hierarchy = hierarchy_load(parse_fixture(tiny_data())).hierarchy
    images = make_images(dataset, 3)
    labeling_start(dataset=dataset, hierarchy=hierarchy, images=images[:1])
    labeling = ImageLabeling.objects.get()
    asking.questions_open(graph_for(hierarchy), [(labeling, "n02084071")], priority=50)
    dog = QuestionNode.objects.get(hierarchy=hierarchy, node_id="n02084071").concept
    real = Question.objects.get(kind=QuestionKind.IMAGE_VERIFY, concept=dog)
    gold = serve_gold(dataset, QuestionKind.IMAGE_VERIFY, dog, images[2])
    assert shown(gold) == shown(real.task)
    assert shown(gold)["question"] == "Is there ANY dog in this image?"


def test_gold_box_quality_item_has_the_box_pipelines_wording_and_payload_keys(dataset):
    concept = factories.ConceptFactory(wnid="n02123045", name="tabby cat")
    image, other = boxhelpers.image(dataset), boxhelpers.image(dataset)
    boxes.box_job_start(image=image, concept=concept)
    (drawer,) = boxhelpers.workers(1, prefix="drawer")
    boxhelpers.answer(drawer, boxes.DRAW_KIND, {"box": [10, 10, 200, 200]})
    real = Question.objects.get(kind=QuestionKind.BOX_QUALITY)
    judged = Box.objects.create(
        image=other, concept=concept, x1=5, y1=5, x2=90, y2=90, state=BoxState.ACCEPTED
    )
    Box.objects.create(image=other, concept=concept, x1=300, y1=200, x2=400, y2=300, state=BoxState.ACCEPTED)
    gold = serve_gold(dataset, QuestionKind.BOX_QUALITY, concept, other, box=judged)
    real_payload, gold_payload = shown(real.task), shown(gold)
    assert sorted(gold_payload) == sorted(real_payload) == ["box", "boxes", "concept", "question"]
    assert gold_payload["question"] == real_payload["question"]
    assert len(gold_payload["boxes"]) == 1, "the other accepted box of the image, as a real question shows"
