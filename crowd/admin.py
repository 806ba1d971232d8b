"""Admin for worker identities and crowd providers: bundle sizes, study links, MTurk HIT types and budgets
(set up here), and read-mostly views of bundles, HITs and MTurk assignments."""

from django.contrib import admin

from .models import (
    Bundle,
    BundleSize,
    MturkAssignment,
    MturkBudget,
    MturkHit,
    MturkHitType,
    MturkQualificationGrant,
    StudyLink,
    Worker,
)


@admin.register(Worker)
class WorkerAdmin(admin.ModelAdmin):
    list_display = ["id", "user", "source", "external_id", "created_at"]
    list_filter = ["source"]
    search_fields = ["user__username", "external_id"]
    list_select_related = ["user"]
    raw_id_fields = ["user"]


@admin.register(BundleSize)
class BundleSizeAdmin(admin.ModelAdmin):
    list_display = ["dataset", "kind", "size"]


@admin.register(StudyLink)
class StudyLinkAdmin(admin.ModelAdmin):
    list_display = ["key", "dataset", "kind", "participant_param", "active", "created_at"]
    readonly_fields = ["key"]


@admin.register(MturkHitType)
class MturkHitTypeAdmin(admin.ModelAdmin):
    list_display = ["title", "dataset", "kind", "reward", "bonus", "require_qualification", "hit_type_id"]
    readonly_fields = ["hit_type_id", "hit_type_fingerprint", "qualification_type_id"]


@admin.register(MturkBudget)
class MturkBudgetAdmin(admin.ModelAdmin):
    list_display = ["dataset", "cap"]


@admin.register(Bundle)
class BundleAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "provider",
        "external_ref",
        "worker",
        "dataset",
        "kind",
        "answered",
        "size",
        "state",
    ]
    list_filter = ["provider", "state"]
    readonly_fields = ["provider", "external_ref", "worker", "dataset", "kind", "size", "answered"]


@admin.register(MturkHit)
class MturkHitAdmin(admin.ModelAdmin):
    list_display = ["id", "hit_id", "hit_type", "batch", "max_assignments", "estimated_cost", "state"]
    list_filter = ["state"]


@admin.register(MturkAssignment)
class MturkAssignmentAdmin(admin.ModelAdmin):
    list_display = [
        "assignment_id",
        "hit",
        "mturk_worker_id",
        "status",
        "confirmed",
        "reward_paid",
        "bonus_paid",
        "fees_paid",
        "decided_at",
    ]
    list_filter = ["status", "confirmed"]


@admin.register(MturkQualificationGrant)
class MturkQualificationGrantAdmin(admin.ModelAdmin):
    list_display = ["qualification_type_id", "mturk_worker_id", "granted_at", "created_at"]
    readonly_fields = ["qualification_type_id", "mturk_worker_id", "granted_at"]
