"""Request and response shapes of the benchmark API."""

from __future__ import annotations

from django.urls import reverse
from rest_framework import serializers

from .exporters import FORMATS
from .models import ExportJob, Submission


class ExportRequestSerializer(serializers.Serializer):
    format = serializers.ChoiceField(choices=FORMATS)
    split = serializers.ChoiceField(choices=("train", "val", "test", "all"), default="all")
    include_images = serializers.BooleanField(default=True)
    provenance = serializers.BooleanField(default=False)


class ExportJobSerializer(serializers.ModelSerializer):
    download_url = serializers.SerializerMethodField()
    split_version = serializers.IntegerField(source="split_version.number", allow_null=True, read_only=True)

    class Meta:
        model = ExportJob
        fields = [
            "id",
            "dataset",
            "split_version",
            "format",
            "split",
            "include_images",
            "provenance",
            "state",
            "progress",
            "total",
            "download_url",
            "manifest",
            "error",
            "created_at",
            "finished_at",
        ]
        read_only_fields = fields

    def get_download_url(self, job: ExportJob) -> str | None:
        if job.state != "done" or not job.file:
            return None
        url = reverse("export-file", kwargs={"pk": job.pk})
        request = self.context.get("request")
        return request.build_absolute_uri(url) if request is not None else url


class SubmissionUploadSerializer(serializers.Serializer):
    file = serializers.FileField(
        help_text="COCO results JSON (coco, voc07, voc12) or ILSVRC text (ilsvrc-det, -cls, -loc)."
    )


class SubmissionSerializer(serializers.ModelSerializer):
    team = serializers.CharField(source="team.name", read_only=True)

    class Meta:
        model = Submission
        fields = ["id", "team", "state", "scores", "errors", "created_at", "scored_at"]
        read_only_fields = fields


class SubmissionProblemsSerializer(serializers.Serializer):
    detail = serializers.CharField()
    problems = serializers.ListField(child=serializers.DictField(child=serializers.CharField()))


class LeaderboardRowSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    team = serializers.CharField()
    submission = serializers.IntegerField()
    metric = serializers.CharField()
    value = serializers.FloatField()
    scores = serializers.DictField(child=serializers.FloatField())
    created_at = serializers.DateTimeField()
