"""Admin pages: organizers edit the confusable pairs; items and decisions are read-only audit views."""

from django.contrib import admin

from .models import ConfusablePair, ReviewDecision, ReviewItem, ScanState


@admin.register(ConfusablePair)
class ConfusablePairAdmin(admin.ModelAdmin):
    list_display = ("id", "dataset", "concept_a", "concept_b", "note")
    raw_id_fields = ("dataset", "concept_a", "concept_b")


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(ReviewItem)
class ReviewItemAdmin(ReadOnlyAdmin):
    list_display = ("id", "kind", "dataset", "box_a", "box_b", "iou", "priority", "state", "leased_to")
    list_filter = ("kind", "state", "confusable")


@admin.register(ReviewDecision)
class ReviewDecisionAdmin(ReadOnlyAdmin):
    list_display = ("id", "item", "decision", "reviewer", "created_at", "undoes")
    list_filter = ("decision",)


@admin.register(ScanState)
class ScanStateAdmin(ReadOnlyAdmin):
    list_display = ("dataset", "last_finished_at", "last_boxes_checked", "last_pairs_found")
