"""How many micro-tasks one provider session (a study-link visit, an MTurk assignment) answers, per dataset and
task kind (`BundleSize`); a kind without a row uses `CROWDLABEL_BUNDLE_SIZE`. A change applies to sessions
opened from then on: an open bundle keeps the size it was opened with."""

from __future__ import annotations

from django.conf import settings
from django.db import transaction

from annotation import kinds
from annotation.models import Dataset

from .models import BundleSize

MAX_BUNDLE_SIZE = 500  # a session of more micro-tasks than this is a shift, not a study visit


class BundleSizeRefused(ValueError):
    """A size cannot be stored; the message names the kind and why."""


def bundle_sizes(dataset: Dataset) -> dict[str, int | None]:
    """{task kind: the dataset's own size, or None when the kind uses the default}."""
    own = dict(BundleSize.objects.filter(dataset=dataset).values_list("kind", "size"))
    return {kind: own.get(kind) for kind in kinds.names()}


def bundle_size_default() -> int:
    return settings.CROWDLABEL["BUNDLE_SIZE"]


def bundle_sizes_set(*, dataset: Dataset, sizes: dict[str, int | None]) -> dict[str, int | None]:
    """Set the sizes named (None: back to the default), all or none: every kind and size is checked first."""
    known = kinds.names()
    for kind, size in sizes.items():
        if kind not in known:
            raise BundleSizeRefused(f"{kind}: unknown task kind; known: {', '.join(known)}")
        if size is not None and not 1 <= size <= MAX_BUNDLE_SIZE:
            raise BundleSizeRefused(f"{kind}: a session answers 1 to {MAX_BUNDLE_SIZE} tasks, not {size}")
    with transaction.atomic():
        for kind in sorted(sizes):
            if sizes[kind] is None:
                BundleSize.objects.filter(dataset=dataset, kind=kind).delete()
            else:
                BundleSize.objects.update_or_create(
                    dataset=dataset, kind=kind, defaults={"size": sizes[kind]}
                )
    return bundle_sizes(dataset)
