"""The Quality page's endpoint: a dataset's calibration tables in use, precision estimated from gold, the
worker-accuracy histogram, votes needed per synset and the review load per synset, in one response
(`organize.quality`)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from config.roles import IsOrganizer

from .quality import dataset_quality
from .scoping import organizer_dataset


class CalibrationTableRefSerializer(serializers.Serializer):
    kind = serializers.CharField()
    wnid = serializers.CharField()
    name = serializers.CharField()
    table = serializers.IntegerField(
        help_text="The newest table's id; its cells: concepts/{wnid}/calibration."
    )
    versions = serializers.IntegerField(help_text="Tables built for this pair so far (the newest is in use).")


class ShareSerializer(serializers.Serializer):
    value = serializers.FloatField(allow_null=True)
    low = serializers.FloatField(allow_null=True, help_text="Wilson 95% interval.")
    high = serializers.FloatField(allow_null=True)


class GoldPrecisionSerializer(serializers.Serializer):
    kind = serializers.CharField()
    accepted = serializers.IntegerField(help_text="Gold subjects consensus accepted.")
    accepted_gold_yes = serializers.IntegerField()
    rejected = serializers.IntegerField(help_text="Gold subjects consensus rejected.")
    rejected_gold_no = serializers.IntegerField()
    precision = ShareSerializer()
    negative_predictive_value = ShareSerializer()


class GoldAccuracySerializer(serializers.Serializer):
    kind = serializers.CharField()
    answers = serializers.IntegerField()
    correct = serializers.IntegerField()
    accuracy = serializers.FloatField()
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)


class HistogramBinSerializer(serializers.Serializer):
    low = serializers.FloatField()
    high = serializers.FloatField()
    workers = serializers.IntegerField()


class SynsetVotesSerializer(serializers.Serializer):
    kind = serializers.CharField()
    wnid = serializers.CharField()
    name = serializers.CharField()
    questions = serializers.IntegerField(help_text="Decided production questions (review included).")
    votes = serializers.IntegerField()
    review = serializers.IntegerField(help_text="Questions the vote cap sent to review.")
    votes_per_question = serializers.FloatField()
    review_share = serializers.FloatField()


class ReviewLoadSerializer(serializers.Serializer):
    wnid = serializers.CharField()
    name = serializers.CharField()
    images = serializers.IntegerField(
        help_text="Images its decided image-level production questions are about (one question per image); "
        "for a synset only boxed, its box jobs."
    )
    votes = serializers.IntegerField(help_text="Votes of its decided production questions, every kind.")
    votes_per_image = serializers.FloatField()
    review_open = serializers.IntegerField(help_text="Questions waiting in review.")
    review_decided = serializers.IntegerField(help_text="Questions a reviewer decided.")
    review_items = serializers.IntegerField(help_text="Both: the questions that went to a person.")
    review_per_100_images = serializers.FloatField()


class QualitySerializer(serializers.Serializer):
    dataset = serializers.IntegerField()
    calibration_tables = CalibrationTableRefSerializer(many=True)
    gold_precision = GoldPrecisionSerializer(
        many=True,
        help_text="Gold items (not promoted from decisions) whose subject consensus decided, against gold.",
    )
    gold_answer_accuracy = GoldAccuracySerializer(
        many=True, help_text="The crowd's answers to gold questions."
    )
    worker_accuracy = HistogramBinSerializer(
        many=True, help_text="Workers by the posterior mean of their accuracy on all gold answers."
    )
    synsets = SynsetVotesSerializer(many=True, help_text="Votes needed per (question kind, synset).")
    hardest = SynsetVotesSerializer(many=True, help_text="Most votes per decided question first.")
    review_load = ReviewLoadSerializer(
        many=True, help_text="Reviewer items per 100 images per synset, the heaviest first."
    )


class DatasetQualityView(APIView):
    """The Quality page's figures; every plot on the page is drawn from these numbers."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=QualitySerializer)
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        return Response(QualitySerializer(dataset_quality(dataset)).data)
