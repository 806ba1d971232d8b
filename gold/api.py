"""Organizer views of gold: create and list gold items, see worker scores with their evidence, list payment
recommendations. Workers never reach any of this; they see gold only as ordinary tasks."""

from __future__ import annotations

from django.db import transaction
from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.audit import audit_record
from annotation.models import Box
from config.roles import IsOrganizer, IsWorker
from consensus.api import concept_by_wnid, organizer_dataset

from . import services
from .items import GoldInvalid, GoldSpec, gold_items_create, gold_items_import_csv
from .models import Block, GoldItem, GoldSettings, PaymentDecision, WorkerScore
from .serializers import (
    GoldItemCreateSerializer,
    GoldItemSerializer,
    GoldSettingsSerializer,
    PaymentDecisionSerializer,
    WorkerScoreSerializer,
)
from .serving import gold_pool_fill
from .standing import worker_standing


class GoldItemListView(generics.ListAPIView):
    """The dataset's gold items (organizers only)."""

    permission_classes = [IsAuthenticated, IsOrganizer]
    serializer_class = GoldItemSerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return GoldItem.objects.none()
        dataset = organizer_dataset(self.request, self.kwargs["dataset_id"])
        return GoldItem.objects.filter(dataset=dataset).select_related("concept").order_by("id")

    @extend_schema(request=GoldItemCreateSerializer, responses={201: GoldItemSerializer})
    def post(self, request, dataset_id: int):
        dataset = organizer_dataset(request, dataset_id)
        form = GoldItemCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        image = dataset.images.filter(pk=data["image"]).first()
        if image is None:
            raise ValidationError({"image": f"no image {data['image']} in this dataset"})
        box = None
        if data.get("box") is not None:
            box = Box.objects.filter(pk=data["box"], image=image).first()
            if box is None:
                raise ValidationError({"box": f"no box {data['box']} on image {image.pk}"})
        spec = GoldSpec(
            kind=data["kind"],
            concept=concept_by_wnid(data["concept"]),
            image=image,
            box=box,
            answer=data["answer"],
            explanation=data["explanation"],
        )
        try:
            (item,) = gold_items_create(dataset=dataset, specs=[spec], created_by=request.user)
        except GoldInvalid as exc:
            raise ValidationError({"detail": exc.errors}) from None
        return Response(GoldItemSerializer(item).data, status=status.HTTP_201_CREATED)


class WorkerScoreListView(generics.ListAPIView):
    """Every worker's record in the dataset per question kind, over all their gold answers (`all`) and over the
    quality verdicts on their boxes (`box_draw`): answers, correct, posterior mean, lower bound, P(accuracy below
    the block threshold), qualified, blocked (from the whole dataset)."""

    permission_classes = [IsAuthenticated, IsOrganizer]
    serializer_class = WorkerScoreSerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return WorkerScore.objects.none()
        dataset = organizer_dataset(self.request, self.kwargs["dataset_id"])
        return (
            WorkerScore.objects.filter(dataset=dataset)
            .select_related("worker__user")
            .order_by("kind", "worker_id")
        )

    def get_serializer_context(self):
        context = super().get_serializer_context()
        if not getattr(self, "swagger_fake_view", False):
            context["blocked"] = set(
                Block.objects.filter(dataset_id=self.kwargs["dataset_id"]).values_list("worker_id", flat=True)
            )
        return context


class PaymentDecisionListView(generics.ListAPIView):
    """Pay recommendations (approve, reject, bonus) per assignment, newest rows last; POST recomputes them."""

    permission_classes = [IsAuthenticated, IsOrganizer]
    serializer_class = PaymentDecisionSerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return PaymentDecision.objects.none()
        dataset = organizer_dataset(self.request, self.kwargs["dataset_id"])
        return PaymentDecision.objects.filter(dataset=dataset).order_by("id")


class PaymentDecideView(APIView):
    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(request=None, responses={200: dict})
    def post(self, request, dataset_id: int):
        dataset = organizer_dataset(request, dataset_id)
        return Response({"added": services.payments_decide(dataset_id=dataset.pk)})


