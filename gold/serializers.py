"""Organizer-facing representations of gold items, worker scores and payment recommendations."""

from __future__ import annotations

from rest_framework import serializers

from config.bounds import ColumnBoundsMixin, id_integer
from consensus.models import QuestionKind

from . import scoring
from .models import GoldItem, GoldSettings, PaymentDecision, WorkerScore


class GoldItemSerializer(serializers.ModelSerializer):
    concept = serializers.SlugRelatedField(slug_field="wnid", read_only=True)

    class Meta:
        model = GoldItem
        fields = ["id", "kind", "concept", "image", "box", "answer", "explanation", "source", "created_at"]
        read_only_fields = fields


class GoldItemCreateSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=QuestionKind.choices, default=QuestionKind.IMAGE_VERIFY)
    concept = serializers.CharField(help_text="wnid of the concept.")
    image = id_integer()
    box = id_integer(required=False, allow_null=True)
    answer = serializers.BooleanField()
    explanation = serializers.CharField(required=False, allow_blank=True, max_length=300, default="")


class WorkerScoreSerializer(serializers.ModelSerializer):
    worker = serializers.IntegerField(source="worker_id")
    username = serializers.CharField(source="worker.user.username")
    blocked = serializers.SerializerMethodField()

    class Meta:
        model = WorkerScore
        fields = [
            "worker",
            "username",
            "kind",
            "answered",
            "correct",
            "mean",
            "lower",
            "p_below",
            "qualified",
            "blocked",
        ]

    def get_blocked(self, row) -> bool:
        """Blocked in the dataset: a block covers every kind, whichever score triggered it."""
        return row.worker_id in self.context.get("blocked", set())


class PaymentDecisionSerializer(serializers.ModelSerializer):
    class Meta:
        model = PaymentDecision
        fields = ["id", "assignment", "worker", "recommendation", "reason", "created_at"]


class GoldSettingsSerializer(ColumnBoundsMixin, serializers.ModelSerializer):
    class Meta:
        model = GoldSettings
        fields = [
            "rate",
            "qualification_size",
            "qualification_pass",
            "qualification_attempts",
            "qualification_cooldown",
            "prior_a",
            "prior_b",
            "block_threshold",
            "block_confidence",
            "block_min_answers",
            "block_rule",
            "draw_block_threshold",
            "bonus_lower",
            "seed",
        ]
        extra_kwargs = {
            "rate": {"min_value": 0.0, "max_value": 0.99},
            # A Beta prior worth more than a few hundred answers would drown every worker's record.
            "prior_a": {"min_value": 0.01, "max_value": 1000.0},
            "prior_b": {"min_value": 0.01, "max_value": 1000.0},
            "qualification_size": {"max_value": 200},
            "qualification_attempts": {"max_value": 100},
            "qualification_cooldown": {"max_value": 365 * 24 * 3600},
            "block_min_answers": {"max_value": 10_000},
            "block_threshold": {"min_value": 0.0, "max_value": 1.0},
            "draw_block_threshold": {"min_value": 0.0, "max_value": 1.0},
            "block_confidence": {"min_value": 0.5, "max_value": 0.9999},
            "bonus_lower": {"min_value": 0.0, "max_value": 1.0},
        }

    def validate(self, attrs):
        size = attrs.get("qualification_size", getattr(self.instance, "qualification_size", 0))
        passing = attrs.get("qualification_pass", getattr(self.instance, "qualification_pass", 0))
        if passing > size:
            raise serializers.ValidationError({"qualification_pass": "cannot exceed qualification_size"})
        if size:
            chance = scoring.qualification_chance(size, passing)
            if chance >= scoring.DEFAULT_QUALIFICATION_CHANCE:
                needed = scoring.qualification_pass_needed(size)
                fix = (
                    f"require at least {needed} of {size}"
                    if needed is not None
                    else "use at least 7 items (all of them right)"
                )
                raise serializers.ValidationError(
                    {
                        "qualification_pass": f"a worker answering at random would pass {passing} of {size} "
                        f"{chance:.1%} of the time (the most allowed is "
                        f"{scoring.DEFAULT_QUALIFICATION_CHANCE:.0%}): {fix}"
                    }
                )
        return attrs
