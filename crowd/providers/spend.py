"""What a dataset paid through the providers that move money for us (MTurk): rewards of approved
assignments, bonuses and MTurk's fees as recorded when `sync_hits` settled each assignment, beside what the
published HITs were estimated to cost. Study links are paid on the marketplace's side and in-house teams are
not paid per task, so neither has a spend row here."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Count, Q, Sum

from crowd.models import MturkAssignment, MturkAssignmentStatus, MturkBudget, Provider

from .mturk import spent

ZERO = Decimal("0.00")


@dataclass(frozen=True)
class ProviderSpend:
    provider: str
    assignments_approved: int
    assignments_rejected: int
    rewards: Decimal
    bonuses: Decimal
    fees: Decimal
    total: Decimal
    estimated: Decimal  # the estimates of every HIT published (the budget check's figure)
    budget: Decimal | None


def dataset_spend(dataset_id: int) -> list[ProviderSpend]:
    """One row per provider with money spent or committed in this dataset (three queries for MTurk)."""
    paid = MturkAssignment.objects.filter(hit__hit_type__dataset_id=dataset_id).aggregate(
        n=Count("id", filter=Q(status=MturkAssignmentStatus.APPROVED)),
        rejected=Count("id", filter=Q(status=MturkAssignmentStatus.REJECTED)),
        rewards=Sum("reward_paid"),  # only an approval pays: the other rows hold 0
        bonuses=Sum("bonus_paid"),
        fees=Sum("fees_paid"),
    )
    rejected = paid["rejected"]
    estimated = spent(dataset_id)
    budget = MturkBudget.objects.filter(dataset_id=dataset_id).values_list("cap", flat=True).first()
    if not (paid["n"] or rejected or estimated or budget is not None):
        return []
    rewards, bonuses, fees = (paid[k] or ZERO for k in ("rewards", "bonuses", "fees"))
    return [
        ProviderSpend(
            provider=Provider.MTURK.value,
            assignments_approved=paid["n"],
            assignments_rejected=rejected,
            rewards=rewards,
            bonuses=bonuses,
            fees=fees,
            total=rewards + bonuses + fees,
            estimated=estimated,
            budget=budget,
        )
    ]
