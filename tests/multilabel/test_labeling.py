"""Algorithm 1 in the database: starting, answering through the queue, propagation with provenance, resuming
after a restart, and the leaf-yes announcements the box pipeline subscribes to."""

from __future__ import annotations

import pytest

from annotation import queue
from annotation.models import BoxJob, Task, TaskState
from consensus import stopping
from hierarchy.graph import graph_cache_clear
from hierarchy.models import Concept
from multilabel.asking import HIGH_LEVEL, LEAF, TASK_KIND
from multilabel.labeling import LabelingError, labeling_answer, labeling_start, order_cache_clear
from multilabel.models import ImageLabeling, LabelingAnswer, LabelingStatus, LeafLabel
from tests import factories

DOG, CAT, CAR, PERSON = "n02084071", "n02121808", "n02958343", "n00007846"
LEAVES_UNDER = {
    "q:animal": {DOG, CAT},
    "q:pet": {DOG, CAT},
    "q:vehicle": {CAR},
}


def truth_of(present: set[str]):
    return lambda node: bool(LEAVES_UNDER.get(node, {node}) & present)


def drive(labeling: ImageLabeling, present: set[str], restart_after: int | None = None) -> list[str]:
    """Answer the pending question with the truth until the image is done; returns the asked nodes in order."""
    asked = []
    truth = truth_of(present)
    while True:
        labeling.refresh_from_db()
        if labeling.status == LabelingStatus.DONE:
            return asked
        node = labeling.pending_node
        asked.append(node)
        labeling_answer(labeling_id=labeling.pk, node_id=node, present=truth(node))
        if restart_after is not None and len(asked) == restart_after:
            graph_cache_clear()  # what a restarted process has: nothing but the database
            order_cache_clear()


@pytest.fixture
def images(dataset):
    return [factories.ImageFactory(dataset=dataset) for _ in range(3)]


@pytest.mark.django_db
def test_start_opens_the_first_breadth_first_question_once_per_image(dataset, tiny_hierarchy, images):
    result = labeling_start(dataset=dataset, hierarchy=tiny_hierarchy, engine="vote")
    assert (result.created, result.already) == (3, 0)
    tasks = Task.objects.filter(kind=TASK_KIND)
    assert tasks.count() == 3
    assert {t.payload["node"] for t in tasks} == {"q:animal"}
    assert {t.concept.wnid for t in tasks} == {"q:animal"}
    again = labeling_start(dataset=dataset, hierarchy=tiny_hierarchy, images=images[:2], engine="vote")
    assert (again.created, again.already) == (0, 2)
    assert Task.objects.filter(kind=TASK_KIND).count() == 3


@pytest.mark.django_db
def test_no_on_a_question_labels_everything_below_without_asking(dataset, tiny_hierarchy, images):
    labeling_start(dataset=dataset, hierarchy=tiny_hierarchy, images=images[:1])
    labeling = ImageLabeling.objects.get()
    asked = drive(labeling, present={CAR})
    assert asked == ["q:animal", "q:vehicle", PERSON, CAR]  # pet, dog and cat never asked
    labels = {ll.concept.wnid: ll for ll in LeafLabel.objects.select_related("concept", "via")}
    assert {k for k, v in labels.items() if v.present} == {CAR}
    assert labels[DOG].source == "no_from_ancestor" and labels[DOG].via.node_id == "q:animal"
    assert labels[CAT].via.node_id == "q:animal"
    assert labels[CAR].source == "asked" and labels[CAR].via is None
    assert LabelingAnswer.objects.count() == 4


@pytest.mark.django_db
def test_a_yes_through_a_diamond_decides_both_parents(dataset, tiny_hierarchy, images):
    labeling_start(dataset=dataset, hierarchy=tiny_hierarchy, images=images[:1])
    labeling = ImageLabeling.objects.get()
    drive(labeling, present={DOG, PERSON})
    labeling.refresh_from_db()
    answered = dict(LabelingAnswer.objects.values_list("node__node_id", "present"))
    assert answered["q:animal"] is True and answered[DOG] is True
    assert {ll.concept.wnid for ll in LeafLabel.objects.filter(present=True)} == {DOG, PERSON}
    assert labeling.questions_asked == len(answered)


