"""What the dataset commands share: the dataset named on the command line (`ingest_images`, `bucket_ingest`)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import CommandError
from django.core.validators import validate_slug

from annotation.models import Dataset


def dataset_named(name: str, *, create: bool) -> Dataset:
    dataset = Dataset.objects.filter(name=name).first()
    if dataset is not None:
        return dataset
    if not create:
        known = ", ".join(Dataset.objects.order_by("name").values_list("name", flat=True)[:20]) or "none"
        raise CommandError(f"no dataset named {name!r} (known: {known}); pass --create-dataset to create it")
    try:
        validate_slug(name)
    except ValidationError:
        raise CommandError(
            f"cannot create dataset {name!r}: use letters, digits, hyphens and underscores only"
        ) from None
    return Dataset.objects.create(name=name)
