"""The gold tally (`GoldTally`): gold items per (dataset, question kind), added to in the transaction that
creates the items and rebuilt from them by `manage.py counters_recount` (registered in `GoldConfig.ready`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from django.db.models import Count

from annotation.counters import counter_add, counter_rows_rewrite

from .models import GoldItem, GoldTally


def gold_items_counted(items: Iterable[GoldItem]) -> None:
    """New items, one counter update per (dataset, kind) in a fixed order (two transactions adding items of the
    same kinds lock the rows in the same order)."""
    for (dataset_id, kind), n in sorted(Counter((i.dataset_id, i.kind) for i in items).items()):
        counter_add(GoldTally, {"dataset_id": dataset_id, "kind": kind}, {"items": n})


def gold_tally_expected(dataset_id: int) -> dict[tuple[str], dict[str, int]]:
    """{(kind,): {"items": n}} recomputed from the dataset's items."""
    return {
        (kind,): {"items": n}
        for kind, n in GoldItem.objects.filter(dataset_id=dataset_id)
        .values_list("kind")
        .annotate(n=Count("id"))
        .order_by()
    }


def gold_tally_recount(dataset_id: int) -> int:
    """Rewrite the dataset's gold tally from its items (rows locked first, as annotation.counters does);
    returns how many rows changed. Call inside a transaction."""
    stored = {
        (kind,): {"items": n}
        for kind, n in GoldTally.objects.select_for_update(no_key=True)
        .filter(dataset_id=dataset_id)
        .order_by("id")
        .values_list("kind", "items")
    }
    expected = gold_tally_expected(dataset_id)
    return counter_rows_rewrite(GoldTally, dataset_id, ("kind",), expected, stored, zero={"items": 0})
