"""Review from the organizer's side: the dataset's review queue counts, and starting the overlap scan (queued
through `review.services.overlaps_scan_request`, debounced like every other scan request)."""

from __future__ import annotations

from django.db.models import Count
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.audit import audit_record
from config.roles import IsOrganizer
from review.models import ItemState, ReviewItem, ReviewKind
from review.services import overlaps_scan_request

from .scoping import organizer_dataset


class ReviewCountsSerializer(serializers.Serializer):
    counts = serializers.DictField(
        child=serializers.DictField(child=serializers.IntegerField()),
        help_text="{review kind: {item state: count}}, every kind and state present.",
    )
    scan_queued = serializers.BooleanField(required=False, help_text="False: a scan is queued or just ran.")


def review_counts(dataset) -> dict[str, dict[str, int]]:
    counts = {kind: dict.fromkeys(ItemState.values, 0) for kind in ReviewKind.values}
    rows = ReviewItem.objects.filter(dataset=dataset).values_list("kind", "state").annotate(n=Count("id"))
    for kind, state, n in rows:
        counts.setdefault(kind, dict.fromkeys(ItemState.values, 0))[state] = n
    return counts


class DatasetReviewView(APIView):
    """The dataset's review items per kind and state; POST starts an overlap scan (duplicates and cross-class
    pairs among new or changed boxes)."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=ReviewCountsSerializer)
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        return Response(ReviewCountsSerializer({"counts": review_counts(dataset)}).data)

    @extend_schema(request=None, responses={202: ReviewCountsSerializer})
    def post(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        # Outside any transaction, as the scan request wants (one guarded UPDATE; eager Celery scans right here).
        queued = overlaps_scan_request(dataset.pk)
        audit_record(
            dataset=dataset,
            actor=request.user,
            action="review.overlap_scan",
            parameters={},
            result={"queued": queued},
        )
        body = {"counts": review_counts(dataset), "scan_queued": queued}
        return Response(ReviewCountsSerializer(body).data, status=status.HTTP_202_ACCEPTED)
