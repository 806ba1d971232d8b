"""Serializers of the box pipeline's organizer API: starting box jobs, their progress, the boxes, the dataset's
box settings."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.bounds import id_integer

from .models import BoxExtremePoints, BoxSettings


class BoxJobsStartSerializer(serializers.Serializer):
    concept = serializers.CharField(help_text="wnid of the concept to box.")
    images = serializers.ListField(
        child=id_integer(),
        required=False,
        help_text="Images to box, chosen by the organizer (overrides `where`).",
    )
    where = serializers.ChoiceField(
        choices=[("verified", "verified"), ("all", "all")],
        default="verified",
        help_text="Without `images`: `verified` (default) boxes the images whose final label says the concept "
        "is present (image verification, Algorithm 1 or a reviewer decided it); `all` boxes every image of "
        "the dataset, shown or not (each image without the class still costs a draw task and coverage votes).",
    )
    max_boxes = serializers.IntegerField(min_value=1, max_value=200, default=25)
    max_rounds = serializers.IntegerField(min_value=1, max_value=500, default=30)

    def validate(self, attrs):
        if "images" in attrs and "where" in self.initial_data:
            raise serializers.ValidationError({"where": "give either `images` or `where`, not both"})
        return attrs


class BoxJobsStartedSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    existing = serializers.IntegerField(help_text="Images that already had a job for the concept.")
    where = serializers.CharField(help_text="How the images were chosen: `images`, `verified` or `all`.")


class BoxJobProgressSerializer(serializers.Serializer):
    total = serializers.IntegerField()
    status_counts = serializers.DictField(child=serializers.IntegerField())
    review_reasons = serializers.DictField(child=serializers.IntegerField())


class BoxSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    image = serializers.IntegerField(source="image_id")
    concept = serializers.CharField(source="concept.wnid")
    x1 = serializers.FloatField()
    y1 = serializers.FloatField()
    x2 = serializers.FloatField()
    y2 = serializers.FloatField()
    state = serializers.CharField()
    drawn_by = serializers.IntegerField(source="drawn_by_id", allow_null=True)
    points = serializers.SerializerMethodField(
        help_text="The four extreme points the box was clicked from ({top, bottom, left, right}: [x, y] each), "
        "or null for a box dragged by its corners."
    )

    @extend_schema_field(
        serializers.DictField(child=serializers.ListField(child=serializers.FloatField()), allow_null=True)
    )
    def get_points(self, box) -> dict | None:
        try:
            return box.extreme_points.as_dict()
        except BoxExtremePoints.DoesNotExist:
            return None


class BoxSettingsSerializer(serializers.ModelSerializer):
    class Meta:
        model = BoxSettings
        fields = ["draw_mode"]
        extra_kwargs = {
            "draw_mode": {
                "help_text": "How workers draw a box: `corners` (drag a box, adjust it by its handles) or "
                "`extreme` (click the top, bottom, left and right-most points of the object; the box is their "
                "bounds, stored with them: Papadopoulos et al., ICCV 2017). Applies to DRAW tasks queued from "
                "now on."
            }
        }
