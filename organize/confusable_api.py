"""Confusable pairs among a dataset's classes (seal / sea otter): listed, added and removed by the dataset's
organizers. Each dataset keeps its own pairs and notes (its overlap scan reads only those), so one organizer's
pairs never show in, or change, another's dataset. A pair joins two of the dataset's own classes. Both changes
are audited."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.audit import audit_record
from annotation.models import Dataset
from config.roles import IsOrganizer
from review.models import ConfusablePair

from .classes_api import Conflict
from .scoping import organizer_dataset


class ConfusablePairSerializer(serializers.ModelSerializer):
    a = serializers.CharField(source="concept_a.wnid")
    a_name = serializers.CharField(source="concept_a.name")
    b = serializers.CharField(source="concept_b.wnid")
    b_name = serializers.CharField(source="concept_b.name")

    class Meta:
        model = ConfusablePair
        fields = ["id", "a", "a_name", "b", "b_name", "note"]


class ConfusablePairCreateSerializer(serializers.Serializer):
    a = serializers.CharField(max_length=32, help_text="wnid of one of the dataset's classes.")
    b = serializers.CharField(max_length=32)
    note = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")


def dataset_pairs(dataset: Dataset):
    return (
        ConfusablePair.objects.filter(dataset=dataset)
        .select_related("concept_a", "concept_b")
        .order_by("concept_a__wnid", "concept_b__wnid")
    )


class ConfusablePairsView(APIView):
    """The confusable pairs among the dataset's classes, or add one (both wnids among its classes)."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=ConfusablePairSerializer(many=True))
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        return Response(ConfusablePairSerializer(dataset_pairs(dataset), many=True).data)

    @extend_schema(request=ConfusablePairCreateSerializer, responses={201: ConfusablePairSerializer})
    def post(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        form = ConfusablePairCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        if data["a"] == data["b"]:
            raise ValidationError({"b": "a class is not confusable with itself"})
        found = {c.wnid: c for c in dataset.concepts.filter(wnid__in=[data["a"], data["b"]])}
        missing = [w for w in (data["a"], data["b"]) if w not in found]
        if missing:
            raise ValidationError(
                {"concepts": f"not among the classes of {dataset.name}: {', '.join(missing)}"}
            )
        try:
            with transaction.atomic():
                pair = ConfusablePair(
                    dataset=dataset, concept_a=found[data["a"]], concept_b=found[data["b"]], note=data["note"]
                )
                pair.save()
                audit_record(
                    dataset=dataset,
                    actor=request.user,
                    action="confusable_pair.add",
                    parameters={"a": data["a"], "b": data["b"], "note": data["note"]},
                )
        except IntegrityError:
            raise Conflict({"detail": f"{data['a']} / {data['b']} is listed already"}) from None
        pair = ConfusablePair.objects.select_related("concept_a", "concept_b").get(pk=pair.pk)
        return Response(ConfusablePairSerializer(pair).data, status=status.HTTP_201_CREATED)


class ConfusablePairDetailView(APIView):
    """Remove a confusable pair of the dataset's classes."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses={204: None})
    def delete(self, request, dataset_id: int, pair_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        with transaction.atomic():
            pair = get_object_or_404(dataset_pairs(dataset).select_for_update(of=("self",)), pk=pair_id)
            audit_record(
                dataset=dataset,
                actor=request.user,
                action="confusable_pair.remove",
                parameters={"a": pair.concept_a.wnid, "b": pair.concept_b.wnid, "note": pair.note},
            )
            pair.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)
