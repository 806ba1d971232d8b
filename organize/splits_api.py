"""Split versions from the browser: compute one (a preview: seed, ratios, source rules and the counts per split,
stratified by class as `benchmark.splits` does), then freeze it. The logic is `benchmark.services`; the CLI is `make_splits`."""

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
from config.bounds import bounded_integer
from config.roles import IsOrganizer

from .scoping import organizer_dataset


class SourceRuleSerializer(serializers.Serializer):
    """Other shares for the images whose recorded source starts with `source` (`make_splits --source-rule`)."""

    source = serializers.CharField(max_length=500, help_text="A prefix of the images' source (longest wins).")
    train = serializers.FloatField(min_value=0, max_value=1)
    val = serializers.FloatField(min_value=0, max_value=1)
    test = serializers.FloatField(min_value=0, max_value=1)

    def validate(self, data):
        try:
            data["ratios"] = SplitRatios(data["train"], data["val"], data["test"])
        except ValueError as exc:
            raise serializers.ValidationError(f"source {data['source']!r}: {exc}") from None
        return data


class SplitRequestSerializer(serializers.Serializer):
    train = serializers.FloatField(min_value=0, max_value=1, default=0.6)
    val = serializers.FloatField(min_value=0, max_value=1, default=0.13)
    test = serializers.FloatField(min_value=0, max_value=1, default=0.27)
    seed = bounded_integer(SplitVersion, "seed", min_value=0, default=0)
    source_rules = SourceRuleSerializer(many=True, required=False, max_length=50)

    def validate(self, data):
        try:
            data["ratios"] = SplitRatios(data["train"], data["val"], data["test"])
        except ValueError as exc:
            raise serializers.ValidationError({"ratios": str(exc)}) from None
        sources = [rule["source"] for rule in data.get("source_rules", [])]
        repeated = sorted({s for s in sources if sources.count(s) > 1})
        if repeated:
            raise serializers.ValidationError(
                {
                    "source_rules": f"one rule per source; given more than once: {', '.join(map(repr, repeated))}"
                }
            )
        return data


class SplitVersionSerializer(serializers.ModelSerializer):
    class Meta:
        model = SplitVersion
        fields = ["number", "seed", "ratios", "source_rules", "frozen", "manifest", "created_at"]


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
                rules = {rule["source"]: rule["ratios"] for rule in data.get("source_rules", [])}
                version = split_version_create(
                    dataset=dataset, ratios=data["ratios"], seed=data["seed"], source_rules=rules
                )
                audit_record(
                    dataset=dataset,
                    actor=request.user,
                    action="splits.compute",
                    parameters={
                        **{k: data[k] for k in ("train", "val", "test", "seed")},
                        "source_rules": version.source_rules,
                    },
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
