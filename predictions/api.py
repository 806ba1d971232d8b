"""The predictions API: a dataset's prediction sets, importing a predictions file, and a model server's push of
the same JSON. Organizers of the dataset only (another organizer's dataset is a 404, like a missing one)."""

from __future__ import annotations

from django.db.models import Count
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import APIException
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.scoping import organizer_dataset
from config.dbconnection import idempotent_by_content
from config.parsers import MultiPartParser
from config.roles import IsOrganizer

from . import rows, services
from .calibration import threshold_suggestion
from .models import BoxPrediction, PredictionSet, PredictionSource
from .serializers import (
    ClassThresholdSerializer,
    PredictionProblemsSerializer,
    PredictionPushSerializer,
    PredictionSetSerializer,
    PredictionUploadSerializer,
)

MAX_FILE_BYTES = 32 * 1024 * 1024  # 200,000 COCO rows take about 16 MB
MAX_PROBLEMS_SHOWN = 500


class FileTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "file_too_large"


def _refused(exc: rows.PredictionsRefused) -> Response:
    body = {
        "detail": f"{len(exc.problems)} problem(s) in the predictions; nothing was stored.",
        "problem_count": len(exc.problems),
        "problems": [
            {"where": p.where, "code": p.code, "reason": p.reason} for p in exc.problems[:MAX_PROBLEMS_SHOWN]
        ],
    }
    return Response(body, status=status.HTTP_400_BAD_REQUEST)


def _stored(prediction_set: PredictionSet, created: bool) -> Response:
    return Response(
        PredictionSetSerializer(prediction_set).data,
        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
    )


ANSWERS = {
    201: PredictionSetSerializer,
    200: OpenApiResponse(
        PredictionSetSerializer, description="The same content was imported before: that set."
    ),
    400: PredictionProblemsSerializer,
}


class PredictionSetListView(APIView):
    """The dataset's prediction sets (newest first), and importing a predictions file as a new one."""

    permission_classes = [IsAuthenticated, IsOrganizer]
    parser_classes = [MultiPartParser]

    @extend_schema(responses=PredictionSetSerializer(many=True))
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        sets = (
            PredictionSet.objects.filter(dataset=dataset).select_related("created_by").order_by("-id")[:100]
        )
        return Response(PredictionSetSerializer(sets, many=True).data)

    @extend_schema(
        request={"multipart/form-data": PredictionUploadSerializer},
        responses=ANSWERS,
        description="Every row is checked against the dataset's images and classes; one bad row refuses the "
        "whole file (400, every problem with its row, code and reason) and nothing is stored. A file with the "
        "same bytes as an imported one answers that set (200). At most 32 MB (413) and 200,000 rows.",
    )
    @idempotent_by_content
    def post(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        form = PredictionUploadSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        upload = form.validated_data["file"]
        if upload.size > MAX_FILE_BYTES:
            raise FileTooLarge(f"the file is {upload.size:,} bytes; at most {MAX_FILE_BYTES:,}: split it")
        names = {k: form.validated_data.get(k, "") for k in ("name", "model_name", "model_version")}
        names["name"] = names["name"] or (upload.name or "").rsplit("/", 1)[-1][:200]
        try:
            prediction_set, created = services.prediction_file_import(
                dataset=dataset,
                data=upload.read(),
                source=PredictionSource.UPLOAD,
                actor=request.user,
                **names,
            )
        except rows.PredictionsRefused as exc:
            return _refused(exc)
        return _stored(prediction_set, created)


class PredictionPushView(APIView):
    """A model server's push: the same document as a file's object form, as the JSON body."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(
        request=PredictionPushSerializer,
        responses=ANSWERS,
        description="For a live model (docs/predictions.md, the model-server contract): POST the predictions "
        "with an organizer's token. Checked and stored like an uploaded file: all rows or none. The same "
        "document again (any key order) answers the set it made (200). Non-finite numbers are refused by the "
        "JSON parser, naming the field; the body is bounded by the API's request size (413).",
    )
    @idempotent_by_content
    def post(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        try:
            document = rows.document_from(request.data)
            prediction_set, created = services.prediction_set_import(
                dataset=dataset,
                document=document,
                sha256=services.push_digest(request.data),
                source=PredictionSource.MODEL,
                actor=request.user,
            )
        except rows.PredictionsRefused as exc:
            return _refused(exc)
        return _stored(prediction_set, created)


class PredictionSetView(APIView):
    """One prediction set: its model, who imported it and how many boxes and class scores it holds."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=PredictionSetSerializer)
    def get(self, request, dataset_id: int, prediction_set_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        prediction_set = get_object_or_404(PredictionSet, pk=prediction_set_id, dataset=dataset)
        return Response(PredictionSetSerializer(prediction_set).data)


class PredictionSetThresholdsView(APIView):
    """Per class of a prediction set's box proposals, the score threshold suggested from calibration data."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(
        responses=ClassThresholdSerializer(many=True),
        description="For each class with box proposals in the set: how many there are, and the threshold "
        "suggested for starting box jobs from them (docs/boxes.md, 'Starting from a model's proposals'): the "
        "lowest score band edge above which every band of the set's proposals on images whose box job is done "
        "was correct (IoU >= 0.7 with a verified box) at a rate of at least 0.5. `threshold` is null, and `note` "
        "says why, when there is no such data yet.",
    )
    def get(self, request, dataset_id: int, prediction_set_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        prediction_set = get_object_or_404(PredictionSet, pk=prediction_set_id, dataset=dataset)
        counts = (
            BoxPrediction.objects.filter(prediction_set=prediction_set)
            .values_list("concept_id", "concept__wnid", "concept__name")
            .annotate(n=Count("id"))
            .order_by("concept__wnid")
        )
        body = [
            {
                "concept": wnid,
                "name": name,
                "proposals": n,
                "suggestion": threshold_suggestion(prediction_set, concept_id),
            }
            for concept_id, wnid, name, n in counts
        ]
        return Response(ClassThresholdSerializer(body, many=True).data)
