"""Thin DRF views of the review queues: next item, decide, skip, take back and summary for reviewers; undo for
organizers."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.generics import get_object_or_404
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.queue import IdempotencyKey, KeyInvalid
from annotation.scoping import reviewer_datasets
from config.dbconnection import KEY_HEADER, idempotent_by_key
from config.errors import Conflict
from config.pagination import PAGE_PARAMETER, paginated, strict_paginator
from config.queryparams import query_id, query_id_list
from config.roles import ORGANIZERS, REVIEWERS, IsOrganizer, IsReviewer, has_role
from consensus.api import organizer_datasets

from . import bulk, decisions, errors, leasing, selectors
from .models import Decision, ItemState, ReviewDecision, ReviewItem, ReviewKind
from .serializers import (
    DecideManyResultSerializer,
    DecideManySerializer,
    DecideSerializer,
    ReviewDecisionSerializer,
    ReviewItemSerializer,
    UndoSerializer,
)

ITEM_RELATED = ("image", "box_a__concept", "box_a__image", "box_b__concept")


class NextItemView(APIView):
    """Lease the next review item to the calling reviewer (or return the one they hold)."""

    permission_classes = [IsAuthenticated, IsReviewer]

    @extend_schema(
        parameters=[
            OpenApiParameter("dataset", int, description="Only items of this dataset."),
            OpenApiParameter(
                "kinds", str, description="Comma-separated kinds: duplicate, cross_class, ambiguous."
            ),
            OpenApiParameter("skip", str, description="Comma-separated item ids not to be given again."),
        ],
        responses={200: ReviewItemSerializer, 204: OpenApiResponse(description="The queue is empty.")},
    )
    def get(self, request):
        params = request.query_params
        kinds = _kinds(params)
        item = leasing.review_lease_next(
            reviewer=request.user,
            dataset_id=query_id(params, "dataset"),
            kinds=kinds or None,
            skip=query_id_list(params, "skip"),
        )
        if item is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        item = ReviewItem.objects.select_related(*ITEM_RELATED).get(pk=item.pk)
        return Response(ReviewItemSerializer(item).data)


def _kinds(params) -> list[str]:
    kinds = [k for k in params.get("kinds", "").split(",") if k]
    unknown = sorted(set(kinds) - set(ReviewKind.values))
    if unknown:
        raise ValidationError({"kinds": f"unknown kinds {unknown}; known: {', '.join(ReviewKind.values)}"})
    return kinds


class ItemsView(APIView):
    """The items a reviewer may decide now, to pick many at once: open ones, expired leases and the caller's
    own, by priority (paginated, 50 a page); decide the chosen ones with `POST review/decide`."""

    permission_classes = [IsAuthenticated, IsReviewer]

    @extend_schema(
        operation_id="v1_review_items_list",
        parameters=[
            OpenApiParameter("dataset", int, description="Only items of this dataset."),
            OpenApiParameter(
                "kinds", str, description="Comma-separated kinds: duplicate, cross_class, ambiguous."
            ),
            PAGE_PARAMETER,
        ],
        responses=paginated(ReviewItemSerializer, "ReviewItemPage"),
    )
    def get(self, request):
        params = request.query_params
        kinds = _kinds(params)
        dataset_id = query_id(params, "dataset")
        now = timezone.now()
        mine = ReviewItem.objects.filter(
            state=ItemState.LEASED, leased_to=request.user, lease_expires_at__gt=now
        )
        if dataset_id is not None:
            mine = mine.filter(dataset_id=dataset_id)
        if kinds:
            mine = mine.filter(kind__in=kinds)
        available = selectors.review_items_available(
            now=now, dataset_id=dataset_id, kinds=kinds or None, reviewer=request.user
        )
        qs = (available | mine).select_related(*ITEM_RELATED).order_by("-priority", "id")
        paginator = strict_paginator(50)
        page = paginator.paginate_queryset(qs, request, view=self)
        return paginator.get_paginated_response(ReviewItemSerializer(page, many=True).data)


class DecideManyView(APIView):
    """Take one decision on many items (the reviewer page's "decide selected"): each item is leased to you and
    decided in its own transaction, with one outcome per item (`review/bulk.py`). Idempotent: sending the same
    request again reports `already_decided` and changes nothing."""

    permission_classes = [IsAuthenticated, IsReviewer]

    @extend_schema(request=DecideManySerializer, responses={200: DecideManyResultSerializer})
    def post(self, request):
        form = DecideManySerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        outcomes = bulk.review_decide_many(
            item_ids=data["items"], reviewer=request.user, decision=data["decision"], reason=data["reason"]
        )
        refused = sum(o.status == "refused" for o in outcomes)
        body = {"results": outcomes, "decided": len(outcomes) - refused, "refused": refused}
        return Response(DecideManyResultSerializer(body).data)


class DecideView(APIView):
    """Decide the item you hold; 409 if someone else holds it or it was decided already."""

    permission_classes = [IsAuthenticated, IsReviewer]

    @extend_schema(
        request=DecideSerializer,
        parameters=[
            OpenApiParameter(
                "Idempotency-Key",
                str,
                OpenApiParameter.HEADER,
                required=False,
                description="A key chosen by the client for this decision (1 to 128 characters). A request sent "
                "again with the same key (its answer lost, or a 5xx) is answered 200 with the decision the "
                "first one recorded and changes nothing; without a key a repeated decision is refused (409).",
            )
        ],
        responses={201: ReviewDecisionSerializer, 200: ReviewDecisionSerializer},
    )
    @idempotent_by_key
    def post(self, request, pk: int):
        item = get_object_or_404(selectors.reviewer_items(request.user), pk=pk)
        form = DecideSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        key = ""
        if KEY_HEADER in request.headers:
            try:
                key = IdempotencyKey.parse(request.headers[KEY_HEADER]).value
            except KeyInvalid:
                raise ValidationError(
                    {"Idempotency-Key": "send an Idempotency-Key header of 1 to 128 characters, or none"}
                ) from None
        try:
            result = decisions.review_decide_keyed(
                item=item,
                reviewer=request.user,
                decision=form.validated_data["decision"],
                new_concept=form.validated_data.get("new_concept"),
                reason=form.validated_data["reason"],
                idempotency_key=key,
            )
        except errors.InvalidDecision as exc:
            raise ValidationError({"decision": str(exc)}) from None
        except errors.ReviewError as exc:
            raise Conflict(str(exc), code=exc.code) from None
        code = status.HTTP_200_OK if result.replayed else status.HTTP_201_CREATED
        return Response(ReviewDecisionSerializer(result.decision).data, status=code)


class ReleaseView(APIView):
    """Skip the item you hold: it goes back to the queue for other reviewers."""

    permission_classes = [IsAuthenticated, IsReviewer]

    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT})
    def post(self, request, pk: int):
        item = get_object_or_404(selectors.reviewer_items(request.user), pk=pk)
        try:
            leasing.review_release(item=item, reviewer=request.user)
        except errors.ReviewError as exc:
            raise Conflict(str(exc), code=exc.code) from None
        return Response({"id": item.pk, "state": "open"})


class UndoView(APIView):
    """Revert a decision on a dataset you organize and reopen its item; or, as a reviewer, take back your own
    latest decision within a few minutes (the item comes back to you)."""

    permission_classes = [IsAuthenticated, IsOrganizer | IsReviewer]

    def get_queryset(self):
        user = self.request.user
        if user.is_superuser:
            return ReviewDecision.objects.all()
        organized = Q(item__dataset__organizers=user) if has_role(user, ORGANIZERS) else Q(pk__in=[])
        return ReviewDecision.objects.filter(organized | Q(reviewer=user)).distinct()

    def _check_reviewer_undo(self, decision: ReviewDecision) -> None:
        """A reviewer who does not organize the dataset undoes only their own latest decision, while it is fresh."""
        user = self.request.user
        if user.is_superuser or decision.item.dataset.organizers.filter(pk=user.pk).exists():
            return
        latest = (
            ReviewDecision.objects.filter(reviewer=user)
            .exclude(decision=Decision.UNDO)
            .order_by("-id")
            .first()
        )
        if latest is None or latest.pk != decision.pk:
            raise Conflict("a reviewer can take back only their own latest decision")
        window = settings.CROWDLABEL["REVIEW_UNDO_SECONDS"]
        if timezone.now() - decision.created_at > timedelta(seconds=window):
            raise Conflict(
                f"a decision can be taken back within {window} seconds; ask an organizer to undo it"
            )

    @extend_schema(request=UndoSerializer, responses={201: ReviewDecisionSerializer})
    def post(self, request, pk: int):
        decision = get_object_or_404(self.get_queryset().select_related("item__dataset"), pk=pk)
        form = UndoSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        self._check_reviewer_undo(decision)
        try:
            undo = decisions.review_undo(
                decision=decision, organizer=request.user, reason=form.validated_data["reason"]
            )
        except errors.InvalidDecision as exc:
            raise ValidationError({"decision": str(exc)}) from None
        except errors.ReviewError as exc:
            raise Conflict(str(exc), code=exc.code) from None
        return Response(ReviewDecisionSerializer(undo).data, status=status.HTTP_201_CREATED)


class SummaryView(APIView):
    """Counts of review items per kind and state: the whole queue for reviewers, an organizer's own datasets
    for organizers."""

    permission_classes = [IsAuthenticated, IsReviewer | IsOrganizer]

    @extend_schema(
        parameters=[OpenApiParameter("dataset", int, description="Only items of this dataset.")],
        responses={
            200: OpenApiTypes.OBJECT,
            404: OpenApiResponse(description="An organizer named a dataset that is not theirs."),
        },
    )
    def get(self, request):
        # Reviewers work the queue of the datasets they may review (every dataset when unscoped); an organizer
        # sees only their own datasets' items.
        if has_role(request.user, REVIEWERS):
            datasets = reviewer_datasets(request.user) if not request.user.is_superuser else None
        else:
            datasets = organizer_datasets(request.user)
        dataset_id = query_id(request.query_params, "dataset")
        if dataset_id is not None and datasets is not None and not datasets.filter(pk=dataset_id).exists():
            raise NotFound("No dataset of yours has this id.")
        counts = selectors.review_summary(dataset_id=dataset_id, datasets=datasets)
        return Response({"counts": counts})
