"""Quality figures known by hand: decided questions (one decided by a reviewer, one waiting for one), gold items
(one promoted, one about a box), worker scores, gold answers and calibration tables of one dataset, beside
another dataset's work that must never count."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from annotation.counters import counters_recount
from annotation.models import Assignment, AssignmentState, Box
from consensus.calibration import build_table
from consensus.models import (
    CalibrationTable,
    Estimator,
    Question,
    QuestionDecision,
    QuestionRole,
    QuestionState,
    Verdict,
)
from gold.models import GoldAnswer, GoldItem, GoldServing, GoldSource, Purpose, ScoreKind, WorkerScore
from tests import factories


def question(dataset, concept, image, state, yes, no, box=None, kind="image_verify"):
    return Question.objects.create(
        kind=kind,
        dataset=dataset,
        concept=concept,
        image=image,
        box=box,
        role=QuestionRole.PRODUCTION,
        state=state,
        yes_count=yes,
        no_count=no,
    )


def gold(dataset, concept, image, answer, box=None, kind="image_verify", source=GoldSource.ORGANIZER):
    return GoldItem.objects.create(
        dataset=dataset, kind=kind, concept=concept, image=image, box=box, answer=answer, source=source
    )


def gold_answer(item, worker, correct):
    task = factories.TaskFactory(
        dataset=item.dataset, image=item.image, concept=item.concept, kind="question"
    )
    now = timezone.now()
    assignment = Assignment.objects.create(
        task=task,
        worker=worker,
        state=AssignmentState.SUBMITTED,
        expires_at=now + timedelta(minutes=5),
        submitted_at=now,
    )
    serving = GoldServing.objects.create(item=item, worker=worker, task=task, purpose=Purpose.EMBEDDED)
    GoldAnswer.objects.create(
        serving=serving,
        assignment=assignment,
        worker=worker,
        dataset=item.dataset,
        kind=item.kind,
        correct=correct,
    )


def quality_scene(dataset, other_dataset):
    """A dataset whose quality figures are known by hand (see test_quality_api), beside another dataset's work."""
    dog = factories.ConceptFactory(wnid="n02084071", name="dog")
    cat = factories.ConceptFactory(wnid="n02121808", name="cat")
    images = factories.ImageFactory.create_batch(9, dataset=dataset)
    # Dogs: decided in 3 votes each; gold agrees with 2 of the 3 accepted and the rejected one.
    for image, answer in zip(images[:3], [True, True, False], strict=True):
        question(dataset, dog, image, QuestionState.ACCEPTED, 3, 0)
        gold(dataset, dog, image, answer)
    question(dataset, dog, images[3], QuestionState.REJECTED, 0, 3)
    gold(dataset, dog, images[3], False)
    # A promoted item agrees by construction: it is left out of the estimate.
    question(dataset, dog, images[4], QuestionState.ACCEPTED, 3, 0)
    gold(dataset, dog, images[4], True, source=GoldSource.PROMOTED)
    # Cats are hard: 9 votes a question, one of two sent to review.
    question(dataset, cat, images[5], QuestionState.ACCEPTED, 7, 2)
    question(dataset, cat, images[6], QuestionState.REVIEW, 5, 4)
    # A box question matches its gold item by box, not by image alone.
    box = Box.objects.create(image=images[7], concept=dog, x1=0, y1=0, x2=5, y2=5)
    question(dataset, dog, images[7], QuestionState.ACCEPTED, 2, 0, box=box, kind="box_quality")
    gold(dataset, dog, images[7], True, box=box, kind="box_quality")
    # A dog the vote cap sent to review and a reviewer accepted (3 votes, like every dog question).
    reviewer = factories.user_with_roles("rita", ("reviewers",))
    reviewed = question(dataset, dog, images[8], QuestionState.ACCEPTED, 2, 1)
    for verdict, by in ((Verdict.REVIEW, None), (Verdict.ACCEPT, reviewer)):
        QuestionDecision.objects.create(
            question=reviewed,
            decision=verdict,
            yes_count=2,
            no_count=1,
            estimator=Estimator.DYNAMIC,
            reviewer=by,
        )
    # Another dataset's work never counts here.
    other_image = factories.ImageFactory(dataset=other_dataset)
    question(other_dataset, dog, other_image, QuestionState.ACCEPTED, 20, 0)
    other_reviewed = question(other_dataset, cat, other_image, QuestionState.ACCEPTED, 6, 6)
    QuestionDecision.objects.create(
        question=other_reviewed,
        decision=Verdict.ACCEPT,
        yes_count=6,
        no_count=6,
        estimator=Estimator.DYNAMIC,
        reviewer=reviewer,
    )
    gold(other_dataset, dog, other_image, False)
    workers = [factories.user_with_roles(f"w{i}", ("workers",)).worker for i in range(3)]
    for worker, mean in zip(workers, [0.95, 0.62, 1.0], strict=True):
        WorkerScore.objects.create(
            worker=worker,
            dataset=dataset,
            kind=ScoreKind.ALL,
            answered=10,
            correct=8,
            mean=mean,
            lower=0.5,
            p_below=0.1,
        )
    WorkerScore.objects.create(
        worker=workers[0],
        dataset=other_dataset,
        kind=ScoreKind.ALL,
        answered=3,
        correct=0,
        mean=0.1,
        lower=0.0,
        p_below=0.9,
    )
    item = GoldItem.objects.filter(dataset=dataset).first()
    gold_answer(item, workers[0], True)
    gold_answer(item, workers[1], False)
    table = build_table([[True, True, False], [False, False, True], [True, True, True]])
    for n in range(2):
        CalibrationTable.objects.create(
            kind="image_verify",
            concept=dog,
            table=table.to_dict(),
            n_images=3,
            n_votes=9,
            method=table.method,
            last_vote_id=n,
        )
    CalibrationTable.objects.create(
        kind="hierarchy",
        concept=cat,
        table=table.to_dict(),
        n_images=3,
        n_votes=9,
        method=table.method,
        last_vote_id=0,
    )  # no hierarchy question about cats here: not listed
    # The questions were made around consensus's services, so their tally is counted from them.
    counters_recount(dataset.pk)
    counters_recount(other_dataset.pk)
    return dataset