@pytest.mark.django_db
def test_labeling_resumes_after_a_restart_with_the_same_outcome(dataset, tiny_hierarchy, images):
    labeling_start(dataset=dataset, hierarchy=tiny_hierarchy, images=images[:2])
    first, second = ImageLabeling.objects.order_by("id")
    straight = drive(first, present={CAT, CAR})
    resumed = drive(second, present={CAT, CAR}, restart_after=2)
    assert resumed == straight
    for labeling in (first, second):
        assert {ll.concept.wnid for ll in labeling.leaf_labels.filter(present=True)} == {CAT, CAR}


@pytest.mark.django_db
def test_an_answer_to_a_question_not_asked_is_refused_and_a_repeat_changes_nothing(
    dataset, tiny_hierarchy, images
):
    labeling_start(dataset=dataset, hierarchy=tiny_hierarchy, images=images[:1])
    labeling = ImageLabeling.objects.get()
    with pytest.raises(LabelingError, match="not asked"):
        labeling_answer(labeling_id=labeling.pk, node_id=CAR, present=True)
    labeling_answer(labeling_id=labeling.pk, node_id="q:animal", present=False)
    labeling_answer(labeling_id=labeling.pk, node_id="q:animal", present=True)  # a late duplicate
    labeling.refresh_from_db()
    assert labeling.questions_asked == 1 and labeling.pending_node == "q:vehicle"


@pytest.mark.django_db
def test_finished_image_starts_the_box_jobs_of_its_present_leaves(dataset, tiny_hierarchy, images):
    labeling_start(dataset=dataset, hierarchy=tiny_hierarchy, images=images[:2])
    first, second = ImageLabeling.objects.order_by("id")
    drive(first, present={DOG, CAR})
    drive(second, present=set())
    jobs = BoxJob.objects.select_related("concept")
    assert {(job.image_id, job.concept.wnid) for job in jobs} == {(images[0].pk, DOG), (images[0].pk, CAR)}


@pytest.mark.django_db
def test_correlation_order_run_finishes_with_the_same_labels(dataset, tiny_hierarchy, images):
    for image in images:
        labeling_start(dataset=dataset, hierarchy=tiny_hierarchy, images=[image], order="correlation")
    for labeling in ImageLabeling.objects.order_by("id"):
        drive(labeling, present={DOG, PERSON})
    for labeling in ImageLabeling.objects.all():
        assert {ll.concept.wnid for ll in labeling.leaf_labels.filter(present=True)} == {DOG, PERSON}


def vote_outcome(yes, no, policy):
    """The `vote` engine's answer after these votes: its margin policy, decided by the consensus engine."""
    return stopping.outcome_of(stopping.decide(None, yes, no, policy))


def test_vote_rule_favours_yes_on_high_level_questions():
    assert vote_outcome(2, 0, HIGH_LEVEL) is True
    assert vote_outcome(0, 2, HIGH_LEVEL) is None  # a "no" needs a lead of 3
    assert vote_outcome(0, 3, HIGH_LEVEL) is False
    assert vote_outcome(2, 2, HIGH_LEVEL) is None
    assert vote_outcome(4, 3, HIGH_LEVEL) is True  # at the cap, the majority
    assert vote_outcome(3, 4, HIGH_LEVEL) is False
    assert vote_outcome(2, 0, LEAF) is None and vote_outcome(3, 0, LEAF) is True
    assert vote_outcome(0, 3, LEAF) is False
    assert vote_outcome(4, 4, LEAF) is None and vote_outcome(5, 4, LEAF) is True


@pytest.mark.django_db
def test_votes_through_the_queue_decide_the_question_and_ask_the_next(dataset, tiny_hierarchy, images):
    labeling_start(dataset=dataset, hierarchy=tiny_hierarchy, images=images[:1], engine="vote")
    workers = [factories.user_with_roles(f"w{i}", ("workers",)).worker for i in range(3)]
    for i, (worker, vote) in enumerate(zip(workers, [False, False, False], strict=True)):
        assignment = queue.task_lease_next(worker=worker)
        assert assignment.task.payload["node"] == "q:animal"
        queue.assignment_submit(assignment=assignment, answer={"answer": vote}, idempotency_key=f"k{i}")
    first = Task.objects.filter(kind=TASK_KIND).order_by("id").first()
    assert first.state == TaskState.DONE and first.result["answer"] is False
    answer = LabelingAnswer.objects.get()
    assert (answer.node.node_id, answer.present, answer.no_votes, answer.task_id) == (
        "q:animal",
        False,
        3,
        first.pk,
    )
    pending = Task.objects.get(kind=TASK_KIND, state=TaskState.OPEN)
    assert pending.payload["node"] == "q:vehicle"


