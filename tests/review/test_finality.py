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
