"""Finality per box: a box is final once accepted, its overlaps checked and no review item about it open,
whatever the other boxes of its dataset are doing (issue 31: a dataset-wide watermark held every later box
back behind one pending box and behind the last minutes of work)."""

from __future__ import annotations

import pytest

from annotation.models import Box, BoxState, FinalBox
from review import decisions, leasing, scan, selectors
from review.models import Decision, ItemState, OverlapCheck, ReviewItem, ReviewKind
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def dog(db):
    return factories.ConceptFactory(name="dog")


@pytest.fixture
def cat(db):
    return factories.ConceptFactory(name="cat")


def image(dataset):
    return factories.ImageFactory(dataset=dataset, width=100, height=100)


def final_ids(dataset) -> set[int]:
    return set(selectors.finalized_boxes(dataset).values_list("id", flat=True))


def test_a_box_whose_quality_vote_never_comes_holds_back_no_other_box(dataset, dog, cat, make_box):
    boxes = [make_box(image(dataset), dog, 0, 0, 40, 40) for _ in range(3)]
    make_box(image(dataset), cat, 0, 0, 30, 30, state=BoxState.PENDING)  # its vote never comes
    boxes += [make_box(image(dataset), cat, 10, 10, 60, 60) for _ in range(3)]  # accepted after it

    scan.overlaps_scan(dataset)

    assert final_ids(dataset) == {b.pk for b in boxes}
    assert set(FinalBox.objects.values_list("box_id", flat=True)) == {b.pk for b in boxes}


def test_boxes_accepted_a_moment_ago_are_final_at_once(dataset, dog, make_box):
    # created_at is now: no settle window keeps the last boxes of a dataset waiting for a later scan
    boxes = [make_box(image(dataset), dog, 0, 0, 40, 40) for _ in range(2)]
    scan.overlaps_scan(dataset)
    assert final_ids(dataset) == {b.pk for b in boxes}


def test_a_box_is_checked_when_its_acceptance_commits(
    dataset, dog, cat, make_box, django_capture_on_commit_callbacks
):
    img = image(dataset)
    old = make_box(img, dog, 0, 0, 50, 50)
    far = make_box(image(dataset), cat, 0, 0, 10, 10)
    scan.overlaps_scan(dataset)
    new = make_box(img, cat, 0, 0, 50, 49, state=BoxState.PENDING)

    with django_capture_on_commit_callbacks(execute=True):
        Box.objects.filter(pk=new.pk).update(state=BoxState.ACCEPTED)
        scan.overlaps_check_soon(dataset.pk, [img.pk])

    assert OverlapCheck.objects.filter(box=new).exists()
    assert final_ids(dataset) == {far.pk}, "the new pair is queued: neither of its boxes is final"
    assert scan.datasets_to_scan() == []
    assert set(FinalBox.objects.values_list("box_id", flat=True)) == {far.pk}
    assert old.pk not in final_ids(dataset)


def test_an_unchecked_box_is_not_final_and_a_decided_pair_frees_its_boxes(dataset, dog, make_box, reviewer):
    img = image(dataset)
    a = make_box(img, dog, 0, 0, 50, 50)
    b = make_box(img, dog, 0, 0, 50, 49)
    assert final_ids(dataset) == set(), "not checked yet"
    scan.overlaps_scan(dataset)
    assert final_ids(dataset) == set(), "a duplicate pair is open"

    item = leasing.review_lease_next(reviewer=reviewer)
    decisions.review_decide(item=item, reviewer=reviewer, decision=Decision.DISTINCT)

    assert final_ids(dataset) == {a.pk, b.pk}
    assert set(FinalBox.objects.values_list("box_id", flat=True)) == {a.pk, b.pk}


def test_a_relabelled_box_leaves_the_final_boxes_until_checked_again(dataset, dog, cat, make_box, reviewer):
    img = image(dataset)
    make_box(img, cat, 0, 0, 50, 50)
    relabelled = make_box(img, dog, 0, 0, 50, 48)
    scan.overlaps_scan(dataset)
    item = leasing.review_lease_next(reviewer=reviewer)
    decisions.review_decide(item=item, reviewer=reviewer, decision=Decision.RELABEL_B)  # dog -> cat
    assert relabelled.pk not in final_ids(dataset)

    scan.overlaps_scan(dataset)

    assert relabelled.pk not in final_ids(dataset), "now a duplicate of the cat: a new item is open"
    assert ReviewItem.objects.filter(kind=ReviewKind.DUPLICATE, state=ItemState.OPEN).count() == 1


def test_the_catch_up_finds_every_image_whose_final_boxes_and_gate_disagree_and_only_those(
    dataset, dog, cat, make_box
):
    from review.final_boxes import final_boxes_sync, images_out_of_step

    imgs = [image(dataset) for _ in range(8)]
    early = make_box(imgs[6], cat, 60, 60, 90, 90)  # the lower id of a review item's pair (box_a)
    boxes = [make_box(img, dog, 0, 0, 40, 40) for img in imgs]
    scan.overlaps_scan(dataset)
    assert images_out_of_step(dataset) == []
    # Rows changed around the services, as a data load or a failed hook would leave them:
    FinalBox.objects.filter(box=boxes[1]).delete()  # a final box missing
    Box.objects.filter(pk=boxes[2].pk).update(state=BoxState.REMOVED)  # a final row for a removed box
    Box.objects.filter(pk=boxes[3].pk).update(concept=cat)  # relabelled, the row still says dog
    OverlapCheck.objects.filter(box=boxes[4]).delete()  # its overlaps to be examined again
    # A review item open about two final boxes: image 6's as box_a, image 5's as box_b.
    ReviewItem.objects.create(
        kind=ReviewKind.DUPLICATE, dataset=dataset, box_a=early, box_b=boxes[5], image=imgs[5]
    )
    expected = sorted(img.pk for img in imgs[1:7])
    assert images_out_of_step(dataset) == expected  # images 0 and 7 are in step

    final_boxes_sync(dataset)

    assert images_out_of_step(dataset) == []
    # The relabelled box kept its check here, so the gate lets it through as a cat.
    assert set(FinalBox.objects.values_list("box_id", "concept_id")) == {
        (b.pk, dog.pk) for b in (boxes[0], boxes[1], boxes[6], boxes[7])
    } | {(boxes[3].pk, cat.pk)}
