"""The image page's endpoint: one image of an organizer's dataset with its boxes, its binary questions (votes
and decisions), Algorithm 1's answers and labels, its final labels and its review items, in a fixed number of
queries."""

from __future__ import annotations

from django.db.models import Prefetch, Q
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import Box, FinalLabel, Image
from config.errors import Conflict
from config.roles import IsOrganizer
from consensus.models import Question, QuestionDecision, Vote
from multilabel.models import LabelingAnswer, LeafLabel
from review.models import ReviewDecision, ReviewItem

from .dataset_delete import ImageInUse, image_delete
from .image_exclusion import image_exclude_set
from .scoping import organizer_dataset


class ImageBoxSerializer(serializers.ModelSerializer):
    concept = serializers.CharField(source="concept.wnid")
    concept_name = serializers.CharField(source="concept.name")
    drawn_by = serializers.CharField(source="drawn_by.user.username", default=None)
    final = serializers.SerializerMethodField()
    # Plain strings here: the models' choice sets are named enums where their own endpoints define them.
    state = serializers.CharField(help_text="annotation.BoxState: pending, accepted, rejected, removed.")
    provenance = serializers.CharField(
        help_text="annotation.BoxProvenance: worker, model (a proposal not accepted) or model+verified."
    )

    class Meta:
        model = Box
        fields = [
            "id",
            "concept",
            "concept_name",
            "x1",
            "y1",
            "x2",
            "y2",
            "state",
            "drawn_by",
            "provenance",
            "score",
            "final",
            "created_at",
        ]

    def get_final(self, box) -> bool:
        return hasattr(box, "final")


class ImageVoteSerializer(serializers.ModelSerializer):
    worker = serializers.IntegerField(source="worker_id")
    username = serializers.CharField(source="worker.user.username")
    voided = serializers.SerializerMethodField()

    class Meta:
        model = Vote
        fields = ["id", "worker", "username", "answer", "created_at", "voided"]

    def get_voided(self, vote) -> str | None:
        return vote.void.reason if hasattr(vote, "void") else None


class ImageDecisionSerializer(serializers.ModelSerializer):
    reviewer = serializers.CharField(source="reviewer.username", default=None)
    decision = serializers.CharField(help_text="accept, reject, review or reopened.")

    class Meta:
        model = QuestionDecision
        fields = ["id", "decision", "p", "yes_count", "no_count", "estimator", "reviewer", "created_at"]


class ImageQuestionSerializer(serializers.ModelSerializer):
    concept = serializers.CharField(source="concept.wnid")
    concept_name = serializers.CharField(source="concept.name")
    votes = ImageVoteSerializer(many=True)
    decisions = ImageDecisionSerializer(many=True)

    class Meta:
        model = Question
        fields = [
            "id",
            "kind",
            "concept",
            "concept_name",
            "box",
            "role",
            "state",
            "yes_count",
            "no_count",
            "p",
            "votes",
            "decisions",
        ]


class ImageLabelingAnswerSerializer(serializers.ModelSerializer):
    node = serializers.CharField(source="node.node_id")
    question = serializers.CharField(source="node.question")

    class Meta:
        model = LabelingAnswer
        fields = ["id", "node", "question", "present", "yes_votes", "no_votes", "created_at"]


class ImageLeafLabelSerializer(serializers.ModelSerializer):
    concept = serializers.CharField(source="concept.wnid")
    concept_name = serializers.CharField(source="concept.name")

    class Meta:
        model = LeafLabel
        fields = ["concept", "concept_name", "present", "source"]


class ImageFinalLabelSerializer(serializers.ModelSerializer):
    concept = serializers.CharField(source="concept.wnid")
    concept_name = serializers.CharField(source="concept.name")

    class Meta:
        model = FinalLabel
        fields = [
            "concept",
            "concept_name",
            "present",
            "source",
            "probability",
            "yes_count",
            "no_count",
            "box_count",
        ]


class ImageReviewDecisionSerializer(serializers.ModelSerializer):
    reviewer = serializers.CharField(source="reviewer.username")
    decision = serializers.CharField(
        help_text="review.Decision (distinct, duplicate_keep_a, ...) or an undo."
    )

    class Meta:
        model = ReviewDecision
        fields = ["id", "decision", "reviewer", "reason", "undoes", "created_at"]


class ImageReviewItemSerializer(serializers.ModelSerializer):
    decisions = ImageReviewDecisionSerializer(many=True)
    state = serializers.CharField(help_text="open, leased, decided or dismissed.")

    class Meta:
        model = ReviewItem
        fields = ["id", "kind", "state", "box_a", "box_b", "iou", "reason", "decisions"]


