from django.contrib import admin

from .models import Block, GoldItem, GoldSettings, PaymentDecision, WorkerScore


@admin.register(GoldItem)
class GoldItemAdmin(admin.ModelAdmin):
    list_display = ["id", "dataset", "kind", "concept", "image", "answer", "source"]
    list_filter = ["dataset", "kind", "source"]
    raw_id_fields = ["image", "box", "concept"]


@admin.register(WorkerScore)
class WorkerScoreAdmin(admin.ModelAdmin):
    list_display = ["worker", "dataset", "kind", "answered", "correct", "mean", "lower", "qualified"]
    list_filter = ["dataset", "kind", "qualified"]


admin.site.register(GoldSettings)
admin.site.register(Block)
admin.site.register(PaymentDecision)
