"""Organizer API of the MTurk provider: plan and publish a batch of HITs, ask for a sync."""

from __future__ import annotations

from django.db import transaction
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import kinds
from annotation.models import Dataset
from config.bounds import id_integer
from config.roles import IsOrganizer

from . import mturk as mturk_tasks
from .providers import mturk


class PublishSerializer(serializers.Serializer):
    dataset = serializers.PrimaryKeyRelatedField(queryset=Dataset.objects.all(), pk_field=id_integer())
    kind = serializers.CharField()
    count = serializers.IntegerField(min_value=1, max_value=10_000, help_text="Number of HITs.")
    max_assignments = serializers.IntegerField(
        min_value=1, max_value=1000, help_text="Assignments (bundles) per HIT. 10 or more costs a 40% fee."
    )

    def validate_kind(self, kind):
        if kind not in kinds.names():
            raise ValidationError(f"unknown task kind {kind!r}; known: {', '.join(kinds.names())}")
        return kind

    def validate_dataset(self, dataset):
        user = self.context["request"].user
        if not user.is_superuser and not dataset.organizers.filter(pk=user.pk).exists():
            raise ValidationError("you do not organize this dataset")
        return dataset


class BatchSerializer(serializers.Serializer):
    batch = serializers.CharField()
    hits = serializers.IntegerField()
    max_assignments = serializers.IntegerField()
    estimated_cost = serializers.DecimalField(
        max_digits=12, decimal_places=2, help_text="US$, with MTurk's fees."
    )
    budget_left = serializers.DecimalField(max_digits=12, decimal_places=2)


class PublishView(APIView):
    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(
        request=PublishSerializer,
        responses={
            202: BatchSerializer,
            400: OpenApiResponse(description="Bad input, no HIT type or budget, or over the budget."),
        },
        operation_id="mturk_hits_publish",
    )
    def post(self, request):
        """Plan a batch of HITs (budget checked first, nothing sent yet) and publish it in the background.
        The same as `manage.py publish_hits`."""
        form = PublishSerializer(data=request.data, context={"request": request})
        form.is_valid(raise_exception=True)
        try:
            batch = mturk.hits_plan(**form.validated_data)
        except mturk.MturkError as exc:
            raise ValidationError({"detail": str(exc)}) from None
        transaction.on_commit(lambda: mturk_tasks.hits_publish.delay(batch.batch))
        return Response(BatchSerializer(batch).data, status=status.HTTP_202_ACCEPTED)
