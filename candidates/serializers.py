"""Shapes of the candidate import API."""

from __future__ import annotations

from rest_framework import serializers


class ImportUploadSerializer(serializers.Serializer):
    file = serializers.FileField(
        allow_empty_file=True,
        help_text="A .csv (header url,concept[,query,source]) or .jsonl file of (url, concept, query, source) rows.",
    )


class FailureSerializer(serializers.Serializer):
    line = serializers.IntegerField()
    url = serializers.CharField()
    reason = serializers.CharField()


class ImportProgressSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    dataset = serializers.IntegerField()
    source_name = serializers.CharField()
    state = serializers.CharField(help_text="queued, running or done.")
    total = serializers.IntegerField()
    done = serializers.IntegerField(help_text="Rows settled so far (stored + duplicates + skipped + failed).")
    stored = serializers.IntegerField()
    duplicates = serializers.IntegerField(help_text="Rows whose bytes were already in the dataset.")
    skipped = serializers.IntegerField(help_text="Rows whose URL an earlier import of the dataset fetched.")
    failed = serializers.IntegerField()
    failures = FailureSerializer(many=True, help_text="The first failed rows with their reasons.")
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


class QueryPrecisionSerializer(serializers.Serializer):
    query = serializers.CharField()
    found = serializers.IntegerField(help_text="Pool entries the query found.")
    decided = serializers.IntegerField(help_text="Of them, images with a final label for the concept.")
    present = serializers.IntegerField(help_text="Of those, images the label says show the concept.")
    precision = serializers.FloatField(
        allow_null=True, help_text="present / decided; null before any decision."
    )


class PoolSummarySerializer(serializers.Serializer):
    wnid = serializers.CharField()
    name = serializers.CharField()
    entries = serializers.IntegerField(help_text="Pool entries: one per (image, query) that found it.")
    images = serializers.IntegerField(help_text="Distinct images in the pool.")
    queries = serializers.IntegerField(help_text="Distinct queries that found them.")


class CandidateQuerySerializer(serializers.Serializer):
    wnid = serializers.CharField()
    query = serializers.CharField()
    kind = serializers.CharField(help_text="synonym, parent (a parent-gloss word added) or translation.")
    language = serializers.CharField()


class SourceBucketSerializer(serializers.Serializer):
    """A bucket registered as a source of the dataset's `s3://` candidate rows. The secret is write-only."""

    id = serializers.IntegerField(read_only=True)
    bucket = serializers.CharField(max_length=63, help_text="The bucket's name (s3://NAME/...).")
    endpoint_url = serializers.CharField(
        max_length=200,
        required=False,
        allow_blank=True,
        default="",
        help_text="Empty: the platform's S3 endpoint; otherwise one the operator approved.",
    )
    region = serializers.CharField(max_length=50, required=False, allow_blank=True, default="")
    access_key_id = serializers.CharField(
        max_length=128,
        required=False,
        allow_blank=True,
        default="",
        help_text="With secret_access_key: your own key that can read the bucket. Both empty: the platform's "
        "credentials, only for a bucket the operator granted to this dataset.",
    )
    secret_access_key = serializers.CharField(
        max_length=256, required=False, allow_blank=True, default="", write_only=True, trim_whitespace=False
    )
    credentials = serializers.CharField(read_only=True, help_text="own (an access key) or granted.")
    created_at = serializers.DateTimeField(read_only=True)
