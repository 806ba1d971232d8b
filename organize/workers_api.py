"""The dataset's workers (invited to it, or who answered its tasks) with their answer counts and standing, and
an organizer's block or unblock with a reason (`gold.services.worker_block_set`)."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Exists, OuterRef, Value
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.audit import audit_record
from annotation.models import Assignment, DatasetGrant, WorkerTally
from annotation.scoping import organizer_datasets, organizer_datasets_named
from config.bounds import id_integer
from config.roles import IsOrganizer
from crowd.grants import NotYourWorker, ScopeRefused, worker_scope_set
from crowd.models import Invitation, Worker
from gold.models import Block, BlockAction
from gold.services import worker_block_set

from .people_api import ScopeDatasetSerializer
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
    scoped = serializers.BooleanField(
        help_text="Whether the worker may take tasks of their granted datasets only; false: of every dataset."
    )
    datasets = ScopeDatasetSerializer(
        many=True, help_text="The worker's granted datasets that you organize (empty when unscoped)."
    )
    other_datasets = serializers.IntegerField(help_text="Granted datasets of other organizers (not named).")


class ScopeRequestSerializer(serializers.Serializer):
    datasets = serializers.ListField(
        child=id_integer(),
        max_length=1000,
        help_text="The datasets you organize that the worker may take tasks of (ids); your datasets not named are "
        "taken out of their scope, other organizers' are kept. Effective at the worker's next lease.",
    )


class BlockRequestSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=500)


def dataset_worker_answers(dataset) -> dict[int, int]:
    """worker id -> submitted answers in the dataset, for everyone who answered there (the per-worker counter
    rows, one per worker: no grouping of the dataset's answers), its invited workers and the workers granted
    it (invited to another dataset with a scope naming this one), the last two in one query."""
    answers = dict(WorkerTally.objects.filter(dataset=dataset).order_by().values_list("worker_id", "answers"))
    invited = (
        Invitation.objects.filter(dataset=dataset, accepted_by__worker__isnull=False)
        .order_by()
        .values_list("accepted_by__worker", flat=True)
    )
    granted = DatasetGrant.objects.filter(dataset=dataset).order_by().values_list("worker_id", flat=True)
    for worker_id in invited.union(granted):
        answers.setdefault(worker_id, 0)
    return answers


def worker_known(dataset, worker_id: int) -> bool:
    """Whether the worker answered or leased the dataset's tasks, accepted one of its invitations or was
    granted it. A worker who answered there has a counter row (one index lookup); only the others are looked
    for among their own assignments."""
    return (
        WorkerTally.objects.filter(dataset=dataset, worker_id=worker_id).exists()
        or Assignment.objects.filter(task__dataset=dataset, worker_id=worker_id).exists()
        or Invitation.objects.filter(dataset=dataset, accepted_by__worker=worker_id).exists()
        or DatasetGrant.objects.filter(dataset=dataset, worker_id=worker_id).exists()
    )


def worker_scopes(viewer, worker_ids) -> dict[int, tuple[list[dict], int]]:
    """worker id -> (their granted datasets that `viewer` organizes, by id, as {id, name}; how many others)
    for the scoped workers among `worker_ids`, in one query; an unscoped worker (no grant) is absent."""
    visible = (
        Value(True)
        if viewer.is_superuser
        else Exists(organizer_datasets(viewer).filter(pk=OuterRef("dataset_id")))
    )
    scopes: dict[int, tuple[list[dict], int]] = {}
    for worker_id, dataset_id, name, shown in (
        DatasetGrant.objects.filter(worker_id__in=worker_ids)
        .annotate(shown=visible)
        .order_by("worker_id", "dataset_id")
        .values_list("worker_id", "dataset_id", "dataset__name", "shown")
    ):
        named, others = scopes.get(worker_id, ([], 0))
        if shown:
            named.append({"id": dataset_id, "name": name})
        else:
            others += 1
        scopes[worker_id] = (named, others)
    return scopes


def dataset_workers(dataset, viewer, only: int | None = None) -> list[dict]:
    """The People list's rows (the first LIMIT workers by id), or the one row of worker `only`, as `viewer`
    (an organizer of the dataset) sees them: the datasets a scoped worker may work on are named only where
    the viewer organizes them."""
    if only is None:
        answers = dataset_worker_answers(dataset)
        ids = sorted(answers)[:LIMIT]
    else:
        answers = dict(
            WorkerTally.objects.filter(dataset=dataset, worker_id=only).values_list("worker_id", "answers")
        )
        ids = [only]
    gold_blocked = set(
        Block.objects.filter(dataset=dataset, worker_id__in=ids).values_list("worker_id", flat=True)
    )
    latest: dict[int, tuple[bool, str]] = {}  # the latest organizer's action per worker: (blocked, reason)
    for worker_id, blocked, reason in (
        BlockAction.objects.filter(dataset=dataset, worker_id__in=ids)
        .order_by("id")
        .values_list("worker_id", "blocked", "reason")
    ):
        latest[worker_id] = (blocked, reason)
    scopes = worker_scopes(viewer, ids)
    rows = []
    for worker_id, username, source in (
        Worker.objects.filter(pk__in=ids).order_by("pk").values_list("pk", "user__username", "source")
    ):
        blocked, reason = latest.get(worker_id, (False, ""))
        by_gold = worker_id in gold_blocked
        rows.append(
            {
                "worker": worker_id,
                "username": username,
                "source": source,
                "answers": answers.get(worker_id, 0),
                "blocked": blocked or by_gold,
                "blocked_by": "organizer" if blocked else ("gold" if by_gold else None),
                "reason": reason,
                "scoped": worker_id in scopes,
                "datasets": scopes.get(worker_id, ([], 0))[0],
                "other_datasets": scopes.get(worker_id, ([], 0))[1],
            }
        )
    return rows


class DatasetWorkersView(APIView):
    """The dataset's workers who answered its tasks, accepted its invitations or were granted it (at most 500,
    by id): answers, whether (and by whom) they are blocked, and the datasets a scoped worker may work on."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=DatasetWorkerSerializer(many=True))
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        return Response(DatasetWorkerSerializer(dataset_workers(dataset, request.user), many=True).data)


