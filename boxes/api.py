"""Thin DRF views of the box pipeline for organizers: start box jobs for a concept, follow their progress, list
the boxes. The paths sit under a dataset (`/api/v1/datasets/{id}/...`), beside annotation's dataset views."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Count
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.audit import audit_record, request_parameters
from annotation.models import Box, BoxJob, BoxState
from annotation.scoping import organizer_dataset, organizer_datasets_counted
from annotation.serializers import DatasetSerializer, concept_by_wnid, dataset_images
from config.queryparams import query_id
from config.roles import IsOrganizer
from predictions.models import PredictionSet

from . import proposals
from . import services as boxes
from .models import BoxSettings
from .serializers import (
    BoxJobProgressSerializer,
    BoxJobsFromPredictionsSerializer,
    BoxJobsFromPredictionsStartedSerializer,
    BoxJobsStartedSerializer,
    BoxJobsStartSerializer,
    BoxSerializer,
    BoxSettingsSerializer,
)


class DatasetBoxesViewSet(viewsets.GenericViewSet):
    """The box pipeline of the calling organizer's datasets."""

    serializer_class = DatasetSerializer
    permission_classes = [IsAuthenticated, IsOrganizer]

    def get_queryset(self):
        return organizer_datasets_counted(
            self.request.user, schema_only=getattr(self, "swagger_fake_view", False)
        )

    @extend_schema(
        parameters=[OpenApiParameter("concept", str, description="Only jobs of this concept (wnid).")],
        responses=BoxJobProgressSerializer,
    )
    @action(detail=True, methods=["get"], url_path="box-jobs")
    def box_jobs(self, request, pk=None):
        """Progress of the box pipeline: jobs per status, and why jobs went to review."""
        dataset = self.get_object()
        wnid = request.query_params.get("concept")
        concept = concept_by_wnid(wnid) if wnid else None
        counts = boxes.status_counts(dataset, concept)
        jobs = BoxJob.objects.filter(dataset=dataset).exclude(review_reason="")
        if concept is not None:
            jobs = jobs.filter(concept=concept)
        reasons = dict(jobs.values("review_reason").annotate(n=Count("id")).values_list("review_reason", "n"))
        data = {"total": sum(counts.values()), "status_counts": counts, "review_reasons": reasons}
        return Response(BoxJobProgressSerializer(data).data)

    @extend_schema(request=BoxJobsStartSerializer, responses={201: BoxJobsStartedSerializer})
    @box_jobs.mapping.post
    def box_jobs_start(self, request, pk=None):
        """Start the box pipeline (draw, quality, coverage) for a concept: by default on the images whose
        final label says the concept is present, or on the images named, or on every image (`where: all`).
        Starting a job that exists already changes nothing."""
        dataset = self.get_object()
        form = BoxJobsStartSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        concept = concept_by_wnid(data["concept"])
        images = dataset_images(dataset, data)
        where = "images" if images is not None else data["where"]
        if where == "verified":
            images = boxes.images_verified_present(dataset, concept)
            if not images:
                raise ValidationError(
                    {
                        "where": f"no image of this dataset is verified to show {concept.wnid} "
                        f"({concept.name}) yet: verify the class first, name the images, or box every "
                        'image with "where": "all"'
                    }
                )
        with transaction.atomic():
            report = boxes.box_jobs_start(
                dataset=dataset,
                concept=concept,
                images=images,
                max_boxes=data["max_boxes"],
                max_rounds=data["max_rounds"],
            )
            audit_record(
                dataset=dataset,
                actor=request.user,
                action="boxes.start",
                parameters=request_parameters(data),
                result={"created": report.created, "existing": report.existing, "where": where},
            )
        body = BoxJobsStartedSerializer(
            {"created": report.created, "existing": report.existing, "where": where}
        ).data
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(
        request=BoxJobsFromPredictionsSerializer, responses={201: BoxJobsFromPredictionsStartedSerializer}
    )
    @action(detail=True, methods=["post"], url_path="box-jobs/from-predictions")
    def box_jobs_from_predictions(self, request, pk=None):
        """Start the box pipeline from a prediction set: per class, the proposals scoring at or above the
        organizer's threshold are asked QUALITY like drawn boxes (accepted ones become boxes of provenance
        `model+verified`, rejected ones are dropped), then COVERAGE and DRAW box what the model missed. Each
        class's answer carries a threshold suggested from calibration data (the set's proposals on images whose
        box job is done), or says why there is none. Images with a job for the class already are left alone."""
        dataset = self.get_object()
        form = BoxJobsFromPredictionsSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        prediction_set = PredictionSet.objects.filter(pk=data["prediction_set"], dataset=dataset).first()
        if prediction_set is None:
            raise ValidationError({"prediction_set": "no prediction set with this id in this dataset"})
        classes = [
            proposals.ClassRequest(concept_by_wnid(c["concept"], field="classes"), c["threshold"])
            for c in data["classes"]
        ]
        allowed = dataset.concepts.all()
        if allowed.exists():
            outside = sorted(c.concept.wnid for c in classes if not allowed.filter(pk=c.concept.pk).exists())
            if outside:
                raise ValidationError({"classes": f"not classes of this dataset: {', '.join(outside)}"})
        images = dataset_images(dataset, data)
        where = "images" if images is not None else data["where"]
        try:
            started = proposals.box_jobs_start_from_predictions(
                prediction_set=prediction_set,
                classes=classes,
                where=data["where"],
                images=images,
                max_boxes=data["max_boxes"],
                max_rounds=data["max_rounds"],
                actor=request.user,
                parameters=request_parameters(data),
            )
        except proposals.NoImages as exc:
            raise ValidationError({"where": str(exc)}) from None
        body = {
            "prediction_set": prediction_set.pk,
            "where": where,
            "created": sum(s.created for s in started),
            "existing": sum(s.existing for s in started),
            "classes": started,
        }
        return Response(BoxJobsFromPredictionsStartedSerializer(body).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "state", str, enum=BoxState.values, description="Box state (default: accepted)."
            ),
            OpenApiParameter("concept", str, description="Only boxes of this concept (wnid)."),
            OpenApiParameter("image", int, description="Only boxes on this image."),
        ],
        responses=BoxSerializer(many=True),
    )
    @action(detail=True, methods=["get"], url_path="boxes")
    def box_list(self, request, pk=None):
        """Boxes on the dataset's images, in original-image pixels."""
        dataset = self.get_object()
        params = request.query_params
        state = params.get("state", BoxState.ACCEPTED)
        if state not in BoxState.values:
            raise ValidationError({"state": f"must be one of {', '.join(BoxState.values)}"})
        qs = Box.objects.filter(image__dataset=dataset, state=state).select_related(
            "concept", "extreme_points"
        )
        if params.get("concept"):
            qs = qs.filter(concept=concept_by_wnid(params["concept"]))
        image_id = query_id(params, "image")
        if image_id is not None:
            qs = qs.filter(image_id=image_id)
        page = self.paginate_queryset(qs.order_by("id"))
        return self.get_paginated_response(BoxSerializer(page, many=True).data)


class BoxSettingsView(APIView):
    """How the dataset's workers draw boxes: `corners` (drag) or `extreme` (extreme clicking). A change applies to
    DRAW tasks queued from then on; a task already queued is answered the way its page shows it."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=BoxSettingsSerializer)
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        return Response(BoxSettingsSerializer(BoxSettings.for_dataset(dataset.pk)).data)

    @extend_schema(request=BoxSettingsSerializer, responses=BoxSettingsSerializer)
    def patch(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        form = BoxSettingsSerializer(
            BoxSettings.for_dataset(dataset.pk),
            data=request.data,
            partial=True,
            context={"dataset_id": dataset.pk},
        )
        form.is_valid(raise_exception=True)
        with transaction.atomic():
            form.save(dataset=dataset)
            audit_record(
                dataset=dataset,
                actor=request.user,
                action="box_settings.change",
                parameters=form.validated_data,
            )
        return Response(form.data)
