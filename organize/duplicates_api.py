"""Near-duplicate flags of a dataset's images (set at ingestion by perceptual hash): list the flags still to
confirm, confirm one (the image stays with its original in every split) or dismiss it (the flag is cleared:
the two are distinct images). Each verdict is a `NearDuplicateReview` row and an audit entry."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.audit import audit_record
from annotation.models import Image
from config.pagination import PAGE_PARAMETER, paginated, strict_paginator
from config.roles import IsOrganizer

from .classes_api import Conflict
from .models import NearDuplicateDecision, NearDuplicateReview
from .scoping import organizer_dataset


class FlaggedImageListSerializer(serializers.ModelSerializer):
    name = serializers.CharField(source="original_name")
    url = serializers.SerializerMethodField()
    original = serializers.IntegerField(source="near_duplicate_of_id")
    original_name = serializers.CharField(source="near_duplicate_of.original_name")
    original_url = serializers.SerializerMethodField()

    class Meta:
        model = Image
        fields = ["id", "name", "url", "original", "original_name", "original_url"]

    def get_url(self, image) -> str:
        return f"/api/v1/images/{image.pk}/file"

    def get_original_url(self, image) -> str:
        return f"/api/v1/images/{image.near_duplicate_of_id}/file"


class NearDuplicateVerdictSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=NearDuplicateDecision.choices)


class NearDuplicateReviewSerializer(serializers.ModelSerializer):
    actor = serializers.CharField(source="actor.username")
    decision = serializers.CharField()

    class Meta:
        model = NearDuplicateReview
        fields = ["id", "image", "original", "decision", "actor", "created_at"]


def pending_flags(dataset):
    """Flagged images of the dataset no organizer has confirmed yet (dismissed ones have no flag any more)."""
    confirmed = NearDuplicateReview.objects.filter(
        image=OuterRef("pk"), original=OuterRef("near_duplicate_of")
    )
    return (
        Image.objects.filter(dataset=dataset, near_duplicate_of__isnull=False)
        .exclude(Exists(confirmed))
        .select_related("near_duplicate_of")
        .order_by("id")
    )


class NearDuplicatesView(APIView):
    """The near-duplicate flags still to confirm or dismiss (paginated, 50 a page)."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(
        operation_id="v1_datasets_near_duplicates_list",
        parameters=[PAGE_PARAMETER],
        responses=paginated(FlaggedImageListSerializer, "FlaggedImagePage"),
    )
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        paginator = strict_paginator(50)
        page = paginator.paginate_queryset(pending_flags(dataset), request, view=self)
        return paginator.get_paginated_response(FlaggedImageListSerializer(page, many=True).data)


class NearDuplicateVerdictView(APIView):
    """Confirm or dismiss an image's near-duplicate flag (404 when the image carries none; 409 when it was
    confirmed already)."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(request=NearDuplicateVerdictSerializer, responses={201: NearDuplicateReviewSerializer})
    def post(self, request, dataset_id: int, image_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        form = NearDuplicateVerdictSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        decision = form.validated_data["decision"]
        try:
            with transaction.atomic():
                image = get_object_or_404(
                    Image.objects.select_for_update(no_key=True, of=("self",)).filter(
                        dataset=dataset, near_duplicate_of__isnull=False
                    ),
                    pk=image_id,
                )
                review = NearDuplicateReview.objects.create(
                    image=image, original_id=image.near_duplicate_of_id, decision=decision, actor=request.user
                )
                if decision == NearDuplicateDecision.DISMISS:
                    Image.objects.filter(pk=image.pk).update(near_duplicate_of=None)
                audit_record(
                    dataset=dataset,
                    actor=request.user,
                    action=f"near_duplicate.{decision}",
                    parameters={"image": image.pk, "original": review.original_id},
                )
        except IntegrityError:
            raise Conflict({"detail": f"image {image_id}'s flag was confirmed already"}) from None
        return Response(NearDuplicateReviewSerializer(review).data, status=status.HTTP_201_CREATED)
