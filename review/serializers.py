"""API representations of review items, decisions and the queue summary."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotation.models import Box
from config.bounds import id_integer
from hierarchy.models import Concept

from . import resolvers
from .decisions import decisions_for, held_decision, undo_refusal
from .models import Decision, ReviewDecision, ReviewItem


class ConceptBriefSerializer(serializers.ModelSerializer):
    class Meta:
        model = Concept
        fields = ["id", "wnid", "name"]


class ReviewBoxSerializer(serializers.ModelSerializer):
    concept = ConceptBriefSerializer()

    class Meta:
        model = Box
        fields = ["id", "x1", "y1", "x2", "y2", "state", "concept"]


class ReviewImageSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    width = serializers.IntegerField()
    height = serializers.IntegerField()
    url = serializers.CharField()


class DecisionChoiceSerializer(serializers.Serializer):
    value = serializers.CharField()
    label = serializers.CharField()
    key = serializers.CharField(help_text="Keyboard shortcut on the reviewer page.")


class ReviewVotesSerializer(serializers.Serializer):
    yes = serializers.IntegerField()
    no = serializers.IntegerField()
    p = serializers.FloatField(allow_null=True, help_text="P(positive) after the last vote, when known.")


class ReviewHeldSerializer(serializers.Serializer):
    """A decision taken on the item that waits for a second, agreeing one before the pipeline acts on it."""

    reason = serializers.CharField(
        help_text="Why it is held: against_crowd (a verdict against a clear lean)."
    )
    decision = serializers.CharField(help_text="The held decision: taking it again confirms it.")
    p = serializers.FloatField(allow_null=True, help_text="The crowd's P(yes) at the time.")
    message = serializers.CharField(help_text="What to tell the reviewer.")


class ReviewContextSerializer(serializers.Serializer):
    """What the reviewer needs to decide an ambiguous item, as the pipeline that sent it describes it."""

    kind = serializers.CharField(
        help_text="What is asked: the question's kind (image_verify, hierarchy, box_quality, box_coverage) or "
        "box_job."
    )
    question = serializers.CharField(help_text="What the reviewer answers.")
    concept = ConceptBriefSerializer(allow_null=True)
    votes = ReviewVotesSerializer(allow_null=True, help_text="The crowd's votes, for a question at its cap.")
    boxes = ReviewBoxSerializer(many=True, help_text="Boxes to show besides box_a (a box job's boxes).")
    held = ReviewHeldSerializer(
        allow_null=True,
        required=False,
        help_text="A decision already taken on this item that waits for a second, agreeing one (null if none).",
    )


class ReviewItemSerializer(serializers.ModelSerializer):
    box_a = ReviewBoxSerializer(allow_null=True)
    box_b = ReviewBoxSerializer(allow_null=True)
    image = serializers.SerializerMethodField()
    context = serializers.SerializerMethodField()
    decisions = serializers.SerializerMethodField()

    class Meta:
        model = ReviewItem
        fields = [
            "id",
            "kind",
            "state",
            "dataset",
            "iou",
            "confusable",
            "priority",
            "reason",
            "subject",
            "lease_expires_at",
            "image",
            "box_a",
            "box_b",
            "context",
            "decisions",
        ]

    @extend_schema_field(ReviewImageSerializer(allow_null=True))
    def get_image(self, item: ReviewItem):
        image = item.image if item.image_id is not None else (item.box_a.image if item.box_a else None)
        if image is None:
            return None
        return {
            "id": image.pk,
            "width": image.width,
            "height": image.height,
            "url": reverse("image-file", args=[image.pk]),
        }

    @extend_schema_field(ReviewContextSerializer(allow_null=True))
    def get_context(self, item: ReviewItem):
        resolver = resolvers.get(item.subject)
        if resolver is None or resolver.describe is None:
            return None
        return ReviewContextSerializer({**resolver.describe(item), "held": held_decision(item)}).data

    @extend_schema_field(DecisionChoiceSerializer(many=True))
    def get_decisions(self, item: ReviewItem):
        return [
            {"value": value, "label": Decision(value).label, "key": str(n)}
            for n, value in enumerate(decisions_for(item), start=1)
        ]


# What a reviewer may send as a decision (an undo has its own endpoint).
DECIDE_CHOICES = [c for c in Decision.values if c != Decision.UNDO]


class DecideSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=DECIDE_CHOICES)
    new_concept = serializers.SlugRelatedField(
        slug_field="wnid",
        queryset=Concept.objects.all(),
        required=False,
        allow_null=True,
        help_text="wnid of the new class for relabel_a/relabel_b (default: the other box's class).",
    )
    reason = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)


class DecideManySerializer(serializers.Serializer):
    items = serializers.ListField(
        child=id_integer(),
        min_length=1,
        max_length=200,
        help_text="Review item ids (at most 200), decided in this order; repeats are ignored.",
    )
    decision = serializers.ChoiceField(choices=DECIDE_CHOICES)
    reason = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)


class DecideManyOutcomeSerializer(serializers.Serializer):
    item = serializers.IntegerField()
    status = serializers.ChoiceField(
        choices=["decided", "held", "already_decided", "refused"],
        help_text="decided: the decision was taken now; held: taken, and its pipeline waits for a second, "
        "agreeing one; already_decided: you took this decision on it before (nothing changed); refused: "
        "not decided, `detail` says why.",
    )
    decision = serializers.IntegerField(allow_null=True, help_text="The decision row, when there is one.")
    detail = serializers.CharField(allow_blank=True)


class DecideManyResultSerializer(serializers.Serializer):
    results = DecideManyOutcomeSerializer(many=True)
    decided = serializers.IntegerField(
        help_text="Items decided now or before (decided, held, already_decided)."
    )
    refused = serializers.IntegerField()


class UndoSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)


class ReviewDecisionSerializer(serializers.ModelSerializer):
    new_concept = serializers.SlugRelatedField(slug_field="wnid", read_only=True)
    undo_refused = serializers.SerializerMethodField(
        help_text="Why this decision cannot be undone (its pipeline has acted on it), or empty when it can."
    )

    class Meta:
        model = ReviewDecision
        fields = [
            "id",
            "item",
            "reviewer",
            "decision",
            "new_concept",
            "before",
            "after",
            "reason",
            "undoes",
            "undo_refused",
            "created_at",
        ]

    def get_undo_refused(self, decision) -> str:
        return "" if decision.decision == Decision.UNDO else undo_refusal(decision.item)