def decide(question, verdict: str) -> None:
    """What the consensus engine does when its stopping rule decides: a decision row, then the event."""
    from consensus import events as consensus_events
    from consensus.models import VERDICT_STATE, QuestionDecision

    question.state = VERDICT_STATE[verdict]
    question.save(update_fields=["state"])
    row = QuestionDecision.objects.create(
        question=question,
        decision=verdict,
        yes_count=question.yes_count,
        no_count=question.no_count,
        estimator="dynamic",
    )
    consensus_events.announce(consensus_events.QuestionDecided(question=question, decision=row))


@pytest.mark.django_db
def test_consensus_engine_asks_hierarchy_questions_and_its_decisions_drive_the_labeling(
    dataset, tiny_hierarchy, images
):
    from consensus.models import Question

    labeling_start(dataset=dataset, hierarchy=tiny_hierarchy, images=images[:1])
    labeling = ImageLabeling.objects.get()
    first = Question.objects.get()
    assert (first.kind, first.concept.wnid, first.image_id) == ("hierarchy", "q:animal", images[0].pk)
    assert first.subject["labeling"] == labeling.pk and first.subject["node"] == "q:animal"
    assert first.task.payload["question"] == "Is there ANY animal in this image?"
    decide(first, "reject")
    second = Question.objects.exclude(pk=first.pk).get()
    assert second.concept.wnid == "q:vehicle"
    decide(second, "review")  # ambiguous at the vote cap: the labeling waits for the reviewer
    labeling.refresh_from_db()
    assert dict(labeling.answers.values_list("node__node_id", "present")) == {"q:animal": False}
    assert labeling.pending_node == "q:vehicle"
    review_verdict(second, accept=True)  # the reviewer's verdict arrives as the question's decision
    labeling.refresh_from_db()
    assert dict(labeling.answers.values_list("node__node_id", "present")) == {
        "q:animal": False,
        "q:vehicle": True,
    }
    assert labeling.pending_node == "n00007846"


@pytest.mark.django_db
def test_leaf_questions_are_image_verification_and_reuse_a_decided_one(dataset, tiny_hierarchy, images):
    from consensus.models import Question, QuestionState

    person = Concept.objects.get(wnid=PERSON)
    earlier = Question.objects.create(
        kind="image_verify", dataset=dataset, concept=person, image=images[0], state=QuestionState.ACCEPTED
    )
    labeling_start(dataset=dataset, hierarchy=tiny_hierarchy, images=images[:1])
    labeling = ImageLabeling.objects.get()
    decide(Question.objects.get(concept__wnid="q:animal"), "reject")
    decide(Question.objects.get(concept__wnid="q:vehicle"), "accept")
    car = Question.objects.get(concept__wnid=CAR)  # person was answered from the earlier question, unasked
    assert car.kind == "image_verify" and car.subject["node"] == CAR
    assert Question.objects.filter(concept=person).get() == earlier
    decide(car, "reject")
    labeling.refresh_from_db()
    assert labeling.status == LabelingStatus.DONE
    assert {ll.concept.wnid for ll in labeling.leaf_labels.filter(present=True)} == {PERSON}


def review_verdict(question, accept: bool) -> None:
    """A reviewer takes the question's review item and decides it."""
    from review import decisions, leasing
    from review.models import Decision, ReviewItem

    reviewer = factories.user_with_roles(f"reviewer-{question.pk}", ("reviewers",))
    item = ReviewItem.objects.get(subject={"type": "consensus.question", "id": question.pk})
    leased = leasing.review_lease_next(reviewer=reviewer, dataset_id=question.dataset_id)
    assert leased.pk == item.pk
    decisions.review_decide(
        item=leased, reviewer=reviewer, decision=Decision.ACCEPT if accept else Decision.REJECT
    )


