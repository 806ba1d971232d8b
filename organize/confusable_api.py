"""Confusable pairs among a dataset's classes (seal / sea otter): listed, added and removed by the dataset's
organizers through `review.confusables`, which holds the rules and audits each change. Each dataset keeps its
own pairs and notes (its overlap scan reads only those), so one organizer's pairs never show in, or change,
another's dataset."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from config.errors import Conflict
from config.roles import IsOrganizer
from review.confusables import (
    PairInvalid,
    PairListed,
    confusable_pair_add,
    confusable_pair_remove,
    dataset_pairs,
)
from review.models import ConfusablePair

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
        try:
            pair = confusable_pair_add(dataset=dataset, actor=request.user, **form.validated_data)
        except PairInvalid as exc:
            raise ValidationError({exc.field: str(exc)}) from None
        except PairListed as exc:
            raise Conflict(str(exc)) from None
        return Response(ConfusablePairSerializer(pair).data, status=status.HTTP_201_CREATED)


class ConfusablePairDetailView(APIView):
    """Remove a confusable pair of the dataset's classes."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses={204: None})
    def delete(self, request, dataset_id: int, pair_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        try:
            confusable_pair_remove(dataset=dataset, pair_id=pair_id, actor=request.user)
        except ConfusablePair.DoesNotExist:
            raise NotFound("No ConfusablePair matches the given query.") from None
        return Response(status=status.HTTP_204_NO_CONTENT)