class GoldSettingsView(APIView):
    """The dataset's gold policy: gold rate, qualification size, prior and blocking rule (organizers only)."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=GoldSettingsSerializer)
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request, dataset_id)
        return Response(GoldSettingsSerializer(GoldSettings.for_dataset(dataset.pk)).data)

    @extend_schema(request=GoldSettingsSerializer, responses=GoldSettingsSerializer)
    def patch(self, request, dataset_id: int):
        dataset = organizer_dataset(request, dataset_id)
        form = GoldSettingsSerializer(GoldSettings.for_dataset(dataset.pk), data=request.data, partial=True)
        form.is_valid(raise_exception=True)
        with transaction.atomic():  # the settings and any item still without its pool task, together
            form.save(dataset=dataset)
            gold_pool_fill(dataset_id=dataset.pk)
            audit_record(
                dataset=dataset,
                actor=request.user,
                action="gold_settings.change",
                parameters=form.validated_data,
            )
        return Response(form.data)


class GoldImportSerializer(serializers.Serializer):
    csv = serializers.CharField(
        max_length=5_000_000,
        trim_whitespace=False,
        help_text="CSV text with a header row: kind, concept (wnid), image (id or original file name), box "
        "(id, optional), answer (yes/no), explanation (optional).",
    )


class GoldImportResultSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    items = GoldItemSerializer(many=True)


class GoldImportView(APIView):
    """Import gold items from CSV (the logic of `import_gold`): every row is checked and any bad row stores
    nothing; a 400 lists each problem with its line number. The import is audited."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(request=GoldImportSerializer, responses={201: GoldImportResultSerializer})
    def post(self, request, dataset_id: int):
        dataset = organizer_dataset(request, dataset_id)
        form = GoldImportSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            with transaction.atomic():
                items = gold_items_import_csv(
                    dataset=dataset, text=form.validated_data["csv"].lstrip("\ufeff"), created_by=request.user
                )
                audit_record(
                    dataset=dataset, actor=request.user, action="gold.import", parameters={"rows": len(items)}
                )
        except GoldInvalid as exc:
            raise ValidationError({"errors": exc.errors}) from None
        body = {"created": len(items), "items": items[:100]}
        return Response(GoldImportResultSerializer(body).data, status=status.HTTP_201_CREATED)


class FailedQualificationSerializer(serializers.Serializer):
    dataset_id = serializers.IntegerField()
    dataset = serializers.CharField()
    kind = serializers.CharField(help_text="The question kind the qualification was for.")
    failed_attempts = serializers.IntegerField()
    attempts_allowed = serializers.IntegerField()
    retry_at = serializers.DateTimeField(
        allow_null=True, help_text="When the next attempt may start; null: none left."
    )
    message = serializers.CharField(help_text="What the worker page shows.")


class DatasetBlockSerializer(serializers.Serializer):
    dataset_id = serializers.IntegerField()
    dataset = serializers.CharField()
    message = serializers.CharField(help_text="What the worker page shows.")


class HeldBackSerializer(serializers.Serializer):
    kind = serializers.CharField(help_text="The question kind offered less.")
    message = serializers.CharField(help_text="What the worker page shows.")


class WorkerStandingSerializer(serializers.Serializer):
    qualifications_failed = FailedQualificationSerializer(many=True)
    blocked = DatasetBlockSerializer(many=True)
    held_back = HeldBackSerializer(many=True)


class WorkerStandingView(APIView):
    """The calling worker's own standing: failed qualification attempts that still hold tasks back (with when
    they may try again, or that no attempt is left), the datasets they are blocked in, and the question kinds
    offered to them less for their standing on it (consensus/standing_lease.py). The worker page shows
    it when no task comes, so a worker is told why."""

    permission_classes = [IsAuthenticated, IsWorker]

    @extend_schema(responses=WorkerStandingSerializer)
    def get(self, request):
        failed, blocked, held = worker_standing(request.user.worker)
        body = {"qualifications_failed": failed, "blocked": blocked, "held_back": held}
        return Response(WorkerStandingSerializer(body).data)
