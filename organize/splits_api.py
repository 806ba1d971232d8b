"""Split versions from the browser: compute one (a preview: seed, ratios and the counts per split, stratified by
class as `benchmark.splits` does), then freeze it. The logic is `benchmark.services`; the CLI is `make_splits`."""

from __future__ import annotations

from django.db import transaction
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.audit import audit_record
from benchmark.models import SplitVersion
from benchmark.services import BenchmarkError, split_version_create, split_version_freeze
from benchmark.splits import SplitRatios
from config.roles import IsOrganizer

from .scoping import organizer_dataset


class SplitRequestSerializer(serializers.Serializer):
    train = serializers.FloatField(min_value=0, max_value=1, default=0.6)
    val = serializers.FloatField(min_value=0, max_value=1, default=0.13)
    test = serializers.FloatField(min_value=0, max_value=1, default=0.27)
    seed = serializers.IntegerField(min_value=0, default=0)

    def validate(self, data):
        try:
            data["ratios"] = SplitRatios(data["train"], data["val"], data["test"])
        except ValueError as exc:
            raise serializers.ValidationError({"ratios": str(exc)}) from None
        return data


class SplitVersionSerializer(serializers.ModelSerializer):
    class Meta:
        model = SplitVersion
        fields = ["number", "seed", "ratios", "frozen", "manifest", "created_at"]


class SplitVersionsView(APIView):
    """The dataset's split versions (newest first); POST computes a new, unfrozen one to look at."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=SplitVersionSerializer(many=True))
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        versions = SplitVersion.objects.filter(dataset=dataset).order_by("-number")[:50]
        return Response(SplitVersionSerializer(versions, many=True).data)

    @extend_schema(request=SplitRequestSerializer, responses={201: SplitVersionSerializer})
    def post(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        form = SplitRequestSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        try:
            with transaction.atomic():
                version = split_version_create(dataset=dataset, ratios=data["ratios"], seed=data["seed"])
                audit_record(
                    dataset=dataset,
                    actor=request.user,
                    action="splits.compute",
                    parameters={k: data[k] for k in ("train", "val", "test", "seed")},
                    result={"version": version.number, "counts": version.manifest.get("counts", {})},
                )
        except BenchmarkError as exc:
            raise ValidationError({"ratios": str(exc)}) from None
        return Response(SplitVersionSerializer(version).data, status=status.HTTP_201_CREATED)


class SplitFreezeView(APIView):
    """Freeze a split version: it never changes again, and the next version keeps its val and test images."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(request=None, responses=SplitVersionSerializer)
    def post(self, request, dataset_id: int, number: int):
        dataset = organizer_dataset(request.user, dataset_id)
        version = get_object_or_404(SplitVersion, dataset=dataset, number=number)
        with transaction.atomic():
            was_frozen = version.frozen
            version = split_version_freeze(version=version)
            if not was_frozen:
                audit_record(
                    dataset=dataset,
                    actor=request.user,
                    action="splits.freeze",
                    parameters={"version": number},
                )
        return Response(SplitVersionSerializer(version).data)
