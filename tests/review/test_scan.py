"""The overlap scan on the database: which items it queues, and that rescans only re-check what changed."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import IntegrityError, transaction

from annotation.models import Box, BoxState
from review import decisions, leasing, scan, selectors, tasks
from review.models import ConfusablePair, Decision, ItemState, OverlapCheck, ReviewItem, ReviewKind
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def concepts():
    names = ("dog", "cat", "seal", "sea otter")
    return {name: factories.ConceptFactory(name=name) for name in names}


def image(dataset):
    return factories.ImageFactory(dataset=dataset, width=100, height=100)


def items(dataset):
    return {
        (i.box_a_id, i.box_b_id, i.kind, i.confusable)
        for i in ReviewItem.objects.filter(dataset=dataset, state=ItemState.OPEN)
    }


def test_scan_queues_duplicates_cross_class_and_confusable_pairs_only(dataset, concepts, make_box):
    c = concepts
    ConfusablePair.objects.create(dataset=dataset, concept_a=c["sea otter"], concept_b=c["seal"])
    img1, img2, img3, img4, img5 = (image(dataset) for _ in range(5))
    a = make_box(img1, c["dog"], 0, 0, 50, 50)
    b = make_box(img1, c["dog"], 2, 2, 52, 52)  # IoU 0.85 with a
    cat = make_box(img2, c["cat"], 10, 10, 60, 60)
    dog = make_box(img2, c["dog"], 10, 10, 60, 58)  # IoU 0.96 with the cat
    seal = make_box(img3, c["seal"], 0, 0, 40, 40)
    otter = make_box(img3, c["sea otter"], 0, 0, 40, 16)  # IoU 0.4: only a confusable pair is queued
    make_box(img4, c["dog"], 0, 0, 10, 10)
    make_box(img4, c["dog"], 10, 0, 20, 10)  # touching, no overlap
    make_box(img5, c["cat"], 0, 0, 40, 40)
    make_box(img5, c["dog"], 0, 0, 40, 16)  # IoU 0.4, not a confusable pair
    make_box(img1, c["dog"], 1, 1, 51, 51, state=BoxState.PENDING)  # not accepted yet: ignored

    report = scan.overlaps_scan(dataset)

    assert report.finished and report.items_created == 3
    assert items(dataset) == {
        (a.pk, b.pk, ReviewKind.DUPLICATE, False),
        (cat.pk, dog.pk, ReviewKind.CROSS_CLASS, False),
        (min(seal.pk, otter.pk), max(seal.pk, otter.pk), ReviewKind.CROSS_CLASS, True),
    }
    duplicate = ReviewItem.objects.get(kind=ReviewKind.DUPLICATE)
    assert duplicate.iou == pytest.approx(2304 / 2696)
    assert duplicate.priority == 85


def test_another_datasets_confusable_pair_does_not_apply_to_this_scan(dataset, concepts, make_box):
    """Pairs are per dataset: another organizer's pair of the same classes queues nothing here."""
    c = concepts
    ConfusablePair.objects.create(
        dataset=factories.DatasetFactory(), concept_a=c["seal"], concept_b=c["sea otter"]
    )
    img = image(dataset)
    make_box(img, c["seal"], 0, 0, 40, 40)
    make_box(img, c["sea otter"], 0, 0, 40, 16)  # IoU 0.4: queued only for a pair of this dataset's
    assert scan.overlaps_scan(dataset).items_created == 0


def test_rescan_with_nothing_new_checks_no_box_and_queues_nothing(dataset, concepts, make_box):
    img = image(dataset)
    make_box(img, concepts["dog"], 0, 0, 50, 50)
    make_box(img, concepts["dog"], 1, 1, 50, 50)
    first = scan.overlaps_scan(dataset)
    second = scan.overlaps_scan(dataset)
    assert (first.items_created, first.boxes_checked) == (1, 2)
    assert (second.items_created, second.boxes_checked, second.images_scanned) == (0, 0, 0)
    assert ReviewItem.objects.count() == 1


def test_rescan_checks_only_new_boxes_and_their_images(dataset, concepts, make_box):
    imgs = [image(dataset) for _ in range(4)]
    for img in imgs:
        make_box(img, concepts["dog"], 0, 0, 50, 50)
        make_box(img, concepts["cat"], 60, 60, 90, 90)
    scan.overlaps_scan(dataset)
    new = make_box(imgs[2], concepts["dog"], 0, 0, 50, 49)

    report = scan.overlaps_scan(dataset)

    assert (report.boxes_checked, report.images_scanned, report.items_created) == (1, 1, 1)
    assert ReviewItem.objects.get().box_b_id == new.pk


