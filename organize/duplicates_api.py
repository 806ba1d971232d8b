"""Near-duplicate flags of a dataset's images (set at ingestion by perceptual hash): list the flags still to
confirm, confirm one (the image stays with its original in every split) or dismiss it (the flag is cleared:
the two are distinct images) through `organize.near_duplicates`, which records the verdict and its audit
entry."""

from __future__ import annotations

from django.db.models import Exists, OuterRef
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import Image
from config.errors import Conflict
from config.pagination import PAGE_PARAMETER, paginated, strict_paginator
from config.roles import IsOrganizer

from .models import NearDuplicateDecision, NearDuplicateReview
from .near_duplicates import FlagDecided, near_duplicate_decide
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
        try:
            review = near_duplicate_decide(
                dataset=dataset,
                image_id=image_id,
                decision=form.validated_data["decision"],
                actor=request.user,
            )
        except Image.DoesNotExist:
            raise NotFound("No Image matches the given query.") from None
        except FlagDecided as exc:
            raise Conflict(str(exc)) from None
        return Response(NearDuplicateReviewSerializer(review).data, status=status.HTTP_201_CREATED)
