"""API representations of consensus questions, votes, decisions, calibration tables and dataset settings.
Organizer-only: nothing here is ever shown to a worker."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.bounds import ColumnBoundsMixin, id_integer

from .models import CalibrationTable, ConsensusSettings, Question, QuestionDecision, QuestionKind, Vote


class ConsensusSettingsSerializer(ColumnBoundsMixin, serializers.ModelSerializer):
    class Meta:
        model = ConsensusSettings
        fields = [
            "estimator",
            "target_precision",
            "reject_error",
            "vote_cap",
            "extension_cap",
            "calibration_votes",
            "calibration_fraction",
            "calibration_min",
            "calibration_max",
            "favour_yes",
            "seed",
        ]
        extra_kwargs = {
            "target_precision": {"min_value": 0.51, "max_value": 0.9999},
            "reject_error": {"min_value": 0.0001, "max_value": 0.49},
            "vote_cap": {"min_value": 1, "max_value": 30},
            "extension_cap": {"min_value": 0, "max_value": 40},
            "calibration_votes": {"min_value": 1, "max_value": 30},
            "calibration_fraction": {"min_value": 0.0, "max_value": 1.0},
        }

    def validate(self, attrs):
        cap = attrs.get("vote_cap", getattr(self.instance, "vote_cap", None))
        votes = attrs.get("calibration_votes", getattr(self.instance, "calibration_votes", None))
        if cap is not None and votes is not None and votes > cap:
            raise serializers.ValidationError({"calibration_votes": "cannot exceed vote_cap"})
        lo = attrs.get("calibration_min", getattr(self.instance, "calibration_min", None))
        hi = attrs.get("calibration_max", getattr(self.instance, "calibration_max", None))
        if lo is not None and hi is not None and lo > hi:
            raise serializers.ValidationError({"calibration_min": "cannot exceed calibration_max"})
        return attrs


class VerificationRequestSerializer(serializers.Serializer):
    concept = serializers.CharField(help_text="wnid of the concept the candidates were collected for.")
    images = serializers.ListField(
        child=id_integer(), required=False, help_text="Candidate image ids (default: all)."
    )
    calibrate = serializers.BooleanField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Pick a calibration subset: default only when the concept has no table yet; true refines it.",
    )


class VerificationPlanSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    calibration = serializers.IntegerField()
    waiting = serializers.IntegerField()
    table_reused = serializers.BooleanField()
    from_pool = serializers.BooleanField(help_text="The images came from the concept's candidate pool.")


class DecisionSerializer(serializers.ModelSerializer):
    class Meta:
        model = QuestionDecision
        fields = ["decision", "p", "yes_count", "no_count", "estimator", "table", "created_at"]


class QuestionSerializer(serializers.ModelSerializer):
    concept = serializers.CharField(source="concept.wnid")
    decision = serializers.SerializerMethodField()

    class Meta:
        model = Question
        fields = [
            "id",
            "kind",
            "concept",
            "image",
            "box",
            "subject",
            "role",
            "state",
            "yes_count",
            "no_count",
            "p",
            "task",
            "created_at",
            "decided_at",
            "decision",
        ]

    @extend_schema_field(DecisionSerializer(allow_null=True))
    def get_decision(self, question) -> dict | None:
        # Prefetched as `decision_rows` by the list views so a page costs a fixed number of queries.
        rows = getattr(question, "decision_rows", None)
        if rows is None:
            rows = list(question.decisions.order_by("id"))
        return DecisionSerializer(rows[-1]).data if rows else None


class VoteSerializer(serializers.ModelSerializer):
    class Meta:
        model = Vote
        fields = ["worker", "answer", "assignment", "created_at"]


class QuestionDetailSerializer(QuestionSerializer):
    votes = VoteSerializer(many=True, read_only=True)
    decisions = DecisionSerializer(many=True, read_only=True)

    class Meta(QuestionSerializer.Meta):
        fields = [*QuestionSerializer.Meta.fields, "votes", "decisions"]


class CalibrationTableSerializer(serializers.ModelSerializer):
    concept = serializers.CharField(source="concept.wnid")
    cap = serializers.SerializerMethodField()
    probabilities = serializers.SerializerMethodField()
    prior = serializers.SerializerMethodField()

    class Meta:
        model = CalibrationTable
        fields = [
            "id",
            "kind",
            "concept",
            "cap",
            "probabilities",
            "prior",
            "n_images",
            "n_votes",
            "method",
            "created_at",
        ]

    def get_cap(self, row) -> int:
        return int(row.table["cap"])

    @extend_schema_field(serializers.ListField(child=serializers.ListField(child=serializers.FloatField())))
    def get_probabilities(self, row) -> list[list[float]]:
        """Row a holds P(positive | a yes, b no) for b = 0 .. cap - a."""
        return row.table["probabilities"]

    def get_prior(self, row) -> float:
        return float(row.table["prior"])


class CalibrationQuerySerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=QuestionKind.choices, default=QuestionKind.IMAGE_VERIFY)


class ConsensusWorkerStandingSerializer(serializers.Serializer):
    worker = serializers.IntegerField(source="worker_id")
    username = serializers.CharField()
    discrimination = serializers.FloatField(
        allow_null=True, help_text="Youden's J of the worker's fitted rates (null: not fitted yet)."
    )
    in_good_standing = serializers.BooleanField()
    withheld = serializers.BooleanField(
        help_text="Kept from the dataset's questions of the kind (still offered them on an explored share of fits)."
    )


class ConsensusStandingSerializer(serializers.Serializer):
    kind = serializers.CharField()
    min_discrimination = serializers.FloatField(help_text="In good standing at this J or above.")
    withholding = serializers.BooleanField(
        help_text="Whether the good-standing lease policy may withhold the dataset's questions of the kind now."
    )
    workers = ConsensusWorkerStandingSerializer(many=True)
