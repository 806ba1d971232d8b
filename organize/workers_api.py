"""The dataset's workers (invited to it, or who answered its tasks) with their answer counts and standing, and
an organizer's block or unblock with a reason (`gold.services.worker_block_set`)."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Count, Q
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.audit import audit_record
from annotation.models import Assignment, AssignmentState
from config.roles import IsOrganizer
from crowd.models import Invitation, Worker
from gold.models import Block, BlockAction
from gold.services import worker_block_set

from .scoping import organizer_dataset

LIMIT = 500


class DatasetWorkerSerializer(serializers.Serializer):
    worker = serializers.IntegerField()
    username = serializers.CharField()
    source = serializers.CharField()
    answers = serializers.IntegerField(help_text="Submitted answers in this dataset.")
    blocked = serializers.BooleanField()
    blocked_by = serializers.ChoiceField(choices=["organizer", "gold"], allow_null=True)
    reason = serializers.CharField(allow_blank=True, help_text="The organizer's latest reason, if any.")


class BlockRequestSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=500)


def dataset_worker_ids(dataset) -> dict[int, int]:
    """worker id -> submitted answers in the dataset, for its invited workers and everyone who answered there."""
    answers = dict(
        Assignment.objects.filter(task__dataset=dataset)
        .values_list("worker")
        .annotate(n=Count("id", filter=Q(state=AssignmentState.SUBMITTED)))
    )
    invited = Invitation.objects.filter(dataset=dataset, accepted_by__worker__isnull=False)
    for worker_id in invited.values_list("accepted_by__worker", flat=True):
        answers.setdefault(worker_id, 0)
    return answers


def dataset_workers(dataset) -> list[dict]:
    answers = dataset_worker_ids(dataset)
    ids = sorted(answers)[:LIMIT]
    gold_blocked = set(
        Block.objects.filter(dataset=dataset, worker_id__in=ids).values_list("worker_id", flat=True)
    )
    latest: dict[int, BlockAction] = {}
    for action in BlockAction.objects.filter(dataset=dataset, worker_id__in=ids).order_by("id"):
        latest[action.worker_id] = action
    rows = []
    for worker in Worker.objects.filter(pk__in=ids).select_related("user").order_by("pk"):
        action = latest.get(worker.pk)
        by_organizer = action is not None and action.blocked
        rows.append(
            {
                "worker": worker.pk,
                "username": worker.user.username,
                "source": worker.source,
                "answers": answers[worker.pk],
                "blocked": by_organizer or worker.pk in gold_blocked,
                "blocked_by": "organizer"
                if by_organizer
                else ("gold" if worker.pk in gold_blocked else None),
                "reason": action.reason if action else "",
            }
        )
    return rows


class DatasetWorkersView(APIView):
    """The dataset's workers (at most 500, by id): answers, and whether (and by whom) they are blocked."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=DatasetWorkerSerializer(many=True))
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        return Response(DatasetWorkerSerializer(dataset_workers(dataset), many=True).data)


class WorkerBlockView(APIView):
    """Block (`block`) or unblock (`unblock`) one of the dataset's workers, with a reason. Blocking ends their
    leases in the dataset and keeps them from all its tasks; unblocking lifts only an organizer's block."""

    permission_classes = [IsAuthenticated, IsOrganizer]
    blocked = True

    @extend_schema(request=BlockRequestSerializer, responses=DatasetWorkerSerializer)
    def post(self, request, dataset_id: int, worker_id: str):
        worker_id = int(worker_id)
        dataset = organizer_dataset(request.user, dataset_id)
        if worker_id not in dataset_worker_ids(dataset):
            raise NotFound("No such worker in this dataset.")
        form = BlockRequestSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        reason = form.validated_data["reason"]
        if not reason.strip():
            raise ValidationError({"reason": "give a reason"})
        worker = Worker.objects.get(pk=worker_id)
        with transaction.atomic():
            worker_block_set(
                worker=worker, dataset_id=dataset.pk, blocked=self.blocked, reason=reason, actor=request.user
            )
            audit_record(
                dataset=dataset,
                actor=request.user,
                action="worker.block" if self.blocked else "worker.unblock",
                parameters={"worker": worker_id, "reason": reason},
            )
        row = next(r for r in dataset_workers(dataset) if r["worker"] == worker_id)
        return Response(DatasetWorkerSerializer(row).data)


class WorkerUnblockView(WorkerBlockView):
    blocked = False
