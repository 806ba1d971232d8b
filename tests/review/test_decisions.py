"""Decisions on review items: effects on boxes, the audit trail, undo, leases, atomicity."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Box, BoxState
from review import ambiguous, decisions, errors, leasing, resolvers, scan
from review.models import Decision, ItemState, ReviewDecision, ReviewItem, ReviewKind
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def pair(dataset, make_box):
    """A scanned duplicate pair (a, b) and a cross-class pair (a, c) on one image."""
    dog, cat = factories.ConceptFactory(name="dog"), factories.ConceptFactory(name="cat")
    img = factories.ImageFactory(dataset=dataset, width=100, height=100)
    a = make_box(img, dog, 0, 0, 50, 50)
    b = make_box(img, dog, 0, 0, 50, 48)
    c = make_box(img, cat, 0, 0, 50, 47)
    scan.overlaps_scan(dataset)
    duplicate = ReviewItem.objects.get(kind=ReviewKind.DUPLICATE, box_a=a, box_b=b)
    return {"a": a, "b": b, "c": c, "dog": dog, "cat": cat, "duplicate": duplicate}


def lease(reviewer, kind):
    item = leasing.review_lease_next(reviewer=reviewer, kinds=[kind])
    assert item is not None
    return item


def test_keep_a_removes_b_softly_and_records_before_and_after(pair, reviewer):
    item = lease(reviewer, ReviewKind.DUPLICATE)
    assert item.pk == pair["duplicate"].pk

    row = decisions.review_decide(
        item=item, reviewer=reviewer, decision=Decision.DUPLICATE_KEEP_A, reason="same dog"
    )

    b = Box.objects.get(pk=pair["b"].pk)
    assert b.state == BoxState.REMOVED, "removed is a state: the row is kept"
    assert Box.objects.get(pk=pair["a"].pk).state == BoxState.ACCEPTED
    key_b = str(b.pk)
    assert row.before["boxes"][key_b] == {"state": "accepted", "concept": pair["dog"].pk}
    assert row.after["boxes"][key_b] == {"state": "removed", "concept": pair["dog"].pk}
    assert (row.reviewer, row.reason) == (reviewer, "same dog")
    item.refresh_from_db()
    assert (item.state, item.leased_to, item.lease_expires_at) == (ItemState.DECIDED, None, None)


def test_removing_a_box_dismisses_its_other_open_items_and_undo_restores_everything(
    pair, reviewer, organizer
):
    item = lease(reviewer, ReviewKind.DUPLICATE)
    row = decisions.review_decide(item=item, reviewer=reviewer, decision=Decision.DUPLICATE_KEEP_B)
    cross_with_a = ReviewItem.objects.get(kind=ReviewKind.CROSS_CLASS, box_a=pair["a"])
    assert cross_with_a.state == ItemState.DISMISSED
    assert row.after["dismissed_items"] == [cross_with_a.pk]

    undo = decisions.review_undo(decision=row, organizer=organizer, reason="wrong call")

    assert Box.objects.get(pk=pair["a"].pk).state == BoxState.ACCEPTED
    assert ReviewItem.objects.get(pk=cross_with_a.pk).state == ItemState.OPEN
    assert ReviewItem.objects.get(pk=item.pk).state == ItemState.OPEN
    assert (undo.decision, undo.undoes, undo.reviewer, undo.reason) == ("undo", row, organizer, "wrong call")
    assert undo.before["boxes"] == row.after["boxes"] and undo.after["boxes"] == row.before["boxes"]
    assert ReviewDecision.objects.count() == 2, "the undone decision stays in the audit trail"


def test_relabel_changes_the_concept_to_the_other_class_by_default_and_undo_reverts(
    pair, reviewer, organizer
):
    item = lease(reviewer, ReviewKind.CROSS_CLASS)
    target_id = item.box_a_id
    row = decisions.review_decide(item=item, reviewer=reviewer, decision=Decision.RELABEL_A)
    other = Box.objects.get(pk=item.box_b_id)
    assert Box.objects.get(pk=target_id).concept_id == other.concept_id == row.new_concept_id

    decisions.review_undo(decision=row, organizer=organizer)

    assert Box.objects.get(pk=target_id).concept_id == row.before["boxes"][str(target_id)]["concept"]


def test_relabel_to_an_explicit_class_and_useless_relabel_is_refused(pair, reviewer):
    item = lease(reviewer, ReviewKind.CROSS_CLASS)
    box_a = Box.objects.get(pk=item.box_a_id)
    with pytest.raises(errors.InvalidDecision, match="current class"):
        decisions.review_decide(
            item=item, reviewer=reviewer, decision=Decision.RELABEL_A, new_concept=box_a.concept
        )
    horse = factories.ConceptFactory(name="horse")
    decisions.review_decide(item=item, reviewer=reviewer, decision=Decision.RELABEL_A, new_concept=horse)
    assert Box.objects.get(pk=box_a.pk).concept == horse


def test_a_decision_of_another_kind_is_refused_and_changes_nothing(pair, reviewer):
    item = lease(reviewer, ReviewKind.DUPLICATE)
    with pytest.raises(errors.InvalidDecision, match="not a decision for a duplicate"):
        decisions.review_decide(item=item, reviewer=reviewer, decision=Decision.REMOVE_A)
    with pytest.raises(errors.InvalidDecision):
        decisions.review_decide(
            item=item, reviewer=reviewer, decision=Decision.DISTINCT, new_concept=pair["cat"]
        )
    assert not ReviewDecision.objects.exists()
    assert ReviewItem.objects.get(pk=item.pk).state == ItemState.LEASED


def test_a_failure_inside_the_decision_rolls_back_box_changes(pair, reviewer, dataset):
    box = pair["a"]
    item = ambiguous.ambiguous_enqueue(
        dataset=dataset, subject={"type": "test.boom", "id": 1}, reason="x", box=box
    )
    Box.objects.filter(pk=box.pk).update(state=BoxState.PENDING)

    def boom(item, row):
        raise RuntimeError("pipeline down")

    resolvers.register("test.boom", resolvers.Resolver(apply=boom))
    try:
        leased = lease(reviewer, ReviewKind.AMBIGUOUS)
        assert leased.pk == item.pk
        with pytest.raises(RuntimeError):
            decisions.review_decide(item=leased, reviewer=reviewer, decision=Decision.ACCEPT)
    finally:
        resolvers.unregister("test.boom")
    assert Box.objects.get(pk=box.pk).state == BoxState.PENDING
    assert not ReviewDecision.objects.exists()
    assert ReviewItem.objects.get(pk=item.pk).state == ItemState.LEASED


def test_only_the_lease_holder_decides_and_only_once(pair, reviewer, other_reviewer):
    item = lease(reviewer, ReviewKind.DUPLICATE)
    with pytest.raises(errors.NotLeaseHolder):
        decisions.review_decide(item=item, reviewer=other_reviewer, decision=Decision.DISTINCT)
    decisions.review_decide(item=item, reviewer=reviewer, decision=Decision.DISTINCT)
    with pytest.raises(errors.AlreadyDecided):
        decisions.review_decide(item=item, reviewer=reviewer, decision=Decision.DISTINCT)
    assert ReviewDecision.objects.count() == 1


def test_two_reviewers_get_different_items_and_an_expired_lease_is_reclaimed(pair, reviewer, other_reviewer):
    first = leasing.review_lease_next(reviewer=reviewer)
    second = leasing.review_lease_next(reviewer=other_reviewer)
    assert first.pk != second.pk
    assert leasing.review_lease_next(reviewer=reviewer).pk == first.pk, "a reviewer keeps their item"

    later = timezone.now() + timedelta(hours=1)
    third = factories.user_with_roles("reviewer3", ("reviewers",))
    reclaimed = {leasing.review_lease_next(reviewer=third, now=later).pk}
    assert reclaimed <= {first.pk, second.pk}
    stale = ReviewItem.objects.get(pk=reclaimed.pop())
    old_holder = reviewer if stale.pk == first.pk else other_reviewer
    with pytest.raises(errors.NotLeaseHolder):
        decisions.review_decide(item=stale, reviewer=old_holder, decision=Decision.BOTH_RIGHT)


def test_undo_is_refused_twice_for_an_undo_and_after_later_changes(pair, reviewer, organizer):
    item = lease(reviewer, ReviewKind.DUPLICATE)
    row = decisions.review_decide(item=item, reviewer=reviewer, decision=Decision.DUPLICATE_KEEP_A)
    undo = decisions.review_undo(decision=row, organizer=organizer)
    with pytest.raises(errors.ReviewError, match="already undone"):
        decisions.review_undo(decision=row, organizer=organizer)
    with pytest.raises(errors.InvalidDecision, match="cannot be undone"):
        decisions.review_undo(decision=undo, organizer=organizer)

    item = lease(reviewer, ReviewKind.DUPLICATE)
    row = decisions.review_decide(item=item, reviewer=reviewer, decision=Decision.DUPLICATE_KEEP_A)
    Box.objects.filter(pk=pair["b"].pk).update(state=BoxState.ACCEPTED)  # someone else changed the box
    with pytest.raises(errors.BoxesChanged):
        decisions.review_undo(decision=row, organizer=organizer)


def test_ambiguous_items_are_queued_once_while_open_and_accept_sets_the_box_state(
    dataset, reviewer, make_box
):
    img = factories.ImageFactory(dataset=dataset)
    box = make_box(img, factories.ConceptFactory(), 1, 1, 20, 20, state=BoxState.PENDING)
    # A subject type no pipeline resolves: the decision sets the item's box state itself.
    subject = {"type": "test.pipeline", "id": 7}
    first = ambiguous.ambiguous_enqueue(
        dataset=dataset, subject=subject, reason="over its round cap", box=box
    )
    again = ambiguous.ambiguous_enqueue(
        dataset=dataset, subject={"id": 7, "type": "test.pipeline"}, reason="again", box=box
    )
    assert first.pk == again.pk
    with pytest.raises(ValueError, match="type"):
        ambiguous.ambiguous_enqueue(dataset=dataset, subject={"id": 1}, reason="x")

    item = lease(reviewer, ReviewKind.AMBIGUOUS)
    decisions.review_decide(item=item, reviewer=reviewer, decision=Decision.REJECT)

    assert Box.objects.get(pk=box.pk).state == BoxState.REJECTED
    later = ambiguous.ambiguous_enqueue(dataset=dataset, subject=subject, reason="came back")
    assert later.pk != first.pk, "once decided, the same subject may be queued again"


def test_a_pair_with_a_removed_box_is_not_offered(pair, reviewer):
    Box.objects.filter(pk=pair["a"].pk).update(state=BoxState.REMOVED)
    leased = leasing.review_lease_next(reviewer=reviewer)
    assert leased is None or pair["a"].pk not in leased.box_ids