@pytest.mark.django_db
def test_a_question_in_review_answers_a_new_labeling_only_once_the_reviewer_decides(
    dataset, tiny_hierarchy, images
):
    """The reviewer's decision is the one path from review to Algorithm 1: no fallback rule answers it."""
    from consensus.models import Question, QuestionState

    animal = Concept.objects.get(wnid="q:animal")
    earlier = Question.objects.create(
        kind="hierarchy",
        dataset=dataset,
        concept=animal,
        image=images[0],
        state=QuestionState.OPEN,
        yes_count=0,
        no_count=12,
    )
    decide(earlier, "review")  # a margin rule over 0 yes / 12 no would have said "no"
    labeling_start(dataset=dataset, hierarchy=tiny_hierarchy, images=images[:1])
    labeling = ImageLabeling.objects.get()
    assert not labeling.answers.exists() and labeling.pending_node == "q:animal"
    review_verdict(earlier, accept=True)
    labeling.refresh_from_db()
    assert dict(labeling.answers.values_list("node__node_id", "present")) == {"q:animal": True}


def no_votes_on(question, n: int) -> list[int]:
    """`n` workers' "no" on the question, counted on it (what the queue records before the rule decides)."""
    from consensus.models import Vote

    workers = [factories.user_with_roles(f"voter-{question.pk}-{i}", ("workers",)).worker for i in range(n)]
    votes = [Vote.objects.create(question=question, worker=w, answer=False) for w in workers]
    question.no_count = n
    question.save(update_fields=["no_count"])
    return [v.pk for v in votes]


@pytest.mark.django_db
def test_a_no_reopened_by_voided_votes_rewinds_the_finished_image_and_its_new_yes_finds_the_leaf(
    dataset, tiny_hierarchy, images
):
    """A spammer's "no" on a high-level question pruned the dog; once gold finds the spammer and their votes are
    voided the question is open again: the image must wait for it again, not keep the pruned labels."""
    from annotation.models import FinalLabel
    from consensus.models import Question, QuestionState
    from consensus.voiding import votes_void

    labeling_start(dataset=dataset, hierarchy=tiny_hierarchy, images=images[:1])
    labeling = ImageLabeling.objects.get()
    animal = Question.objects.get(concept__wnid="q:animal")
    spam = no_votes_on(animal, 3)
    decide(animal, "reject")
    decide(Question.objects.get(concept__wnid="q:vehicle"), "reject")
    decide(Question.objects.get(concept__wnid=PERSON), "reject")
    labeling.refresh_from_db()
    assert labeling.status == LabelingStatus.DONE
    assert not labeling.leaf_labels.filter(present=True).exists()
    dog = Concept.objects.get(wnid=DOG)
    assert FinalLabel.objects.get(image=images[0], concept=dog).present is False

    report = votes_void(votes=spam, reason="failed gold")
    assert report.reopened == [animal.pk]
    labeling.refresh_from_db()
    assert labeling.status == LabelingStatus.RUNNING and labeling.pending_node == "q:animal"
    assert not labeling.leaf_labels.exists(), "labels resting on the voided answer are withdrawn"
    assert not FinalLabel.objects.filter(image=images[0], concept=dog, present=False).exists()

    animal.refresh_from_db()
    assert animal.state == QuestionState.OPEN
    decide(animal, "accept")  # honest votes come in
    decide(Question.objects.get(concept__wnid="q:pet"), "accept")
    decide(Question.objects.get(concept__wnid=DOG), "accept")
    decide(Question.objects.get(concept__wnid=CAT), "reject")
    labeling.refresh_from_db()
    assert labeling.status == LabelingStatus.DONE
    assert {ll.concept.wnid for ll in labeling.leaf_labels.filter(present=True)} == {DOG}
    assert FinalLabel.objects.get(image=images[0], concept=dog).present is True
    # The questions decided after the reopened one were reused, not asked again.
    assert Question.objects.filter(concept__wnid="q:vehicle").count() == 1


@pytest.mark.django_db
def test_a_verdict_changed_after_the_labeling_moved_on_reanswers_the_labeling(
    dataset, tiny_hierarchy, images
):
    from consensus.models import Question

    labeling_start(dataset=dataset, hierarchy=tiny_hierarchy, images=images[:1])
    labeling = ImageLabeling.objects.get()
    animal = Question.objects.get(concept__wnid="q:animal")
    decide(animal, "reject")
    labeling.refresh_from_db()
    assert labeling.pending_node == "q:vehicle"
    decide(animal, "accept")  # re-decided once a voter's votes were voided
    labeling.refresh_from_db()
    assert dict(labeling.answers.values_list("node__node_id", "present")) == {"q:animal": True}
    assert labeling.pending_node == "q:vehicle"
    decide(Question.objects.get(concept__wnid="q:vehicle"), "reject")
    labeling.refresh_from_db()
    assert labeling.pending_node == PERSON


