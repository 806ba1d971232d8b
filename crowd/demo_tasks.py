"""The demo's tasks beyond votes and boxes to draw (`load_demo`): image verification, hierarchy questions, and a
box pipeline that a small scripted demo crowd works through the queue, as workers would, until a coverage
question waits for the demo worker and a duplicate pair of boxes waits for the demo reviewer. Each stage is
idempotent: run again, it finds its work done and adds nothing."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from django.contrib.auth import get_user_model

from annotation import queue
from annotation.imagerefs import image_ref
from annotation.models import Box, BoxState, Dataset, Image, TaskState
from boxes import services as boxes
from config.roles import WORKERS
from consensus import verification
from consensus.models import ConsensusSettings, Question, QuestionKind
from crowd.services import user_create
from hierarchy.fixture import parse_fixture
from hierarchy.services import hierarchy_load
from multilabel.labeling import labeling_start
from multilabel.models import QuestionEngine
from review import scan
from review.models import ReviewItem

# Small enough for a demo crowd: 4 calibration questions of 3 votes each, then at most 5 votes a question.
DEMO_CONSENSUS = dict(calibration_min=4, calibration_max=4, calibration_votes=3, vote_cap=5)
# The scripted crowd: accounts nobody signs in with (random passwords), answering only the boxes dataset.
CROWD = [f"crowd{i}" for i in range(1, 7)]
BOXES_DATASET = "demo-boxes"


def _node(node_id, name, gloss, question, parents=(), leaf=False):
    return {
        "id": node_id,
        "name": name,
        "gloss": gloss,
        "question": question,
        "parents": list(parents),
        "leaf": leaf,
    }


def demo_hierarchy(concepts: list[dict]) -> dict:
    """The demo concepts as a question hierarchy: "Is there ANY animal?" above dog and domestic cat, "Is there
    ANY wheeled vehicle?" above car (the same names and glosses as the demo's concepts)."""
    by_id = {c["wnid"]: c for c in concepts}

    def node(wnid, question, leaf=False):
        c = by_id[wnid]
        return _node(wnid, c["name"], c["gloss"], question, c["parents"], leaf)

    return {
        "format": "crowdlabel-hierarchy/1",
        "name": "demo",
        "version": "1",
        "description": "The demo's five concepts",
        "nodes": [
            node("n00015388", "Is there ANY animal in this image?"),
            node("n04576211", "Is there ANY wheeled vehicle in this image?"),
            node("n02084071", "Is there a dog in this image?", leaf=True),
            node("n02121808", "Is there a domestic cat in this image?", leaf=True),
            node("n02958343", "Is there a car in this image?", leaf=True),
        ],
    }


def verification_start(dataset: Dataset, concept) -> int:
    """'Does this image show a domestic cat?' on every demo image (the first few collect calibration votes)."""
    ConsensusSettings.objects.get_or_create(dataset=dataset, defaults=DEMO_CONSENSUS)
    plan = verification.verification_queue(dataset=dataset, concept=concept)
    return plan.created


def hierarchy_ensure(concepts: list[dict]):
    """The demo's question hierarchy, loaded (again: a reload of the same file changes nothing)."""
    return hierarchy_load(parse_fixture(demo_hierarchy(concepts))).hierarchy


def hierarchy_start(dataset: Dataset, concepts: list[dict], images: list[Image]) -> int:
    """Hierarchy questions on a few images, asked one at a time per image by the question DAG (Algorithm 1)."""
    hierarchy = hierarchy_ensure(concepts)
    return labeling_start(
        dataset=dataset, hierarchy=hierarchy, images=images, engine=QuestionEngine.VOTE
    ).created


@dataclass
class CrowdReport:
    answers: int = 0
    accepted_boxes: int = 0
    review_items: int = 0


def _crowd() -> list:
    User = get_user_model()
    workers = []
    for username in CROWD:
        user = User.objects.filter(username=username).first()
        if user is None:
            user = user_create(username=username, password=secrets.token_urlsafe(24), roles=(WORKERS,))
        workers.append(user.worker)
    return workers


def _drawn_box(image: Image, accepted: int) -> list[float]:
    """The first box, then one nearly on top of it: the second is the duplicate the review page shows."""
    w, h = image.width, image.height
    if accepted == 0:
        return [w * 0.25, h * 0.2, w * 0.7, h * 0.8]
    return [w * 0.27, h * 0.21, w * 0.71, h * 0.79]


def crowd_boxes(dataset: Dataset, concept, image: Image, max_answers: int = 200) -> CrowdReport:
    """Drive one box job through the queue with the demo crowd: draw a box, accept it, say "not every one is
    boxed", draw a second box on the same object, accept it; then stop, leaving the coverage question open
    for the demo worker, and scan for overlaps so the duplicate pair becomes a review item. A job already
    driven this far is left as it is."""
    ConsensusSettings.objects.get_or_create(dataset=dataset, defaults=DEMO_CONSENSUS)
    boxes.box_jobs_start(dataset=dataset, concept=concept, images=[image])
    report = CrowdReport()
    crowd = _crowd()
    kinds = [boxes.DRAW_KIND, "question"]
    idle = turn = 0
    while report.answers < max_answers and idle < len(crowd):
        report.accepted_boxes = Box.objects.filter(image=image, state=BoxState.ACCEPTED).count()
        worker = crowd[turn % len(crowd)]
        turn += 1
        lease = queue.task_lease_next(worker=worker, kinds_wanted=kinds, dataset_id=dataset.pk)
        if lease is None:
            idle += 1  # this one has answered everything open (or drew the box asked about)
            continue
        idle = 0
        task = lease.task
        coverage = task.kind == "question" and task.question.kind == QuestionKind.BOX_COVERAGE
        if coverage and report.accepted_boxes >= 2:
            queue.assignment_release(assignment=lease)  # the demo worker's to answer
            break
        if task.kind == boxes.DRAW_KIND:
            answer = {"box": _drawn_box(task.image, report.accepted_boxes), "image": image_ref(task.image_id)}
        else:
            answer = {"answer": not coverage}  # the boxes are tight; one object is not boxed yet
        queue.assignment_submit(assignment=lease, answer=answer, idempotency_key=f"demo-{lease.pk}")
        report.answers += 1
    report.accepted_boxes = Box.objects.filter(image=image, state=BoxState.ACCEPTED).count()
    scan.overlaps_scan(dataset)
    report.review_items = ReviewItem.objects.filter(dataset=dataset).count()
    return report


def boxes_dataset(organizers) -> tuple[Dataset, bool]:
    dataset, created = Dataset.objects.get_or_create(
        name=BOXES_DATASET, defaults={"description": "A box job the demo crowd has worked on"}
    )
    dataset.organizers.add(*organizers)
    return dataset, created


def coverage_waiting(dataset: Dataset) -> bool:
    return Question.objects.filter(
        dataset=dataset, kind=QuestionKind.BOX_COVERAGE, task__state=TaskState.OPEN
    ).exists()
