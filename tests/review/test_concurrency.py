"""Review decisions under real concurrency on PostgreSQL: one lease per item, one decision per item."""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import transaction

from annotation.models import Box, BoxState, Dataset, FinalBox, Image
from hierarchy.models import Concept
from review import decisions, errors, leasing, scan
from review.models import Decision, ItemState, ReviewDecision, ReviewItem
from tests import factories
from tests.threads import in_thread

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

THREADS = 8


def _pairs(n_images: int, boxes_per_image: int = 2) -> Dataset:
    """n_images images, each with `boxes_per_image` mutually overlapping dog boxes, scanned."""
    dog = Concept.objects.create(wnid="n02084071", name="dog")
    dataset = Dataset.objects.create(name="review-concurrency")
    images = Image.objects.bulk_create(
        Image(dataset=dataset, file=f"x/{i}.png", width=100, height=100, sha256=f"{i:064x}", phash="0" * 16)
        for i in range(n_images)
    )
    Box.objects.bulk_create(
        Box(image=image, concept=dog, x1=0, y1=0, x2=50, y2=50 - k, state=BoxState.ACCEPTED)
        for image in images
        for k in range(boxes_per_image)
    )
    scan.overlaps_scan(dataset)
    return dataset


def test_reviewers_draining_the_queue_decide_every_item_exactly_once():
    _pairs(120)
    reviewers = [factories.user_with_roles(f"r{i}", ("reviewers",)) for i in range(THREADS)]
    start = threading.Barrier(THREADS)

    @in_thread
    def drain(reviewer) -> list[int]:
        decided = []
        start.wait()
        while (item := leasing.review_lease_next(reviewer=reviewer)) is not None:
            decisions.review_decide(item=item, reviewer=reviewer, decision=Decision.DISTINCT)
            decided.append(item.pk)
        return decided

    with ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(drain, reviewers))

    counts = Counter(pk for decided in results for pk in decided)
    assert len(counts) == 120 and max(counts.values()) == 1
    assert sum(1 for decided in results if decided) > 1, "the work was shared"
    assert ReviewDecision.objects.count() == 120
    assert ReviewItem.objects.filter(state=ItemState.DECIDED).count() == 120


def test_simultaneous_decides_of_one_item_store_one_decision():
    _pairs(1)
    reviewer = factories.user_with_roles("solo", ("reviewers",))
    item = leasing.review_lease_next(reviewer=reviewer)
    start = threading.Barrier(THREADS)

    @in_thread
    def decide(_):
        start.wait()
        try:
            decisions.review_decide(item=item, reviewer=reviewer, decision=Decision.DUPLICATE_KEEP_A)
            return "ok"
        except errors.AlreadyDecided:
            return "conflict"

    with ThreadPoolExecutor(THREADS) as pool:
        outcomes = Counter(pool.map(decide, range(THREADS)))

    assert outcomes == {"ok": 1, "conflict": THREADS - 1}
    assert ReviewDecision.objects.count() == 1


def test_two_reviewers_removing_the_same_box_from_different_pairs_never_deadlock():
    # Three overlapping boxes per image: items (a,b), (a,c), (b,c). Two reviewers each hold one item of the
    # same image that removes box a; exactly one of them can succeed.
    _pairs(20, boxes_per_image=3)
    first, second = (factories.user_with_roles(f"rm{i}", ("reviewers",)) for i in range(2))
    jobs = []
    for image in Image.objects.order_by("id"):
        a, b, c = Box.objects.filter(image=image).order_by("id")
        ab = ReviewItem.objects.get(box_a=a, box_b=b)
        ac = ReviewItem.objects.get(box_a=a, box_b=c)
        for item, reviewer in ((ab, first), (ac, second)):
            ReviewItem.objects.filter(pk=item.pk).update(
                state=ItemState.LEASED, leased_to=reviewer, lease_expires_at="2100-01-01T00:00:00Z"
            )
        jobs.append((ab, ac, a))

    @in_thread
    def decide(args):
        item, reviewer, barrier = args
        barrier.wait()
        try:
            decisions.review_decide(item=item, reviewer=reviewer, decision=Decision.DUPLICATE_KEEP_B)
            return "ok"
        except errors.ReviewError:
            return "conflict"

    with ThreadPoolExecutor(2) as pool:
        for ab, ac, _ in jobs:
            barrier = threading.Barrier(2)
            outcomes = sorted(pool.map(decide, [(ab, first, barrier), (ac, second, barrier)]))
            assert outcomes == ["conflict", "ok"]

    for ab, ac, a in jobs:
        assert Box.objects.get(pk=a.pk).state == BoxState.REMOVED
        assert ReviewDecision.objects.filter(item__in=[ab, ac]).count() == 1


def test_boxes_accepted_concurrently_on_one_image_have_every_overlap_examined():
    """Each thread accepts one box of an image and commits; its overlap check runs on commit. However the
    commits and checks interleave, every overlapping pair is queued, every box is checked once, and the final
    boxes are exactly those the gate lets through (issue 31: finality without a settle window)."""
    from review import scan, selectors
    from review.models import OverlapCheck, ReviewKind

    dog = Concept.objects.create(wnid="n02084071", name="dog")
    cat = Concept.objects.create(wnid="n02121808", name="cat")
    dataset = Dataset.objects.create(name="finality-concurrency")
    rounds = 6
    images = Image.objects.bulk_create(
        Image(dataset=dataset, file=f"f/{i}.png", width=300, height=100, sha256=f"{i:064x}", phash="0" * 16)
        for i in range(rounds)
    )
    # Per image: four mutually overlapping dog boxes (six duplicate pairs) and four cats apart from all.
    pending = []
    for img in images:
        pending.append(
            Box.objects.bulk_create(
                [
                    *(
                        Box(image=img, concept=dog, x1=0, y1=0, x2=50, y2=50 - k, state=BoxState.PENDING)
                        for k in range(4)
                    ),
                    *(
                        Box(image=img, concept=cat, x1=60 + 60 * k, y1=0, x2=100 + 60 * k, y2=40)
                        for k in range(4)
                    ),
                ]
            )
        )
    for group in pending:
        Box.objects.filter(pk__in=[b.pk for b in group]).update(state=BoxState.PENDING)

    @in_thread
    def accept(args) -> None:
        box, barrier = args
        barrier.wait()
        with transaction.atomic():
            Box.objects.filter(pk=box.pk).update(state=BoxState.ACCEPTED)
            scan.overlaps_check_soon(dataset.pk, [box.image_id])

    for group in pending:
        barrier = threading.Barrier(len(group))
        with ThreadPoolExecutor(len(group)) as pool:
            list(pool.map(accept, [(box, barrier) for box in group]))

    assert scan.datasets_to_scan() == [], "every accepted box was checked on commit"
    assert OverlapCheck.objects.count() == 8 * rounds
    duplicates = ReviewItem.objects.filter(kind=ReviewKind.DUPLICATE, state=ItemState.OPEN)
    assert duplicates.count() == 6 * rounds
    final = set(selectors.finalized_boxes(dataset).values_list("id", flat=True))
    assert final == set(Box.objects.filter(concept=cat).values_list("id", flat=True))
    assert set(FinalBox.objects.values_list("box_id", flat=True)) == final
