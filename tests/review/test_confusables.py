"""The confusable-pair service (`review.confusables`): a pair joins two distinct classes of its dataset, is listed
once in either order, and every add and removal writes its audit entry with it (a refusal writes nothing); a pair
of another dataset is not found. On PostgreSQL, simultaneous adds list a pair once and simultaneous removals
record one removal."""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from annotation.models import AuditEntry
from review.confusables import PairInvalid, PairListed, confusable_pair_add, confusable_pair_remove
from review.models import ConfusablePair
from tests import factories
from tests.threads import in_thread

SEAL, OTTER, DOG = "n02076196", "n02444819", "n02084071"
THREADS = 6


def _classes(dataset):
    seal, otter, _ = (
        factories.ConceptFactory(wnid=w, name=n) for w, n in [(SEAL, "seal"), (OTTER, "otter"), (DOG, "dog")]
    )
    dataset.concepts.set([seal, otter])
    return seal, otter


@pytest.mark.django_db
def test_a_pair_is_listed_once_in_either_order_and_audited(dataset, organizer):
    seal, otter = _classes(dataset)
    pair = confusable_pair_add(dataset=dataset, a=OTTER, b=SEAL, note="wet fur", actor=organizer)
    assert (pair.concept_a_id, pair.concept_b_id) == tuple(sorted((seal.pk, otter.pk)))
    with pytest.raises(PairListed, match="listed already"):
        confusable_pair_add(dataset=dataset, a=SEAL, b=OTTER, note="", actor=organizer)
    assert ConfusablePair.objects.get().note == "wet fur"
    (entry,) = AuditEntry.objects.filter(dataset=dataset)
    assert (entry.action, entry.actor, entry.parameters) == (
        "confusable_pair.add",
        organizer,
        {"a": OTTER, "b": SEAL, "note": "wet fur"},
    )


@pytest.mark.django_db
def test_a_pair_needs_two_distinct_classes_of_the_dataset_and_a_refusal_writes_nothing(dataset, organizer):
    _classes(dataset)
    with pytest.raises(PairInvalid, match="not confusable with itself") as same:
        confusable_pair_add(dataset=dataset, a=SEAL, b=SEAL, note="", actor=organizer)
    assert same.value.field == "b"
    with pytest.raises(PairInvalid) as outside:
        confusable_pair_add(dataset=dataset, a="n99999999", b=DOG, note="", actor=organizer)
    assert outside.value.field == "concepts"
    assert str(outside.value) == f"not among the classes of {dataset.name}: n99999999, {DOG}"
    assert not ConfusablePair.objects.exists() and not AuditEntry.objects.exists()


@pytest.mark.django_db
def test_a_removal_is_audited_and_another_datasets_pair_is_not_found(dataset, organizer):
    seal, otter = _classes(dataset)
    other_dataset = factories.DatasetFactory()
    other_dataset.concepts.set([seal, otter])
    theirs = confusable_pair_add(dataset=other_dataset, a=SEAL, b=OTTER, note="theirs", actor=organizer)
    mine = confusable_pair_add(dataset=dataset, a=OTTER, b=SEAL, note="mine", actor=organizer)
    with pytest.raises(ConfusablePair.DoesNotExist):
        confusable_pair_remove(dataset=dataset, pair_id=theirs.pk, actor=organizer)
    confusable_pair_remove(dataset=dataset, pair_id=mine.pk, actor=organizer)
    assert list(ConfusablePair.objects.values_list("pk", flat=True)) == [theirs.pk]
    removal = AuditEntry.objects.get(action="confusable_pair.remove")
    # The pair's classes as stored (canonical order), whatever order they were added in.
    first, second = sorted([seal, otter], key=lambda c: c.pk)
    assert (removal.dataset, removal.parameters) == (
        dataset,
        {"a": first.wnid, "b": second.wnid, "note": "mine"},
    )
    with pytest.raises(ConfusablePair.DoesNotExist):
        confusable_pair_remove(dataset=dataset, pair_id=mine.pk, actor=organizer)
    assert AuditEntry.objects.filter(action="confusable_pair.remove").count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_simultaneous_adds_list_a_pair_once_and_simultaneous_removals_record_one():
    organizer = factories.user_with_roles("org-pairs", ("organizers",))
    dataset = factories.DatasetFactory(organizers=[organizer])
    _classes(dataset)
    start = threading.Barrier(THREADS)

    @in_thread
    def add(k: int) -> str:
        a, b = (SEAL, OTTER) if k % 2 else (OTTER, SEAL)
        start.wait()
        try:
            confusable_pair_add(dataset=dataset, a=a, b=b, note=f"by {k}", actor=organizer)
            return "ok"
        except PairListed:
            return "listed"

    with ThreadPoolExecutor(THREADS) as pool:
        assert Counter(pool.map(add, range(THREADS))) == {"ok": 1, "listed": THREADS - 1}
    pair = ConfusablePair.objects.get()
    assert AuditEntry.objects.filter(action="confusable_pair.add").count() == 1

    again = threading.Barrier(THREADS)

    @in_thread
    def remove(_) -> str:
        again.wait()
        try:
            confusable_pair_remove(dataset=dataset, pair_id=pair.pk, actor=organizer)
            return "ok"
        except ConfusablePair.DoesNotExist:
            return "gone"

    with ThreadPoolExecutor(THREADS) as pool:
        assert Counter(pool.map(remove, range(THREADS))) == {"ok": 1, "gone": THREADS - 1}
    assert not ConfusablePair.objects.exists()
    assert AuditEntry.objects.filter(action="confusable_pair.remove").count() == 1
