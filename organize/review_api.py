"""Review from the organizer's side: the dataset's review queue counts with the accepted boxes whose overlap
check is still to come, starting the overlap scan (`review.scan.overlaps_scan_request`, at once: an
organizer's request waits for no debounce), and the recent decisions an organizer may undo."""

from __future__ import annotations

from django.db.models import Count
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.audit import audit_record
from config.pagination import PAGE_PARAMETER, paginated, strict_paginator
from config.roles import IsOrganizer
from review.decisions import undo_refusal
from review.models import Decision, ItemState, ReviewDecision, ReviewItem, ReviewKind
from review.scan import overlaps_scan_request, unchecked_boxes

from .scoping import organizer_dataset


class ReviewCountsSerializer(serializers.Serializer):
    counts = serializers.DictField(
        child=serializers.DictField(child=serializers.IntegerField()),
        help_text="{review kind: {item state: count}}, every kind and state present.",
    )
    unchecked_boxes = serializers.IntegerField(
        help_text="Accepted boxes whose overlaps with the other boxes of their image were not examined yet "
        "(each box is checked when its acceptance commits; a scan checks what that missed). 0: every "
        "duplicate and cross-class pair among the accepted boxes is in the counts, and every accepted box "
        "without an open review item is final."
    )
    scan_queued = serializers.BooleanField(
        required=False, help_text="False: a scan queued earlier and not started yet will cover the boxes."
    )


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
        body = {"counts": review_counts(dataset), "unchecked_boxes": unchecked_boxes(dataset).count()}
        return Response(ReviewCountsSerializer(body).data)

    @extend_schema(request=None, responses={202: ReviewCountsSerializer})
    def post(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        # Outside any transaction, as the scan request wants (one guarded UPDATE; eager Celery scans right here).
        queued = overlaps_scan_request(dataset.pk, at_once=True)
        audit_record(
            dataset=dataset,
            actor=request.user,
            action="review.overlap_scan",
            parameters={},
            result={"queued": queued},
        )
        body = {
            "counts": review_counts(dataset),
            "unchecked_boxes": unchecked_boxes(dataset).count(),
            "scan_queued": queued,
        }
        return Response(ReviewCountsSerializer(body).data, status=status.HTTP_202_ACCEPTED)


class RecentDecisionSerializer(serializers.ModelSerializer):
    reviewer = serializers.CharField(source="reviewer.username")
    decision = serializers.CharField(help_text="review.Decision, or undo.")
    kind = serializers.CharField(source="item.kind")
    item_state = serializers.CharField(source="item.state")
    image = serializers.IntegerField(source="item.image_id", allow_null=True)
    undone = serializers.SerializerMethodField(help_text="An undo row points at this decision.")
    undo_refused = serializers.SerializerMethodField(
        help_text="Why this decision cannot be undone (its pipeline has acted on it), or empty when it can."
    )

    class Meta:
        model = ReviewDecision
        fields = ["id", "item", "kind", "item_state", "image", "decision", "reviewer", "reason", "undoes", "undone",
                  "undo_refused", "created_at"]  # fmt: skip

    def get_undone(self, decision) -> bool:
        return hasattr(decision, "undone_by")

    def get_undo_refused(self, decision) -> str:
        return "" if decision.decision == Decision.UNDO else undo_refusal(decision.item)


class DatasetReviewDecisionsView(APIView):
    """The dataset's review decisions, newest first (paginated), with whether each was undone; an organizer
    undoes one with `POST review/decisions/{id}/undo`."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(
        operation_id="v1_datasets_review_decisions_list",
        parameters=[PAGE_PARAMETER],
        responses=paginated(RecentDecisionSerializer, "RecentDecisionPage"),
    )
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        paginator = strict_paginator(50)
        qs = (
            ReviewDecision.objects.filter(item__dataset=dataset)
            .select_related("reviewer", "item", "undone_by")
            .order_by("-id")
        )
        page = paginator.paginate_queryset(qs, request, view=self)
        return paginator.get_paginated_response(RecentDecisionSerializer(page, many=True).data)
