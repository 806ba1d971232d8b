"""API representations of multi-label annotation runs: the start request and reply, per-image labelings and a
dataset's progress."""

from __future__ import annotations

from rest_framework import serializers

from annotation.models import PRIORITY_LIMIT
from config.bounds import id_integer

from .models import ImageLabeling, LabelingOrder, QuestionEngine


class MultilabelStartSerializer(serializers.Serializer):
    hierarchy = id_integer(help_text="Id of a loaded hierarchy (GET /api/v1/hierarchies/).")
    images = serializers.ListField(
        child=id_integer(), required=False, help_text="Image ids (default: every image)."
    )
    order = serializers.ChoiceField(choices=LabelingOrder.choices, default=LabelingOrder.BREADTH_FIRST)
    engine = serializers.ChoiceField(choices=QuestionEngine.choices, default=QuestionEngine.CONSENSUS)
    priority = serializers.IntegerField(
        default=0,
        min_value=-PRIORITY_LIMIT,
        max_value=PRIORITY_LIMIT,
        help_text="Higher first, among this dataset's tasks.",
    )
    prediction_set = id_integer(
        required=False,
        allow_null=True,
        help_text="Id of a prediction set of this dataset with class scores (GET /api/v1/datasets/{id}/predictions/): "
        "each image's likeliest classes are asked first, and once the dataset has decided images the questions a "
        "calibrated rule bounds below the target miss rate are answered no without asking (docs/hierarchy.md).",
    )


class MultilabelStartedSerializer(serializers.Serializer):
    created = serializers.IntegerField(help_text="Images whose labeling started now.")
    already = serializers.IntegerField(help_text="Images already being labelled with this hierarchy.")
    order = serializers.CharField()
    engine = serializers.CharField()
    prediction_set = serializers.IntegerField(allow_null=True)


class SkipSerializer(serializers.Serializer):
    """A question answered no without asking, with the calibrated rule's evidence."""

    node = serializers.CharField(source="node.node_id")
    rule = serializers.CharField()
    score = serializers.FloatField(help_text="The node's score: the highest class score at or below it.")
    bound = serializers.FloatField(help_text="Upper confidence bound on P(present) in the score's bucket.")
    target = serializers.FloatField(help_text="The miss rate the bound is below.")
    positives = serializers.IntegerField(help_text="Present among the bucket's crowd-decided observations.")
    observations = serializers.IntegerField()
    calibration_images = serializers.IntegerField()


class PresentClassSerializer(serializers.Serializer):
    wnid = serializers.CharField(source="concept.wnid")
    name = serializers.CharField(source="concept.name")
    source = serializers.CharField()


class ImageLabelingSerializer(serializers.ModelSerializer):
    image = serializers.IntegerField(source="image_id")
    hierarchy = serializers.IntegerField(source="hierarchy_id")
    questions = serializers.IntegerField(source="questions_asked")
    votes = serializers.SerializerMethodField()
    pending = serializers.CharField(source="pending_node")
    present = PresentClassSerializer(source="present_labels", many=True, read_only=True)
    prediction_set = serializers.IntegerField(source="prediction_set_id", allow_null=True)
    skipped = SkipSerializer(source="skips", many=True, read_only=True)

    class Meta:
        model = ImageLabeling
        fields = [
            "image",
            "hierarchy",
            "order",
            "engine",
            "status",
            "questions",
            "votes",
            "pending",
            "present",
            "prediction_set",
            "skipped",
        ]

    def get_votes(self, labeling) -> int:
        return getattr(labeling, "votes", None) or 0


class MultilabelProgressSerializer(serializers.Serializer):
    images = serializers.IntegerField()
    done = serializers.IntegerField()
    running = serializers.IntegerField()
    questions_decided = serializers.IntegerField()
    votes = serializers.IntegerField()
    present_labels = serializers.IntegerField()


class MultilabelPageSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    next = serializers.CharField(allow_null=True)
    previous = serializers.CharField(allow_null=True)
    progress = MultilabelProgressSerializer()
    results = ImageLabelingSerializer(many=True)
