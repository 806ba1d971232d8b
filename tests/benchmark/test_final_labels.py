"""Final labels have one owner: what the pipelines decide (Algorithm 1 with its propagated negatives, image
verification, the review gate for boxes) is what the exports publish, and every class of the dataset is named
in them. Driven through the pipelines' own services and read back through the `export` command."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from annotation.models import Box, BoxJob, BoxJobStatus, BoxState
from consensus import engine, verification
from consensus.models import Question, QuestionState, Vote
from hierarchy.fixture import parse_fixture
from hierarchy.graph import graph_cache_clear
from hierarchy.services import hierarchy_load
from multilabel.labeling import labeling_answer, labeling_start, order_cache_clear
from multilabel.models import ImageLabeling, LabelingStatus
from review import decisions, leasing, scan
from review.models import Decision, ReviewKind
from tests import factories
from tests.gold.conftest import make_workers, production_questions
from tests.hierarchy.conftest import tiny_data

pytestmark = pytest.mark.django_db

DOG, CAT, CAR, PERSON = "n02084071", "n02121808", "n02958343", "n00007846"
UNDER = {"q:animal": {DOG, CAT}, "q:pet": {DOG, CAT}, "q:vehicle": {CAR}}


@pytest.fixture(autouse=True)
def _fresh_caches(settings):
    graph_cache_clear()
    order_cache_clear()
    yield
    graph_cache_clear()
    order_cache_clear()


def export(dataset, fmt: str, out: Path) -> Path:
    call_command(
        "export",
        "--dataset",
        dataset.name,
        "--format",
        fmt,
        "--split",
        "all",
        "--out",
        str(out),
        "--no-images",
        "--no-progress",
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    return out


def lines(path: Path) -> dict[str, str]:
    return dict(line.split() for line in path.read_text().splitlines()) if path.exists() else {}


def label_all(dataset, present: set[str]) -> None:
    """Run Algorithm 1 on every image of the dataset, answering each asked question with the truth."""
    hierarchy = hierarchy_load(parse_fixture(tiny_data())).hierarchy
    labeling_start(dataset=dataset, hierarchy=hierarchy)
    for labeling in ImageLabeling.objects.order_by("id"):
        while True:
            labeling.refresh_from_db()
            if labeling.status == LabelingStatus.DONE:
                break
            node = labeling.pending_node
            truth = bool(UNDER.get(node, {node}) & present)
            labeling_answer(labeling_id=labeling.pk, node_id=node, present=truth)
    # The answers above bypass the crowd's questions, which would otherwise stay open (and keep their images
    # out of exports as unfinished): close them as the engine would once the labeling is done.
    Question.objects.filter(dataset=dataset, state__in=[QuestionState.WAITING, QuestionState.OPEN]).update(
        state=QuestionState.UNANSWERED
    )


def test_algorithm_1_negatives_propagated_from_a_no_are_exported_as_verified_absent(dataset, tmp_path):
    image = factories.ImageFactory(dataset=dataset)
    label_all(dataset, present={CAR})  # "no" on q:animal decides dog and cat without asking them
    # The car's box job closed without a box (a reviewer's "close"): the image's labelling is finished, so it
    # is exported (an open job would keep it out) as a partial positive for car.
    assert BoxJob.objects.filter(image=image).update(status=BoxJobStatus.DONE) == 1
    stem = f"{image.pk:012d}"
    voc = export(dataset, "voc", tmp_path / "voc")
    assert lines(voc / "ImageSets/Main/dog_all.txt") == {stem: "-1"}
    assert lines(voc / "ImageSets/Main/cat_all.txt") == {stem: "-1"}
    assert lines(voc / "ImageSets/Main/person_all.txt") == {stem: "-1"}
    assert lines(voc / "ImageSets/Main/car_all.txt") == {stem: "1"}
    ilsvrc = export(dataset, "ilsvrc", tmp_path / "ilsvrc")
    assert lines(ilsvrc / f"ImageSets/DET/all_{DOG}.txt") == {stem: "-1"}
    # Present without a box yet: not scored for car (0) and blacklisted for it, never a negative.
    assert lines(ilsvrc / f"ImageSets/DET/all_{CAR}.txt") == {stem: "0"}
    assert (ilsvrc / "ImageSets/DET/all_blacklist.txt").read_text().split() == [str(image.pk), CAR]


def test_every_class_of_the_dataset_is_in_every_format_even_without_instances(dataset, tmp_path):
    factories.ImageFactory(dataset=dataset)
    label_all(dataset, present={CAR})
    untouched = factories.ConceptFactory(wnid="n09999999", name="zebra")
    verification.verification_queue(dataset=dataset, concept=untouched)  # queued, nothing decided yet
    expected = {DOG, CAT, CAR, PERSON, untouched.wnid}
    coco = export(dataset, "coco", tmp_path / "coco")
    data = json.loads((coco / "annotations/instances_all.json").read_text())
    assert {c["wnid"] for c in data["categories"]} == expected
    for fmt, classes_file, column in (("voc", "classes.txt", 2), ("ilsvrc", "classes.txt", 1)):
        root = export(dataset, fmt, tmp_path / fmt)
        names = {line.split()[column] for line in (root / classes_file).read_text().splitlines()}
        assert names == expected, fmt
    yolo = export(dataset, "yolo", tmp_path / "yolo")
    assert "zebra" in (yolo / "data.yaml").read_text()


def test_only_boxes_through_the_review_gate_are_exported_and_a_removed_duplicate_never(
    dataset, tmp_path, organizer
):
    dog = factories.ConceptFactory(name="dog")
    image = factories.ImageFactory(dataset=dataset, width=100, height=100)
    a = Box.objects.create(image=image, concept=dog, x1=0, y1=0, x2=50, y2=50, state=BoxState.ACCEPTED)
    b = Box.objects.create(image=image, concept=dog, x1=0, y1=0, x2=50, y2=48, state=BoxState.ACCEPTED)

    def exported_box_ids(name: str) -> set[int]:
        data = json.loads(
            (export(dataset, "coco", tmp_path / name) / "annotations/instances_all.json").read_text()
        )
        return {ann["id"] for ann in data["annotations"]}

    assert exported_box_ids("unscanned") == set(), "no scan has looked at these boxes yet"
    scan.overlaps_scan(dataset)
    assert exported_box_ids("pending-review") == set(), "a reviewer has yet to decide the duplicate pair"
    reviewer = factories.user_with_roles("reviewer", ("reviewers",))
    item = leasing.review_lease_next(reviewer=reviewer, kinds=[ReviewKind.DUPLICATE])
    decision = decisions.review_decide(item=item, reviewer=reviewer, decision=Decision.DUPLICATE_KEEP_A)
    assert exported_box_ids("decided") == {a.pk}
    decisions.review_undo(decision=decision, organizer=organizer)
    assert exported_box_ids("undone") == set(), "the undo reopened the pair: neither box is final"
    assert b.pk not in exported_box_ids("again")


def test_voiding_the_votes_that_decided_a_question_withdraws_its_final_label(dataset):
    from annotation.models import FinalLabel
    from consensus.voiding import votes_void

    concept = factories.ConceptFactory(wnid="n02123045", name="tabby cat")
    image = factories.ImageFactory(dataset=dataset)
    (question,) = production_questions(dataset, concept, [image])  # a ready table, no calibration
    for worker in make_workers(3):
        engine.vote_record(question=question, worker=worker, answer=True)
    question.refresh_from_db()
    assert question.state == QuestionState.ACCEPTED
    label = FinalLabel.objects.get(image=image, concept=concept)
    assert (label.present, label.source, label.yes_count) == (True, "consensus", 3)
    votes_void(votes=Vote.objects.filter(question=question).values_list("pk", flat=True)[:2], reason="spam")
    question.refresh_from_db()
    assert question.state == QuestionState.OPEN
    assert not FinalLabel.objects.filter(image=image, concept=concept).exists()


def test_rebuild_command_reproduces_the_final_labels_the_pipelines_wrote(dataset):
    from annotation.models import FinalLabel

    for _ in range(3):
        factories.ImageFactory(dataset=dataset)
    label_all(dataset, present={DOG, PERSON})
    fields = ("image_id", "concept_id", "present", "source")
    live = sorted(FinalLabel.objects.values_list(*fields))
    assert len(live) == 3 * 4 and sum(present for _, _, present, _ in live) == 3 * 2
    out = io.StringIO()
    call_command("final_labels_rebuild", "--dataset", dataset.name, stdout=out)
    assert sorted(FinalLabel.objects.values_list(*fields)) == live
    report = json.loads(out.getvalue())
    assert (report["labels"], report["present"], report["absent"]) == (12, 6, 6)


def test_a_closed_fixed_majority_vote_is_a_final_label_until_a_consensus_decision_outranks_it(dataset):
    from annotation import queue
    from annotation.models import FinalLabel

    concept = factories.ConceptFactory(wnid="n02123045", name="tabby cat")
    image = factories.ImageFactory(dataset=dataset)
    factories.TaskFactory(dataset=dataset, image=image, concept=concept, answers_wanted=1)
    (worker,) = make_workers(1, prefix="v")
    assignment = queue.task_lease_next(worker=worker)
    queue.assignment_submit(assignment=assignment, answer={"answer": True}, idempotency_key="k1")
    label = FinalLabel.objects.get(image=image, concept=concept)
    assert (label.present, label.source, label.yes_count) == (True, "binary_vote", 1)
    (question,) = production_questions(dataset, concept, [image])
    for voter in make_workers(4, prefix="c"):
        engine.vote_record(question=question, worker=voter, answer=False)
        question.refresh_from_db()
        if question.state != QuestionState.OPEN:
            break
    assert question.state == QuestionState.REJECTED
    label.refresh_from_db()
    assert (label.present, label.source, label.no_count) == (False, "consensus", question.no_count)
    assert set(label.evidence) == {"binary_vote", "consensus"}, "the weaker verdict is kept as evidence"
