"""The organizer workspace's own read endpoints: a dataset's live progress and its audit trail."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.pagination import PageNumberPagination
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import AuditEntry
from config.roles import IsOrganizer

from .progress import dataset_progress
from .scoping import organizer_dataset


class StageSerializer(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()
    done = serializers.IntegerField()
    total = serializers.IntegerField()
    eta_seconds = serializers.IntegerField(allow_null=True, help_text="Null: no recent progress to go by.")
    rate_per_hour = serializers.FloatField(help_text="Units finished per hour over the recent window.")
    in_review = serializers.IntegerField(required=False)


class ProgressSerializer(serializers.Serializer):
    dataset = serializers.IntegerField()
    images = serializers.IntegerField()
    boxes_drawn = serializers.IntegerField()
    box_jobs_in_review = serializers.IntegerField()
    review_open = serializers.IntegerField()
    window_seconds = serializers.IntegerField(help_text="The window the rates and ETAs are measured over.")
    stages = StageSerializer(many=True)


class AuditEntrySerializer(serializers.ModelSerializer):
    actor = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = AuditEntry
        fields = ["id", "actor", "action", "parameters", "result", "created_at"]


class DatasetProgressView(APIView):
    """Per-stage counts with a rate and an ETA; the dashboard polls this."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=ProgressSerializer)
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        return Response(ProgressSerializer(dataset_progress(dataset)).data)


class DatasetAuditView(APIView):
    """Who started what on the dataset, newest first (paginated)."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=AuditEntrySerializer(many=True))
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        paginator = PageNumberPagination()
        qs = AuditEntry.objects.filter(dataset=dataset).select_related("actor").order_by("-id")
        page = paginator.paginate_queryset(qs, request, view=self)
        return paginator.get_paginated_response(AuditEntrySerializer(page, many=True).data)
