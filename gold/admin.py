"""Admin pages of gold: items (each saved with its pool task), scores, settings, blocks, payments."""

from django.contrib import admin
from django.db import transaction

from .models import Block, GoldItem, GoldSettings, PaymentDecision, WorkerScore
from .serving import gold_pool_fill


@admin.register(GoldItem)
class GoldItemAdmin(admin.ModelAdmin):
    list_display = ["id", "dataset", "kind", "concept", "image", "answer", "source"]
    list_filter = ["dataset", "kind", "source"]
    raw_id_fields = ["image", "box", "concept"]
    exclude = ["task"]

    def save_model(self, request, obj, form, change):
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            gold_pool_fill(dataset_id=obj.dataset_id)


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
