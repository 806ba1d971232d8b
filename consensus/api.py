"""Organizer views of the consensus engine: queue verification, dataset settings, decisions, a question's vote
history, a concept's calibration table and the workers' standing on verification. Workers reach questions only
through the task queue."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Prefetch
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import NotFound
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import scoping
from annotation.audit import audit_record, request_parameters
from annotation.models import Dataset
from annotation.scoping import organizer_datasets
from annotation.serializers import concept_by_wnid, dataset_images
from config.queryparams import query_choice
from config.roles import IsOrganizer
from hierarchy.models import Concept

from . import estimates, standing_lease, verification
from .models import ConsensusSettings, Question, QuestionDecision, QuestionKind, QuestionState
from .rebuild import calibration_votes_lowered
from .serializers import (
    CalibrationQuerySerializer,
    CalibrationTableSerializer,
    ConsensusSettingsSerializer,
    ConsensusStandingSerializer,
    QuestionDetailSerializer,
    QuestionSerializer,
    VerificationPlanSerializer,
    VerificationRequestSerializer,
)


def organizer_dataset(request, dataset_id: int) -> Dataset:
    """The request's organizer's dataset, or 404 (`annotation.scoping`)."""
    return scoping.organizer_dataset(request.user, dataset_id)


class ConsensusSettingsView(APIView):
    """How the dataset's binary questions are decided (estimator, target precision, caps, calibration size)."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=ConsensusSettingsSerializer)
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request, dataset_id)
        return Response(ConsensusSettingsSerializer(ConsensusSettings.for_dataset(dataset.pk)).data)

    @extend_schema(request=ConsensusSettingsSerializer, responses=ConsensusSettingsSerializer)
    def patch(self, request, dataset_id: int):
        dataset = organizer_dataset(request, dataset_id)
        form = ConsensusSettingsSerializer(
            ConsensusSettings.for_dataset(dataset.pk), data=request.data, partial=True
        )
        form.is_valid(raise_exception=True)
        before = form.instance.calibration_votes
        with transaction.atomic():
            form.save(dataset=dataset)
            votes = form.instance.calibration_votes
            if votes < before:
                # The questions already collecting calibration votes ask for the new number too.
                calibration_votes_lowered(dataset_id=dataset.pk, votes=votes)
            audit_record(
                dataset=dataset,
                actor=request.user,
                action="consensus_settings.change",
                parameters=form.validated_data,
            )
        return Response(form.data)


class VerificationView(APIView):
    """Queue image verification of candidate images for one concept (ILSVRC §3.1.3)."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(request=VerificationRequestSerializer, responses={201: VerificationPlanSerializer})
    def post(self, request, dataset_id: int):
        dataset = organizer_dataset(request, dataset_id)
        form = VerificationRequestSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        concept = concept_by_wnid(data["concept"])
        images = dataset_images(dataset, data)
        with transaction.atomic():
            plan = verification.verification_queue(
                dataset=dataset, concept=concept, images=images, calibrate=data["calibrate"]
            )
            body = VerificationPlanSerializer(plan).data
            audit_record(
                dataset=dataset,
                actor=request.user,
                action="verification.start",
                parameters=request_parameters(data),
                result=body,
            )
        return Response(body, status=status.HTTP_201_CREATED)


class DecisionListView(generics.ListAPIView):
    """The dataset's questions with their state and latest decision, oldest first."""

    serializer_class = QuestionSerializer
    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(
        parameters=[
            OpenApiParameter("concept", str, description="Only this concept (wnid)."),
            OpenApiParameter("kind", str, enum=QuestionKind.values, description="Only this question kind."),
            OpenApiParameter(
                "state", str, enum=QuestionState.values, description="Only questions in this state."
            ),
        ]
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        dataset = organizer_dataset(self.request, self.kwargs["dataset_id"])
        qs = Question.objects.filter(dataset=dataset).select_related("concept")
        params = self.request.query_params
        if params.get("concept"):
            qs = qs.filter(concept=concept_by_wnid(params["concept"]))
        if kind := query_choice(params, "kind", QuestionKind.values):
            qs = qs.filter(kind=kind)
        if state := query_choice(params, "state", QuestionState.values):
            qs = qs.filter(state=state)
        rows = QuestionDecision.objects.order_by("id")
        return qs.prefetch_related(Prefetch("decisions", queryset=rows, to_attr="decision_rows")).order_by(
            "id"
        )


class QuestionDetailView(generics.RetrieveAPIView):
    """One question with its whole vote history (worker ids, answers, times) and decisions."""

    serializer_class = QuestionDetailSerializer
    permission_classes = [IsAuthenticated, IsOrganizer]

    def get_queryset(self):
        return (
            Question.objects.filter(dataset__in=organizer_datasets(self.request.user))
            .select_related("concept")
            .prefetch_related(
                "votes", Prefetch("decisions", queryset=QuestionDecision.objects.order_by("id"))
            )
        )


class CalibrationTableView(APIView):
    """A concept's calibration table in use for a question kind, with its data size and creation time."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(
        parameters=[OpenApiParameter("kind", str, description="Question kind (default image_verify).")],
        responses=CalibrationTableSerializer,
    )
    def get(self, request, wnid: str):
        concept = Concept.objects.filter(wnid=wnid).first()
        if concept is None:
            raise NotFound(f"no concept with wnid {wnid!r}")
        query = CalibrationQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        kind = query.validated_data["kind"]
        # Tables are shared across datasets; an organizer reads those of concepts their datasets ask about.
        if (
            not request.user.is_superuser
            and not Question.objects.filter(
                concept=concept, dataset__in=organizer_datasets(request.user)
            ).exists()
        ):
            raise NotFound("None of your datasets asks about this concept.")
        row = estimates.table_newest(kind, concept.pk)
        if row is None:
            raise NotFound(f"no {kind} calibration table for {wnid} yet")
        row.concept = concept
        return Response(CalibrationTableSerializer(row).data)


class StandingView(APIView):
    """Each worker's standing on the dataset's verification questions (consensus/standing.py): their
    discrimination under the kind-wide fit, whether they are in good standing, and whether the good-standing
    lease policy keeps the dataset's verification questions from them (consensus/standing_lease.py): a worker
    who sees no verification question can be looked up here."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=ConsensusStandingSerializer)
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request, dataset_id)
        return Response(ConsensusStandingSerializer(standing_lease.dataset_standing(dataset.pk)).data)
