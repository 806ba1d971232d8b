"""Which datasets an organizer may see: their own (a superuser: all). Every organizer endpoint of every app goes
through here, so another organizer's dataset answers 404 exactly like a missing one."""

from __future__ import annotations

from django.shortcuts import get_object_or_404

from .models import Dataset


def organizer_datasets(user):
    qs = Dataset.objects.all()
    return qs if user.is_superuser else qs.filter(organizers=user)


def organizer_dataset(user, dataset_id) -> Dataset:
    return get_object_or_404(organizer_datasets(user), pk=dataset_id)
