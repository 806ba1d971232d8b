"""The near-duplicate verdict service (`organize.near_duplicates` over `annotation.near_duplicates`): a confirmed
flag stays, a dismissed one is cleared, each verdict is recorded once per flag with its audit entry, a refused
verdict writes nothing, and only a flagged image of the dataset can be judged. On PostgreSQL, simultaneous
verdicts on one flag record one."""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from annotation.models import AuditEntry, Image
from organize.models import NearDuplicateDecision, NearDuplicateReview
from organize.near_duplicates import FlagDecided, near_duplicate_decide
from tests import factories
from tests.threads import in_thread

CONFIRM, DISMISS = NearDuplicateDecision.CONFIRM, NearDuplicateDecision.DISMISS
THREADS = 6


def _flagged(dataset, copies: int = 2):
    original = factories.ImageFactory(dataset=dataset)
    return original, [
        factories.ImageFactory(dataset=dataset, near_duplicate_of=original) for _ in range(copies)
    ]


def _flag(image: Image) -> int | None:
    return Image.objects.values_list("near_duplicate_of", flat=True).get(pk=image.pk)


@pytest.mark.django_db
def test_a_confirmed_flag_stays_and_a_dismissed_one_is_cleared_each_audited(dataset, organizer):
    original, (kept, distinct) = _flagged(dataset)
    review = near_duplicate_decide(dataset=dataset, image_id=kept.pk, decision=CONFIRM, actor=organizer)
    assert (review.image_id, review.original_id, review.decision) == (kept.pk, original.pk, CONFIRM)
    near_duplicate_decide(dataset=dataset, image_id=distinct.pk, decision=DISMISS, actor=organizer)
    assert (_flag(kept), _flag(distinct)) == (original.pk, None)
    entries = AuditEntry.objects.filter(dataset=dataset).order_by("id")
    assert [(e.action, e.parameters) for e in entries] == [
        ("near_duplicate.confirm", {"image": kept.pk, "original": original.pk}),
        ("near_duplicate.dismiss", {"image": distinct.pk, "original": original.pk}),
    ]


@pytest.mark.django_db
def test_a_flag_is_decided_once_and_a_refused_verdict_writes_nothing(dataset, organizer):
    original, (image, _) = _flagged(dataset)
    near_duplicate_decide(dataset=dataset, image_id=image.pk, decision=CONFIRM, actor=organizer)
    with pytest.raises(FlagDecided, match=f"image {image.pk}'s flag was confirmed already"):
        near_duplicate_decide(dataset=dataset, image_id=image.pk, decision=DISMISS, actor=organizer)
    assert _flag(image) == original.pk  # the refused dismissal cleared nothing
    assert NearDuplicateReview.objects.count() == 1 and AuditEntry.objects.count() == 1


@pytest.mark.django_db
def test_only_a_flagged_image_of_the_dataset_is_judged(dataset, organizer):
    original, (image, _) = _flagged(dataset)
    _, (elsewhere,) = _flagged(factories.DatasetFactory(), copies=1)
    for image_id in (original.pk, elsewhere.pk, 10**9):
        with pytest.raises(Image.DoesNotExist):
            near_duplicate_decide(dataset=dataset, image_id=image_id, decision=DISMISS, actor=organizer)
    near_duplicate_decide(dataset=dataset, image_id=image.pk, decision=DISMISS, actor=organizer)
    with pytest.raises(Image.DoesNotExist):  # a dismissed flag is gone
        near_duplicate_decide(dataset=dataset, image_id=image.pk, decision=CONFIRM, actor=organizer)
    assert _flag(elsewhere) is not None
    assert NearDuplicateReview.objects.count() == 1 and AuditEntry.objects.count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_simultaneous_verdicts_on_one_flag_record_one():
    organizer = factories.user_with_roles("org-flags", ("organizers",))
    dataset = factories.DatasetFactory(organizers=[organizer])
    original, (image,) = _flagged(dataset, copies=1)
    start = threading.Barrier(THREADS)

    @in_thread
    def decide(k: int) -> str:
        start.wait()
        try:
            near_duplicate_decide(
                dataset=dataset, image_id=image.pk, decision=(CONFIRM, DISMISS)[k % 2], actor=organizer
            )
            return "ok"
        except (FlagDecided, Image.DoesNotExist):
            return "refused"

    with ThreadPoolExecutor(THREADS) as pool:
        assert Counter(pool.map(decide, range(THREADS))) == {"ok": 1, "refused": THREADS - 1}
    (review,) = NearDuplicateReview.objects.all()
    assert _flag(image) == (original.pk if review.decision == CONFIRM else None)
    (entry,) = AuditEntry.objects.filter(dataset=dataset)
    assert entry.action == f"near_duplicate.{review.decision}"
