"""The plain vote's organizer API: queue "does this image show CONCEPT?" votes for a dataset's images
(`binary_vote.vote_tasks_create`). The path sits under a dataset (`/api/v1/datasets/{id}/vote-tasks/`), beside
annotation's dataset views."""

from __future__ import annotations

from django.db import transaction
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from annotation.audit import audit_record, request_parameters
from annotation.scoping import organizer_datasets_counted
from annotation.serializers import DatasetSerializer, VoteTasksSerializer, concept_by_wnid, dataset_images
from config.roles import IsOrganizer

from . import binary_vote


class DatasetVotesViewSet(viewsets.GenericViewSet):
    """Plain votes on the calling organizer's datasets."""

    serializer_class = DatasetSerializer
    permission_classes = [IsAuthenticated, IsOrganizer]

    def get_queryset(self):
        return organizer_datasets_counted(
            self.request.user, schema_only=getattr(self, "swagger_fake_view", False)
        )

    @extend_schema(request=VoteTasksSerializer, responses={201: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["post"], url_path="vote-tasks")
    def vote_tasks(self, request, pk=None):
        """Queue "does this image show CONCEPT?" votes for the dataset's images (all by default)."""
        dataset = self.get_object()
        form = VoteTasksSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        concept = concept_by_wnid(data["concept"])
        images = dataset_images(dataset, data)
        with transaction.atomic():
            tasks = binary_vote.vote_tasks_create(
                dataset=dataset,
                concept=concept,
                images=images,
                answers_wanted=data["answers_wanted"],
                priority=data["priority"],
            )
            audit_record(
                dataset=dataset,
                actor=request.user,
                action="vote_tasks.start",
                parameters=request_parameters(data),
                result={"created": len(tasks)},
            )
        return Response({"created": len(tasks)}, status=status.HTTP_201_CREATED)
