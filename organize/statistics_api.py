"""The Statistics page's endpoint: the figures of `manage.py dataset_stats` for one of the organizer's datasets
(`organize.statistics`)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from config.roles import IsOrganizer

from .scoping import organizer_dataset
from .statistics import StatisticsChoiceError, choices, dataset_report


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
        responses=StatisticsSerializer,
    )
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        try:
            version, detection_set = choices(
                dataset, request.query_params.get("split_version"), request.query_params.get("detection_set")
            )
        except StatisticsChoiceError as exc:
            raise ValidationError({exc.param: [str(exc)]}) from None
        return Response(StatisticsSerializer(dataset_report(dataset, version, detection_set)).data)