class ImageDetailSerializer(serializers.ModelSerializer):
    file_url = serializers.SerializerMethodField()
    # The lists `image_detail` attached: one query per kind of row.
    boxes = ImageBoxSerializer(many=True, source="boxes_list")
    questions = ImageQuestionSerializer(many=True, source="questions_list")
    labeling_answers = ImageLabelingAnswerSerializer(many=True, source="labeling_answers_list")
    leaf_labels = ImageLeafLabelSerializer(many=True, source="leaf_labels_list")
    final_labels = ImageFinalLabelSerializer(many=True, source="final_labels_list")
    review_items = ImageReviewItemSerializer(many=True, source="review_items_list")

    class Meta:
        model = Image
        fields = [
            "id",
            "dataset",
            "original_name",
            "width",
            "height",
            "near_duplicate_of",
            "source",
            "created_at",
            "excluded_at",
            "file_url",
            "boxes",
            "questions",
            "labeling_answers",
            "leaf_labels",
            "final_labels",
            "review_items",
        ]

    def get_file_url(self, image) -> str:
        return f"/api/v1/images/{image.pk}/file"


def image_detail(image: Image) -> Image:
    """The image with everything the page shows attached, one query per kind of row."""
    image.boxes_list = list(
        Box.objects.filter(image=image).select_related("concept", "drawn_by__user", "final").order_by("id")
    )
    image.questions_list = list(
        Question.objects.filter(image=image)
        .select_related("concept")
        .prefetch_related(
            Prefetch("votes", queryset=Vote.objects.select_related("worker__user", "void").order_by("id")),
            Prefetch(
                "decisions", queryset=QuestionDecision.objects.select_related("reviewer").order_by("id")
            ),
        )
        .order_by("id")
    )
    image.labeling_answers_list = list(
        LabelingAnswer.objects.filter(labeling__image=image).select_related("node").order_by("id")
    )
    image.leaf_labels_list = list(
        LeafLabel.objects.filter(image=image).select_related("concept").order_by("id")
    )
    image.final_labels_list = list(
        FinalLabel.objects.filter(image=image).select_related("concept").order_by("concept__wnid")
    )
    image.review_items_list = list(
        ReviewItem.objects.filter(Q(image=image) | Q(box_a__image=image) | Q(box_b__image=image))
        .prefetch_related(
            Prefetch("decisions", queryset=ReviewDecision.objects.select_related("reviewer").order_by("id"))
        )
        .distinct()
        .order_by("id")
    )
    return image


class DatasetImageDetailView(APIView):
    """One image of the dataset: its boxes, the votes and decisions of every question about it, Algorithm 1's
    answers, its final labels and its review items."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=ImageDetailSerializer)
    def get(self, request, dataset_id: int, image_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        image = get_object_or_404(Image.objects.filter(dataset=dataset), pk=image_id)
        return Response(ImageDetailSerializer(image_detail(image)).data)


class ImageDeletedSerializer(serializers.Serializer):
    deleted = serializers.IntegerField(help_text="The deleted image's id.")


class DatasetImageDeleteView(APIView):
    """Delete an image nobody has worked on (no task about it, no box on it), with its file
    (`organize/dataset_delete.py`); an image with work is kept (409, saying why, nothing deleted)."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(request=None, responses=ImageDeletedSerializer)
    def post(self, request, dataset_id: int, image_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        image = get_object_or_404(Image.objects.filter(dataset=dataset), pk=image_id)
        try:
            image_delete(image, actor=request.user)
        except ImageInUse as exc:
            raise Conflict(f"image {image_id} cannot be deleted: {exc}") from None
        return Response(ImageDeletedSerializer({"deleted": image_id}).data)


class ExclusionRequestSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")


class ImageExclusionSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    excluded = serializers.BooleanField()
    excluded_at = serializers.DateTimeField(allow_null=True)


class DatasetImageExcludeView(APIView):
    """Exclude an image (`exclude`) or include it again (`include`), with an optional reason for the audit
    trail (`organize/image_exclusion.py`): an excluded image's tasks are not leased, its open work is left out
    of progress and the review queue, and exports leave it out and name it (reason `excluded`). Any image may be
    excluded, one with answers too; nothing about it is deleted. Repeating it changes nothing."""

    permission_classes = [IsAuthenticated, IsOrganizer]
    excluded = True

    @extend_schema(request=ExclusionRequestSerializer, responses=ImageExclusionSerializer)
    def post(self, request, dataset_id: int, image_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        image = get_object_or_404(Image.objects.filter(dataset=dataset), pk=image_id)
        form = ExclusionRequestSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        image = image_exclude_set(
            image=image, excluded=self.excluded, reason=form.validated_data["reason"], actor=request.user
        )
        body = {"id": image.pk, "excluded": image.excluded_at is not None, "excluded_at": image.excluded_at}
        return Response(ImageExclusionSerializer(body).data)


class DatasetImageIncludeView(DatasetImageExcludeView):
    excluded = False