class WorkerBlockView(APIView):
    """Block (`block`) or unblock (`unblock`) one of the dataset's workers, with a reason. Blocking ends their
    leases in the dataset and keeps them from all its tasks; unblocking lifts only an organizer's block."""

    permission_classes = [IsAuthenticated, IsOrganizer]
    blocked = True

    @extend_schema(request=BlockRequestSerializer, responses=DatasetWorkerSerializer)
    def post(self, request, dataset_id: int, worker_id: str):
        worker_id = int(worker_id)
        dataset = organizer_dataset(request.user, dataset_id)
        if not worker_known(dataset, worker_id):
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
        (row,) = dataset_workers(dataset, request.user, only=worker_id)
        return Response(DatasetWorkerSerializer(row).data)


class WorkerUnblockView(WorkerBlockView):
    blocked = False


class WorkerScopeView(APIView):
    """Change which of your datasets an accepted worker (one who accepted your invitation, or holds a grant of
    one of your datasets) may take tasks of. Effective at their next lease; a lease they already hold on a
    dataset taken out of their scope may still be answered (it ends with its lease time). A worker keeps at
    least one dataset (400 otherwise): without any they would be unscoped."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(request=ScopeRequestSerializer, responses=DatasetWorkerSerializer)
    def put(self, request, dataset_id: int, worker_id: str):
        worker_id = int(worker_id)
        dataset = organizer_dataset(request.user, dataset_id)
        if not worker_known(dataset, worker_id):
            raise NotFound("No such worker in this dataset.")
        form = ScopeRequestSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        scope = organizer_datasets_named(request.user, form.validated_data["datasets"])
        try:
            worker_scope_set(
                worker=Worker.objects.get(pk=worker_id),
                organizer=request.user,
                datasets=scope,
                audit_dataset=dataset,
            )
        except NotYourWorker as exc:
            raise NotFound(f"{exc}: only a worker you invited has a scope you can change") from None
        except ScopeRefused as exc:
            raise ValidationError({"datasets": str(exc)}) from None
        (row,) = dataset_workers(dataset, request.user, only=worker_id)
        return Response(DatasetWorkerSerializer(row).data)
