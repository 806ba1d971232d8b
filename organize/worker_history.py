"""A worker's history in one dataset for its organizers: answers per stage with worker-seconds, gold scores,
gold blocks, the organizers' blocks and unblocks with their reasons, and the latest answers (gold ones marked
right or wrong). A fixed number of queries, none grouping the dataset's answers: the answers per stage are the
worker's counter rows (`WorkerStageTally`); only the latest answers (a LIMIT) are read with their tasks."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import Assignment, AssignmentState, WorkerStageTally
from config.roles import IsOrganizer
from crowd.models import Worker
from gold.models import Block, BlockAction, WorkerScore

from .scoping import organizer_dataset
from .workers_api import worker_known

RECENT = 50


class StageAnswersSerializer(serializers.Serializer):
    stage = serializers.CharField()
    answers = serializers.IntegerField()
    worker_seconds = serializers.FloatField()


class GoldScoreSerializer(serializers.ModelSerializer):
    kind = serializers.CharField(help_text="gold.ScoreKind: a question kind, all, or box_draw.")

    class Meta:
        model = WorkerScore
        fields = ["kind", "answered", "correct", "mean", "lower", "p_below", "qualified", "updated_at"]


class GoldBlockSerializer(serializers.ModelSerializer):
    kind = serializers.CharField(help_text="gold.ScoreKind: the evidence that blocked the worker.")

    class Meta:
        model = Block
        fields = ["kind", "answered", "correct", "p_below", "created_at"]


class BlockActionSerializer(serializers.ModelSerializer):
    actor = serializers.CharField(source="actor.username")

    class Meta:
        model = BlockAction
        fields = ["blocked", "reason", "actor", "created_at"]


class RecentAnswerSerializer(serializers.Serializer):
    assignment = serializers.IntegerField()
    stage = serializers.CharField()
    concept = serializers.CharField(allow_null=True)
    image = serializers.IntegerField(allow_null=True)
    answer = serializers.JSONField()
    submitted_at = serializers.DateTimeField()
    seconds = serializers.FloatField(allow_null=True)
    gold_correct = serializers.BooleanField(allow_null=True, help_text="Null: not a gold question.")


class WorkerHistorySerializer(serializers.Serializer):
    worker = serializers.IntegerField()
    username = serializers.CharField()
    source = serializers.CharField()
    joined = serializers.DateTimeField()
    stages = StageAnswersSerializer(many=True)
    gold_scores = GoldScoreSerializer(many=True)
    gold_blocks = GoldBlockSerializer(many=True)
    block_actions = BlockActionSerializer(many=True)
    recent = RecentAnswerSerializer(many=True, help_text=f"The latest {RECENT} submitted answers.")


def worker_history(dataset, worker: Worker) -> dict:
    # The worker's answers in the dataset newest first, on their (worker, dataset, -id) index: the walk stops at
    # the RECENT-th whatever the worker answered elsewhere (the answers per stage are counter rows).
    mine = Assignment.objects.filter(worker=worker, dataset=dataset, state=AssignmentState.SUBMITTED)
    stages = [
        {"stage": stage, "answers": answers, "worker_seconds": round(microseconds / 1_000_000, 1)}
        for stage, answers, microseconds in WorkerStageTally.objects.filter(
            dataset=dataset, worker=worker, answers__gt=0
        )
        .order_by("stage")
        .values_list("stage", "answers", "worker_microseconds")
    ]
    recent = []
    for a in mine.select_related("task__question", "task__concept", "gold").order_by("-id")[:RECENT]:
        task = a.task
        question = getattr(task, "question", None)
        recent.append(
            {
                "assignment": a.pk,
                "stage": question.kind if question is not None else task.kind,
                "concept": task.concept.wnid if task.concept_id else None,
                "image": task.image_id,
                "answer": a.answer,
                "submitted_at": a.submitted_at,
                "seconds": (a.submitted_at - a.leased_at).total_seconds() if a.submitted_at else None,
                "gold_correct": a.gold.correct if hasattr(a, "gold") else None,
            }
        )
    return {
        "worker": worker.pk,
        "username": worker.user.username,
        "source": worker.source,
        "joined": worker.created_at,
        "stages": stages,
        "gold_scores": WorkerScore.objects.filter(dataset=dataset, worker=worker).order_by("kind"),
        "gold_blocks": Block.objects.filter(dataset=dataset, worker=worker).order_by("id"),
        "block_actions": BlockAction.objects.filter(dataset=dataset, worker=worker)
        .select_related("actor")
        .order_by("-id"),
        "recent": recent,
    }


class WorkerHistoryView(APIView):
    """A worker's history in the dataset: a worker who neither answered its tasks, accepted one of its
    invitations nor was granted it answers 404, like one of another dataset."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=WorkerHistorySerializer)
    def get(self, request, dataset_id: int, worker_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        worker = get_object_or_404(Worker.objects.select_related("user"), pk=worker_id)
        if not worker_known(dataset, worker.pk):
            raise NotFound(f"worker {worker_id} has not worked in this dataset")
        return Response(WorkerHistorySerializer(worker_history(dataset, worker)).data)
