"""Thin DRF view for multi-label annotation of a dataset: an organizer starts it and reads its progress."""

from django.db import transaction
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.audit import audit_record, request_parameters
from annotation.models import Dataset
from annotation.serializers import dataset_images
from config.pagination import StrictPageNumberPagination
from config.queryparams import query_id
from config.roles import IsOrganizer
from hierarchy.models import Hierarchy
from predictions.models import PredictionSet

from . import selectors
from .labeling import LabelingError, labeling_start
from .serializers import (
    ImageLabelingSerializer,
    MultilabelPageSerializer,
    MultilabelStartedSerializer,
    MultilabelStartSerializer,
)


class MultilabelView(APIView):
    """Full multi-label annotation of a dataset by hierarchical yes/no questions (ILSVRC Algorithm 1)."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    def dataset(self, request, pk: int) -> Dataset:
        qs = Dataset.objects.all()
        if not request.user.is_superuser:
            qs = qs.filter(organizers=request.user)
        return get_object_or_404(qs, pk=pk)

    @extend_schema(request=MultilabelStartSerializer, responses={201: MultilabelStartedSerializer})
    def post(self, request, pk: int):
        """Start labeling the dataset's images (all, or `images`) with a hierarchy, in the chosen order, or guided
        by a prediction set's class scores."""
        dataset = self.dataset(request, pk)
        form = MultilabelStartSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        hierarchy = Hierarchy.objects.filter(pk=data["hierarchy"]).first()
        if hierarchy is None:
            raise ValidationError({"hierarchy": f"no hierarchy with id {data['hierarchy']}"})
        images = dataset_images(dataset, data)
        prediction_set = None
        if data.get("prediction_set") is not None:
            prediction_set = PredictionSet.objects.filter(pk=data["prediction_set"], dataset=dataset).first()
            if prediction_set is None:
                raise ValidationError(
                    {"prediction_set": f"no prediction set with id {data['prediction_set']} in this dataset"}
                )
            if prediction_set.score_count == 0:
                raise ValidationError(
                    {"prediction_set": f"prediction set {prediction_set.pk} has no image-level class scores"}
                )
        try:
            with transaction.atomic():
                result = labeling_start(
                    dataset=dataset,
                    hierarchy=hierarchy,
                    images=images,
                    order=data["order"],
                    engine=data["engine"],
                    priority=data["priority"],
                    prediction_set=prediction_set,
                )
                body = {
                    "created": result.created,
                    "already": result.already,
                    "order": result.order,
                    "engine": result.engine,
                    "prediction_set": result.prediction_set,
                }
                audit_record(
                    dataset=dataset,
                    actor=request.user,
                    action="multilabel.start",
                    parameters=request_parameters(data),
                    result=body,
                )
        except LabelingError as exc:
            raise ValidationError({"order": str(exc)}) from None
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(
        parameters=[
            OpenApiParameter("hierarchy", int, description="Only this hierarchy's labelings."),
            OpenApiParameter("page", int, description="Page of the per-image list."),
        ],
        responses=MultilabelPageSerializer,
    )
    def get(self, request, pk: int):
        """Progress, and per image its status, questions, votes and present classes (paginated)."""
        dataset = self.dataset(request, pk)
        hierarchy_id = query_id(request.query_params, "hierarchy")
        paginator = StrictPageNumberPagination()
        qs = selectors.labelings_of(dataset.pk, hierarchy_id)
        page = paginator.paginate_queryset(qs, request, view=self)
        response = paginator.get_paginated_response(ImageLabelingSerializer(page, many=True).data)
        response.data["progress"] = selectors.multilabel_progress(dataset.pk, hierarchy_id)
        return response
