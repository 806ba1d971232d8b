"""Request and response shapes of the benchmark API."""

from __future__ import annotations

from django.urls import reverse
from rest_framework import serializers

from config.bounds import bounded_integer, id_integer

from .exporters import FILE_NAMES, FORMATS, ORIGINAL_NAME_FORMATS
from .models import BlacklistEntry, BoxAttributes, DetectionSet, ExportJob, Submission, Viewpoint


class ExportRequestSerializer(serializers.Serializer):
    format = serializers.ChoiceField(choices=FORMATS)
    split = serializers.ChoiceField(choices=("train", "val", "test", "all"), default="all")
    include_images = serializers.BooleanField(default=True)
    provenance = serializers.BooleanField(default=False)
    include_provisional = serializers.BooleanField(
        default=False,
        help_text="Also write accepted boxes not final yet (overlap check pending, review item open); the "
        "manifest's `completeness.labels` then reads `provisional`. Default: final labels only.",
    )
    detection_set = serializers.SlugField(
        max_length=100,
        required=False,
        default="",
        allow_blank=True,
        help_text="Export only this detection set's classes (merged fine classes kept as attributes).",
    )
    file_names = serializers.ChoiceField(
        choices=FILE_NAMES,
        default="id",
        help_text="What the images are called inside the export: `id` (the zero-padded image id, every format) "
        "or `original` (COCO only: the name each image was uploaded with, its folder dropped; when several "
        "images share a name the first by split and id keeps it and the others get `-{id}` before the "
        "extension, compared case-insensitively). Every manifest lists each image's `file_name` and "
        "`original_name` either way.",
    )

    def validate(self, data):
        if data.get("file_names") == "original" and data["format"] not in ORIGINAL_NAME_FORMATS:
            raise serializers.ValidationError(
                {
                    "file_names": f"original file names are offered for {', '.join(ORIGINAL_NAME_FORMATS)} "
                    f"only: {data['format']} names its per-image files after the images"
                }
            )
        return data


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
            "include_provisional",
            "detection_set",
            "file_names",
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


class ExportJobListSerializer(ExportJobSerializer):
    """One row of a dataset's export history: the job without its manifest (which lists every file), with who
    asked for it."""

    requested_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)

    class Meta(ExportJobSerializer.Meta):
        fields = [f for f in ExportJobSerializer.Meta.fields if f != "manifest"] + ["requested_by"]
        read_only_fields = fields


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


class DetectionSetRequestSerializer(serializers.Serializer):
    name = serializers.SlugField(max_length=100)
    classes = serializers.ListField(
        child=serializers.RegexField(r"^n[0-9]{8}$", max_length=9), min_length=1, max_length=5000
    )
    merge = serializers.BooleanField(
        default=False, help_text="Export every dataset class below a named class as it (dog breeds as dog)."
    )
    max_area_share = serializers.FloatField(
        default=0.5,
        allow_null=True,
        min_value=0.0001,
        max_value=1.0,
        help_text="Drop classes whose objects average more of the image than this (ILSVRC DET: 0.5); "
        "null keeps every class.",
    )
    min_instances = bounded_integer(DetectionSet, "min_instances", default=0)


class DetectionSetSerializer(serializers.ModelSerializer):
    split_version = serializers.IntegerField(source="split_version.number", allow_null=True, read_only=True)

    class Meta:
        model = DetectionSet
        fields = [
            "id",
            "name",
            "classes",
            "merges",
            "max_area_share",
            "min_instances",
            "report",
            "split_version",
            "frozen",
            "created_at",
            "frozen_at",
        ]
        read_only_fields = fields


class ClassStatisticsSerializer(serializers.Serializer):
    concept_id = serializers.IntegerField()
    wnid = serializers.CharField()
    name = serializers.CharField()
    instances = serializers.IntegerField()
    images = serializers.IntegerField()
    mean_area_share = serializers.FloatField()
    median_area_share = serializers.FloatField()


class MergeTodoSerializer(serializers.Serializer):
    image = serializers.IntegerField()
    concept_id = serializers.IntegerField(source="class")
    boxed = serializers.ListField(child=serializers.IntegerField())
    owed = serializers.ListField(child=serializers.IntegerField())


class TodoJobsSerializer(serializers.Serializer):
    owed = serializers.IntegerField()
    created = serializers.IntegerField()
    existing = serializers.IntegerField()


class BlacklistRequestSerializer(serializers.Serializer):
    image = id_integer()
    wnid = serializers.RegexField(
        r"^n[0-9]{8}$", max_length=9, required=False, help_text="The class; omit for every class."
    )
    reason = serializers.CharField(max_length=200)


class BlacklistLiftSerializer(serializers.Serializer):
    image = id_integer()
    wnid = serializers.RegexField(
        r"^n[0-9]{8}$", max_length=9, required=False, help_text="The class; omit for the whole-image flag."
    )


class BlacklistEntrySerializer(serializers.ModelSerializer):
    wnid = serializers.CharField(source="concept.wnid", allow_null=True, read_only=True, default=None)

    class Meta:
        model = BlacklistEntry
        fields = ["id", "image", "wnid", "reason", "flagged_by", "created_at", "lifted_at"]
        read_only_fields = fields


class BoxAttributesRequestSerializer(serializers.Serializer):
    box = id_integer()
    difficult = serializers.BooleanField(required=False)
    truncated = serializers.BooleanField(required=False, allow_null=True)
    occluded = serializers.BooleanField(required=False)
    viewpoint = serializers.ChoiceField(choices=Viewpoint.choices, required=False)

    def validate(self, attrs):
        if len(attrs) == 1:
            raise serializers.ValidationError(
                "give at least one of difficult, truncated, occluded, viewpoint"
            )
        return attrs


class BoxAttributesSerializer(serializers.ModelSerializer):
    class Meta:
        model = BoxAttributes
        fields = ["id", "box", "difficult", "truncated", "occluded", "viewpoint", "set_by", "created_at"]
        read_only_fields = fields


class ReportPendingSerializer(serializers.Serializer):
    state = serializers.CharField(help_text="queued or running: ask again in a few seconds.")
    requested_at = serializers.DateTimeField()
    detail = serializers.CharField()


class ReportFailedSerializer(serializers.Serializer):
    detail = serializers.CharField()
