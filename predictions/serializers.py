"""Shapes of the predictions API: a prediction set, the upload form, a model server's push, and a refusal."""

from __future__ import annotations

from rest_framework import serializers

from config.bounds import id_integer

from .models import PredictionSet


class PredictionSetSerializer(serializers.ModelSerializer):
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = PredictionSet
        fields = [
            "id",
            "name",
            "model_name",
            "model_version",
            "source",
            "created_by",
            "created_at",
            "sha256",
            "box_count",
            "score_count",
        ]
        read_only_fields = fields


class PredictionUploadSerializer(serializers.Serializer):
    file = serializers.FileField(
        help_text="A COCO results JSON list, or an object with `detections` and `classifications` "
        "(docs/predictions.md)."
    )
    name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    model_name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    model_version = serializers.CharField(max_length=100, required=False, allow_blank=True)


class ModelSerializer(serializers.Serializer):
    name = serializers.CharField(required=False)
    version = serializers.CharField(required=False)


class DetectionSerializer(serializers.Serializer):
    image_id = id_integer(required=False, help_text="The image's id (or give `file_name`).")
    file_name = serializers.CharField(required=False, help_text="The name the image was uploaded with.")
    category_id = id_integer(required=False, help_text="The class's id (or give `wnid`).")
    wnid = serializers.CharField(required=False)
    bbox = serializers.ListField(
        child=serializers.FloatField(), min_length=4, max_length=4, help_text="[x, y, w, h]"
    )
    score = serializers.FloatField(min_value=0, max_value=1)


class ClassificationSerializer(serializers.Serializer):
    image_id = id_integer(required=False)
    file_name = serializers.CharField(required=False)
    category_id = id_integer(required=False)
    wnid = serializers.CharField(required=False)
    score = serializers.FloatField(min_value=0, max_value=1)


class PredictionPushSerializer(serializers.Serializer):
    """The document a model server POSTs (also the upload file's object form); checked by predictions/rows.py."""

    name = serializers.CharField(required=False)
    model = ModelSerializer(required=False)
    detections = DetectionSerializer(many=True, required=False)
    classifications = ClassificationSerializer(many=True, required=False)


class ProblemSerializer(serializers.Serializer):
    where = serializers.CharField(help_text='"detections[3]", "classifications[0]", "file" or "line 7".')
    code = serializers.CharField(
        help_text="unknown_image, unknown_class, non_finite, outside_image, duplicate, ..."
    )
    reason = serializers.CharField()


class PredictionProblemsSerializer(serializers.Serializer):
    detail = serializers.CharField()
    problem_count = serializers.IntegerField()
    problems = ProblemSerializer(many=True, help_text="The first 500 problems, in file order.")


class ThresholdSuggestionSerializer(serializers.Serializer):
    threshold = serializers.FloatField(
        allow_null=True, help_text="The suggested threshold; null when the calibration data cannot say."
    )
    accept_rate = serializers.FloatField(
        allow_null=True,
        help_text="Of the checked proposals at or above the suggestion, the share that was right.",
    )
    checked = serializers.IntegerField(
        help_text="The set's proposals of the class on images whose box job is done (the calibration data)."
    )
    note = serializers.CharField(help_text="How the suggestion was made, or why there is none.")


class ClassThresholdSerializer(serializers.Serializer):
    concept = serializers.CharField(help_text="The class's wnid.")
    name = serializers.CharField()
    proposals = serializers.IntegerField(help_text="The set's box proposals of the class.")
    suggestion = ThresholdSuggestionSerializer()
