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


class MultilabelStartedSerializer(serializers.Serializer):
    created = serializers.IntegerField(help_text="Images whose labeling started now.")
    already = serializers.IntegerField(help_text="Images already being labelled with this hierarchy.")
    order = serializers.CharField()
    engine = serializers.CharField()


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
