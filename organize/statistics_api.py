"""The Statistics page's endpoint: the figures of `manage.py dataset_stats` for one of the organizer's datasets,
computed in the background and kept (`benchmark.reports`)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from benchmark import reports
from benchmark.api import report_not_done
from benchmark.models import ReportKind
from benchmark.serializers import ReportFailedSerializer, ReportPendingSerializer
from config.roles import IsOrganizer

from .scoping import organizer_dataset


class PerClassRangeSerializer(serializers.Serializer):
    min = serializers.IntegerField()
    median = serializers.FloatField()
    max = serializers.IntegerField()


class ClassesPerImageSerializer(serializers.Serializer):
    classes = serializers.IntegerField()
    images = serializers.IntegerField()
    share = serializers.FloatField()


class ScaleBinSerializer(serializers.Serializer):
    bin = serializers.CharField(help_text="Box area over image area, e.g. 1%-5%.")
    instances = serializers.IntegerField()
    share = serializers.FloatField()


class PerClassSerializer(serializers.Serializer):
    name = serializers.CharField()
    instances = serializers.IntegerField()
    images = serializers.IntegerField()


class SplitFiguresSerializer(serializers.Serializer):
    split = serializers.CharField()
    images = serializers.IntegerField()
    labelled_images = serializers.IntegerField()
    instances = serializers.IntegerField()
    classes_with_instances = serializers.IntegerField()
    mean_classes_per_image = serializers.FloatField()
    clutter = serializers.FloatField(help_text="Instances per image with a box.")
    mean_object_scale = serializers.FloatField()
    instances_per_class = PerClassRangeSerializer()
    blacklisted_pairs = serializers.IntegerField()
    negative_pairs = serializers.IntegerField()
    scale_bins = serializers.ListField(child=serializers.IntegerField())
    classes_per_image = ClassesPerImageSerializer(many=True)
    scale_histogram = ScaleBinSerializer(many=True)
    per_class = PerClassSerializer(many=True, help_text="Most instances first.")


class WithheldSerializer(serializers.Serializer):
    split = serializers.CharField()
    images = serializers.IntegerField()


class ReferenceSerializer(serializers.Serializer):
    benchmark = serializers.CharField()
    classes = serializers.IntegerField(required=False)
    images = serializers.IntegerField(required=False)
    instances = serializers.IntegerField(required=False)
    instances_per_class = serializers.CharField(required=False)
    source = serializers.CharField()


class StatisticsSerializer(serializers.Serializer):
    dataset = serializers.IntegerField()
    version = serializers.CharField(help_text="The split version's label (+ the detection set), or unsplit.")
    split_version = serializers.IntegerField(allow_null=True)
    detection_set = serializers.CharField(allow_null=True)
    withheld = WithheldSerializer(many=True, help_text="Splits whose labels are withheld: image counts only.")
    splits = SplitFiguresSerializer(many=True)
    references = ReferenceSerializer(many=True, help_text="Published figures, each with its source.")
    split_versions = serializers.ListField(child=serializers.IntegerField())
    detection_sets = serializers.ListField(child=serializers.CharField())
    computed_at = serializers.DateTimeField(help_text="When the report was computed from the labels.")
    refreshing = serializers.BooleanField(
        help_text="A fresher report is being computed (this one is older than CROWDLABEL_REPORT_MAX_AGE_SECONDS)."
    )


class DatasetStatisticsView(APIView):
    """The dataset statistics report (what `manage.py dataset_stats` writes), per split."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "split_version", OpenApiTypes.INT, description="Default: the latest frozen, else the latest."
            ),
            OpenApiParameter("detection_set", OpenApiTypes.STR, description="A detection set's name."),
        ],
        responses={200: StatisticsSerializer, 202: ReportPendingSerializer, 409: ReportFailedSerializer},
        description="The newest computed report (200). Before the first one is ready: 202, ask again; a report "
        "older than CROWDLABEL_REPORT_MAX_AGE_SECONDS is answered while a fresh one is computed (`refreshing`). "
        "409 when the last computation failed (e.g. its detection set was deleted meanwhile).",
    )
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        try:
            version, detection_set = reports.choices(
                dataset, request.query_params.get("split_version"), request.query_params.get("detection_set")
            )
        except reports.StatisticsChoiceError as exc:
            raise ValidationError({exc.param: [str(exc)]}) from None
        params = reports.statistics_params(dataset, version, detection_set)
        current = reports.report_current(dataset, ReportKind.DATASET_STATISTICS, params, request.user)
        if current.done is not None:
            body = {
                **current.done.body,
                **reports.picker_choices(dataset),
                "computed_at": current.done.finished_at,
                "refreshing": current.refreshing,
            }
            return Response(StatisticsSerializer(body).data)
        return report_not_done(current)
