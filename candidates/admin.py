from django.contrib import admin

from .models import Candidate, CandidateImport, CandidateRow, SourceBucket


@admin.register(CandidateImport)
class CandidateImportAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "dataset",
        "source_name",
        "state",
        "total",
        "stored",
        "duplicates",
        "skipped",
        "failed",
    )
    list_filter = ("state",)


@admin.register(CandidateRow)
class CandidateRowAdmin(admin.ModelAdmin):
    list_display = ("id", "job", "line", "url", "concept", "state", "reason")
    list_filter = ("state",)
    raw_id_fields = ("job", "image", "concept")


@admin.register(Candidate)
class CandidateAdmin(admin.ModelAdmin):
    list_display = ("id", "dataset", "concept", "image", "query", "source")
    raw_id_fields = ("image", "row", "concept")


@admin.register(SourceBucket)
class SourceBucketAdmin(admin.ModelAdmin):
    list_display = ("id", "dataset", "bucket", "endpoint_url", "access_key_id", "created_at")
    exclude = ("secret_sealed",)  # register through the API, which seals the secret
