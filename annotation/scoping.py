"""Which datasets an organizer may see: their own (a superuser: all), and which a reviewer may review (their granted
ones, or all when they hold no grant). Every organizer endpoint of every app goes through here, so another
organizer's dataset answers 404 exactly like a missing one."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Q
from django.db.models.functions import Coalesce
from django.shortcuts import get_object_or_404
from rest_framework.exceptions import PermissionDenied

from .models import Dataset, ReviewerGrant


def organizer_datasets(user):
    qs = Dataset.objects.all()
    return qs if user.is_superuser else qs.filter(organizers=user)


def organizer_datasets_counted(user, *, schema_only: bool = False):
    """The datasets of the organizer viewsets (annotation's, the box pipeline's, the plain votes'): the caller's
    own (every one for a superuser) in id order, each with `image_count` from its tally (counting images per
    dataset is a scan); none while the schema is generated (`schema_only`: the view has no user then)."""
    qs = Dataset.objects.annotate(image_count=Coalesce("tally__images", 0))
    if schema_only:
        return qs.none()
    return (qs if user.is_superuser else qs.filter(organizers=user)).order_by("id")


def organizer_dataset(user, dataset_id) -> Dataset:
    return get_object_or_404(organizer_datasets(user), pk=dataset_id)


def organizer_datasets_named(user, ids) -> list[Dataset]:
    """The datasets `ids` names, each of which `user` must organize: one that is another organizer's (or does
    not exist) is refused with 403, alike, so the answer tells nothing about other organizers' datasets."""
    wanted = sorted(set(ids))
    found = list(organizer_datasets(user).filter(pk__in=wanted).order_by("pk"))
    missing = sorted(set(wanted) - {d.pk for d in found})
    if missing:
        raise PermissionDenied(
            f"you do not organize dataset{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))}: "
            "a scope names only datasets you organize"
        )
    return found


def reviewer_dataset_q(user, field: str = "dataset") -> Q:
    """A filter on `field` (a dataset foreign key, or "pk" on datasets) for what `user` may review: a reviewer
    holding grants, only their granted datasets; one holding none (and a superuser), every dataset. Two
    subqueries of the filtered statement itself, so scoping costs no query of its own."""
    if user.is_superuser:
        return Q()
    grants = ReviewerGrant.objects.filter(user=user)
    return ~Q(Exists(grants)) | Q(Exists(grants.filter(dataset=OuterRef(field))))


def reviewer_datasets(user):
    """The datasets `user` may review (every dataset for an unscoped reviewer)."""
    return Dataset.objects.filter(reviewer_dataset_q(user, "pk"))
