"""The gold app's pay recommendations, gathered per bundle for the marketplaces that pay per session."""

from __future__ import annotations

from collections import defaultdict

from crowd.models import Bundle, BundleItem
from gold.models import PaymentDecision
from gold.services import payments_decide

PENDING = "pending"


def bundle_decisions(bundles: list[Bundle], *, refresh: bool = True) -> dict[int, list[str]]:
    """For each bundle, the current recommendation of each answered item ("approve", "reject", "bonus", or
    "pending" when gold has not decided yet). With `refresh`, gold first records decisions for new answers."""
    if refresh:
        for dataset_id in sorted({b.dataset_id for b in bundles}):
            payments_decide(dataset_id=dataset_id)
    items = BundleItem.objects.filter(bundle__in=bundles, assignment__state="submitted").values_list(
        "bundle_id", "assignment_id"
    )
    by_assignment: dict[int, int] = {assignment: bundle for bundle, assignment in items}
    latest: dict[int, str] = {}
    for assignment_id, recommendation in (
        PaymentDecision.objects.filter(assignment_id__in=list(by_assignment))
        .order_by("id")
        .values_list("assignment_id", "recommendation")
    ):
        latest[assignment_id] = recommendation  # append-only: the newest row wins
    result: dict[int, list[str]] = defaultdict(list)
    for assignment_id, bundle_id in by_assignment.items():
        result[bundle_id].append(latest.get(assignment_id, PENDING))
    return dict(result)


def bundle_recommendation(decisions: list[str]) -> str:
    """One decision for a bundle: reject only when gold rejects an item (gold never rejects for a non-gold
    answer), a bonus when any item earns one, pending until every item is decided."""
    if "reject" in decisions:
        return "reject"
    if PENDING in decisions or not decisions:
        return PENDING
    return "bonus" if "bonus" in decisions else "approve"
