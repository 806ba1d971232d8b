"""Organizer views of gold: create and list gold items, see worker scores with their evidence, list payment
recommendations. Workers never reach any of this; they see gold only as ordinary tasks."""

from __future__ import annotations

from django.db import transaction
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import Box
from config.roles import IsOrganizer
from consensus.api import concept_by_wnid, organizer_dataset

from . import services
from .items import GoldInvalid, GoldSpec, gold_items_create
from .models import Block, GoldItem, GoldSettings, PaymentDecision, WorkerScore
from .serializers import (
    GoldItemCreateSerializer,
    GoldItemSerializer,
    GoldSettingsSerializer,
    PaymentDecisionSerializer,
    WorkerScoreSerializer,
)
from .serving import gold_pool_fill


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
        return Response(form.data)