def test_a_box_pending_during_a_scan_is_checked_once_it_is_accepted(dataset, concepts, make_box):
    img = image(dataset)
    first = make_box(img, concepts["dog"], 0, 0, 50, 50)
    late = make_box(img, concepts["dog"], 0, 0, 50, 48, state=BoxState.PENDING)
    later = make_box(image(dataset), concepts["cat"], 0, 0, 10, 10)  # accepted after the pending one
    scan.overlaps_scan(dataset)
    assert set(OverlapCheck.objects.values_list("box_id", flat=True)) == {first.pk, later.pk}
    assert not ReviewItem.objects.exists()

    Box.objects.filter(pk=late.pk).update(state=BoxState.ACCEPTED)
    report = scan.overlaps_scan(dataset)

    assert (report.boxes_checked, report.items_created) == (1, 1)
    assert OverlapCheck.objects.count() == 3


def test_an_interrupted_scan_leaves_its_checks_and_the_next_does_the_rest(dataset, concepts, make_box):
    for _ in range(5):
        img = image(dataset)
        make_box(img, concepts["dog"], 0, 0, 50, 50)
        make_box(img, concepts["dog"], 0, 0, 50, 45)
    first = scan.overlaps_scan(dataset, chunk_images=2, max_chunks=1)
    assert not first.finished and ReviewItem.objects.count() == 2
    assert OverlapCheck.objects.count() == 4

    second = scan.overlaps_scan(dataset, chunk_images=2)

    assert second.finished
    assert second.images_scanned == 3, "the two images of the first chunk are not scanned again"
    assert ReviewItem.objects.count() == 5


def test_decided_pair_is_not_queued_again_but_a_relabel_queues_the_new_pair(
    dataset, concepts, make_box, reviewer
):
    img = image(dataset)
    cat = make_box(img, concepts["cat"], 0, 0, 50, 50)
    dog = make_box(img, concepts["dog"], 0, 0, 50, 48)
    scan.overlaps_scan(dataset)
    item = leasing.review_lease_next(reviewer=reviewer)
    decisions.review_decide(item=item, reviewer=reviewer, decision=Decision.RELABEL_B)  # dog -> cat
    assert not OverlapCheck.objects.filter(box=dog).exists(), "the relabelled box is examined again"
    assert dog not in selectors.finalized_boxes(dataset)

    report = scan.overlaps_scan(dataset)

    assert report.boxes_checked == 1 and OverlapCheck.objects.filter(box=dog).exists()
    assert ReviewItem.objects.get(pk=item.pk).state == ItemState.DECIDED
    assert items(dataset) == {(cat.pk, dog.pk, ReviewKind.DUPLICATE, False)}


def test_scan_dismisses_open_items_whose_box_left_the_accepted_set(dataset, concepts, make_box):
    img = image(dataset)
    a = make_box(img, concepts["dog"], 0, 0, 50, 50)
    make_box(img, concepts["dog"], 0, 0, 50, 49)
    scan.overlaps_scan(dataset)
    Box.objects.filter(pk=a.pk).update(state=BoxState.REJECTED)

    report = scan.overlaps_scan(dataset)

    assert report.items_dismissed == 1
    assert ReviewItem.objects.get().state == ItemState.DISMISSED


def test_finalized_boxes_exclude_open_items_and_unscanned_boxes(dataset, concepts, make_box, reviewer):
    img = image(dataset)
    a = make_box(img, concepts["dog"], 0, 0, 50, 50)
    b = make_box(img, concepts["dog"], 0, 0, 50, 49)
    alone = make_box(image(dataset), concepts["cat"], 0, 0, 10, 10)
    assert list(selectors.finalized_boxes(dataset)) == [], "nothing is final before a scan"
    scan.overlaps_scan(dataset)
    assert list(selectors.finalized_boxes(dataset)) == [alone]
    assert set(selectors.finalized_boxes(dataset, include_open=True)) == {a, b, alone}

    item = leasing.review_lease_next(reviewer=reviewer)
    decisions.review_decide(item=item, reviewer=reviewer, decision=Decision.DUPLICATE_KEEP_A)

    assert set(selectors.finalized_boxes(dataset)) == {a, alone}


def test_zero_area_boxes_are_refused_by_the_database(dataset, concepts):
    img = image(dataset)
    for coords in [(10, 10, 10, 20), (10, 10, 20, 10), (10, 10, 5, 20)]:
        with pytest.raises(IntegrityError), transaction.atomic():
            Box.objects.create(
                image=img, concept=concepts["dog"], x1=coords[0], y1=coords[1], x2=coords[2], y2=coords[3]
            )
    assert not Box.objects.exists()


def test_scan_task_and_command_run_the_scan(dataset, concepts, make_box):
    img = image(dataset)
    make_box(img, concepts["dog"], 0, 0, 50, 50)
    make_box(img, concepts["dog"], 0, 0, 50, 49)
    result = tasks.overlaps_scan.delay(dataset.pk).get()
    assert result["items_created"] == 1 and result["finished"]
    assert tasks.overlaps_scan.delay(dataset.pk).get()["items_created"] == 0, "a retry changes nothing"

    out = StringIO()
    call_command("scan_overlaps", "--dataset", dataset.name, stdout=out)
    assert "0 new or changed boxes" in out.getvalue()
    with pytest.raises(CommandError, match="no dataset named"):
        call_command("scan_overlaps", "--dataset", "nope")
