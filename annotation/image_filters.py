"""The image list's filters (file name, near-duplicate flag, class), shared by the dataset's image list and the
organizer's image grid, which adds its own (stage, split) on top."""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter
from rest_framework.exceptions import ValidationError

from .serializers import concept_by_wnid

IMAGE_FILTER_PARAMETERS = [
    OpenApiParameter("name", str, description="Only images whose file name contains this text."),
    OpenApiParameter("near_duplicate", bool, description="true: only images flagged as near-duplicates."),
    OpenApiParameter("concept", str, description="Only images with a present final label of this wnid."),
    OpenApiParameter("excluded", bool, description="true: only excluded images; false: only the others."),
]


def images_filtered(images: QuerySet, params) -> QuerySet:
    """`images` narrowed by the query parameters above; a bad value is a 400 naming the parameter."""
    if params.get("name"):
        images = images.filter(original_name__icontains=params["name"])
    if params.get("near_duplicate") not in (None, ""):
        if params["near_duplicate"] not in ("true", "false"):
            raise ValidationError({"near_duplicate": "must be true or false"})
        images = images.filter(near_duplicate_of__isnull=params["near_duplicate"] == "false")
    if params.get("excluded") not in (None, ""):
        if params["excluded"] not in ("true", "false"):
            raise ValidationError({"excluded": "must be true or false"})
        images = images.filter(excluded_at__isnull=params["excluded"] == "false")
    if params.get("concept"):
        concept = concept_by_wnid(params["concept"])
        images = images.filter(final_labels__concept=concept, final_labels__present=True)
    return images