@pytest.mark.django_db
def test_a_leaf_yes_from_algorithm_1_needs_more_evidence_than_a_plain_verification_yes(
    dataset, tiny_hierarchy, images
):
    """Sibling leaves (cat / dog) are confused by honest workers on the same image, so their errors are not
    independent and the posterior of a leaf "yes" overstates it: a leaf of Algorithm 1 is accepted only at
    LEAF_TARGET_PRECISION, while the same votes accept a plain verification question."""
    from consensus.engine import decision_for
    from consensus.models import ConsensusSettings, Estimator, Question, QuestionState
    from consensus.stopping import Decision
    from multilabel.asking import LEAF_TARGET_PRECISION

    settings = ConsensusSettings.for_dataset(dataset.pk)
    settings.estimator = Estimator.DYNAMIC  # no table, no data: every vote read at the assumed accuracy
    settings.save()
    assert LEAF_TARGET_PRECISION > settings.target_precision
    labeling_start(dataset=dataset, hierarchy=tiny_hierarchy, images=images[:1])
    decide(Question.objects.get(concept__wnid="q:animal"), "reject")
    decide(Question.objects.get(concept__wnid="q:vehicle"), "reject")
    leaf = Question.objects.get(concept__wnid=PERSON)
    plain = Question.objects.create(
        kind="image_verify", dataset=dataset, concept=leaf.concept, image=images[1], state=QuestionState.OPEN
    )
    for question in (leaf, plain):
        question.yes_count, question.no_count = 3, 0
    assert decision_for(plain, settings)[0] == Decision.ACCEPT
    assert decision_for(leaf, settings)[0] == Decision.ASK_MORE
    leaf.yes_count = 4
    assert decision_for(leaf, settings)[0] == Decision.ACCEPT


@pytest.mark.django_db
def test_a_leaf_at_the_vote_cap_settles_against_the_datasets_target_not_the_stricter_leaf_bar(
    dataset, tiny_hierarchy, images
):
    """The leaf bar asks for more votes; at the cap none can come, so a leaf as sure as the dataset's target is
    settled rather than left in review (where its image waits for a reviewer: hostile seed 3, 8 yes / 4 no)."""
    from consensus.engine import decision_for
    from consensus.models import ConsensusSettings, Estimator, Question
    from consensus.stopping import Decision

    settings = ConsensusSettings.for_dataset(dataset.pk)
    settings.estimator = Estimator.DYNAMIC
    settings.vote_cap = settings.calibration_votes = 3
    settings.extension_cap = 0  # the vote cap is the last: no second cap to ask on to
    settings.save()
    labeling_start(dataset=dataset, hierarchy=tiny_hierarchy, images=images[:1])
    decide(Question.objects.get(concept__wnid="q:animal"), "reject")
    decide(Question.objects.get(concept__wnid="q:vehicle"), "reject")
    leaf = Question.objects.get(concept__wnid=PERSON)
    leaf.yes_count, leaf.no_count = 3, 0  # P 0.9986 under the assumed accuracy: past 0.997, short of 0.9995
    assert decision_for(leaf, settings)[0] == Decision.ACCEPT


@pytest.mark.django_db
def test_a_decision_event_that_read_the_labeling_before_a_concurrent_answer_moved_it_on_is_no_error(
    dataset, tiny_hierarchy, images, monkeypatch
):
    """Under a crowd on PostgreSQL the deciding vote's submit answered 500 ("question 'q:animal' was not asked
    for image 16 (pending: q:vehicle)"): the event reads the labelings before taking their locks, and a
    concurrent answer had moved the labeling on. The stale verdict is left for the labeling to reuse."""
    from consensus.models import Question
    from multilabel import asking

    labeling_start(dataset=dataset, hierarchy=tiny_hierarchy, images=images[:1])
    first = Question.objects.get()
    stale = list(asking._labelings_of(first))  # read while q:animal is pending
    ImageLabeling.objects.filter(pk=stale[0][0].pk).update(pending_node="q:vehicle")  # moved on meanwhile
    monkeypatch.setattr(asking, "_labelings_of", lambda question: iter(stale))
    decide(first, "reject")  # no LabelingError reaches the voter
    labeling = ImageLabeling.objects.get()
    assert labeling.pending_node == "q:vehicle" and not labeling.answers.exists()
