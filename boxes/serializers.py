"""Serializers of the box pipeline's organizer API: starting box jobs, their progress, the boxes, the dataset's
box settings."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.bounds import id_integer
from predictions.models import PredictionSet
from predictions.serializers import ThresholdSuggestionSerializer

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
    provenance = serializers.CharField(
        help_text="`worker`, `model` (a proposal not accepted) or `model+verified`."
    )
    score = serializers.FloatField(
        allow_null=True, help_text="A model proposal's score; null for a drawn box."
    )

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


class ProposalClassSerializer(serializers.Serializer):
    concept = serializers.CharField(help_text="wnid of the class to box.")
    threshold = serializers.FloatField(
        min_value=0.0,
        max_value=1.0,
        help_text="The organizer's score threshold in [0, 1]: proposals of the class scoring at or above it are "
        "asked QUALITY; the others are never shown.",
    )


class BoxJobsFromPredictionsSerializer(serializers.Serializer):
    prediction_set = id_integer(help_text="A prediction set of this dataset (its id).")
    classes = ProposalClassSerializer(many=True, allow_empty=False, max_length=1000)
    images = serializers.ListField(
        child=id_integer(),
        required=False,
        help_text="Images to box, chosen by the organizer (overrides `where`).",
    )
    where = serializers.ChoiceField(
        choices=[("verified", "verified"), ("proposed", "proposed"), ("all", "all")],
        default="verified",
        help_text="Without `images`: `verified` (default) boxes the images whose final label says the class is "
        "present; `proposed` the images with a proposal of the class at or above its threshold; `all` every "
        "image of the dataset. An image without proposals starts with a DRAW.",
    )
    max_boxes = serializers.IntegerField(min_value=1, max_value=200, default=25)
    max_rounds = serializers.IntegerField(min_value=1, max_value=500, default=30)

    def validate(self, attrs):
        if "images" in attrs and "where" in self.initial_data:
            raise serializers.ValidationError({"where": "give either `images` or `where`, not both"})
        wnids = [c["concept"] for c in attrs["classes"]]
        repeated = sorted({w for w in wnids if wnids.count(w) > 1})
        if repeated:
            raise serializers.ValidationError({"classes": f"each class once: {', '.join(repeated)} repeated"})
        return attrs


class ProposalClassStartedSerializer(serializers.Serializer):
    concept = serializers.CharField(source="concept.wnid")
    threshold = serializers.FloatField()
    images = serializers.IntegerField()
    created = serializers.IntegerField()
    existing = serializers.IntegerField(help_text="Images that had a job for the class: left alone.")
    proposals_queued = serializers.IntegerField(help_text="Proposals asked QUALITY in the jobs started now.")
    proposals_below_threshold = serializers.IntegerField()
    proposals_over_cap = serializers.IntegerField(
        help_text="Above the threshold but beyond a job's max_boxes."
    )
    jobs_without_proposals = serializers.IntegerField(help_text="Jobs started now with a DRAW.")
    suggestion = ThresholdSuggestionSerializer()


class BoxJobsFromPredictionsStartedSerializer(serializers.Serializer):
    prediction_set = serializers.IntegerField()
    where = serializers.CharField(
        help_text="How the images were chosen: `images`, `verified`, `proposed` or `all`."
    )
    created = serializers.IntegerField()
    existing = serializers.IntegerField()
    classes = ProposalClassStartedSerializer(many=True)


class BoxSettingsSerializer(serializers.ModelSerializer):
    prediction_set = id_integer(
        source="prediction_set_id",
        allow_null=True,
        required=False,
        help_text="A prediction set of this dataset (its id), or null: box jobs the dataset starts on its own "
        "(multi-label's present classes) begin from its proposals scoring at least `proposal_threshold`, each "
        "asked QUALITY like a drawn box; null: they begin with a DRAW.",
    )
    proposal_threshold = serializers.FloatField(
        min_value=0.0,
        max_value=1.0,
        required=False,
        help_text="The lowest score of a proposal the dataset's own box jobs start from (0 to 1).",
    )

    def validate_prediction_set(self, value):
        # Another dataset's set answers like a missing one.
        dataset_id = self.context.get("dataset_id")
        if value is not None and not PredictionSet.objects.filter(pk=value, dataset_id=dataset_id).exists():
            raise serializers.ValidationError(f"no prediction set with id {value} in this dataset")
        return value

    class Meta:
        model = BoxSettings
        fields = ["draw_mode", "prediction_set", "proposal_threshold"]
        extra_kwargs = {
            "draw_mode": {
                "help_text": "How workers draw a box: `corners` (drag a box, adjust it by its handles) or "
                "`extreme` (click the top, bottom, left and right-most points of the object; the box is their "
                "bounds, stored with them: Papadopoulos et al., ICCV 2017). Applies to DRAW tasks queued from "
                "now on."
            }
        }
