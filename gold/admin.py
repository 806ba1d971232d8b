"""Admin pages of gold: items (each saved with its pool task and counted in the tally), scores, settings, blocks,
payments."""

from django.contrib import admin
from django.db import transaction

from .models import Block, GoldItem, GoldSettings, PaymentDecision, WorkerScore
from .serving import gold_pool_fill
from .tally import gold_tally_recount


@admin.register(GoldItem)
class GoldItemAdmin(admin.ModelAdmin):
    list_display = ["id", "dataset", "kind", "concept", "image", "answer", "source"]
    list_filter = ["dataset", "kind", "source"]
    raw_id_fields = ["image", "box", "concept"]
    exclude = ["task"]

    # Items added, moved or deleted here pass by the services, so the gold tally of every dataset they touch is
    # counted again (gold.tally) in the same transaction.
    def save_model(self, request, obj, form, change):
        with transaction.atomic():
            before = GoldItem.objects.filter(pk=obj.pk).values_list("dataset_id", flat=True).first()
            super().save_model(request, obj, form, change)
            gold_pool_fill(dataset_id=obj.dataset_id)
            _recount({obj.dataset_id, before})

    def delete_model(self, request, obj):
        with transaction.atomic():
            super().delete_model(request, obj)
            _recount({obj.dataset_id})

    def delete_queryset(self, request, queryset):
        with transaction.atomic():
            datasets = set(queryset.values_list("dataset_id", flat=True))
            super().delete_queryset(request, queryset)
            _recount(datasets)


def _recount(dataset_ids) -> None:
    for dataset_id in sorted(d for d in dataset_ids if d is not None):
        gold_tally_recount(dataset_id)


@admin.register(WorkerScore)
class WorkerScoreAdmin(admin.ModelAdmin):
    list_display = ["worker", "dataset", "kind", "answered", "correct", "mean", "lower", "qualified"]
    list_filter = ["dataset", "kind", "qualified"]


@admin.register(GoldSettings)
class GoldSettingsAdmin(admin.ModelAdmin):
    def save_model(self, request, obj, form, change):
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            gold_pool_fill(dataset_id=obj.dataset_id)


admin.site.register(Block)
admin.site.register(PaymentDecision)
