"""Admin for worker identities."""

from django.contrib import admin

from .models import Worker


@admin.register(Worker)
class WorkerAdmin(admin.ModelAdmin):
    list_display = ["id", "user", "source", "external_id", "created_at"]
    list_filter = ["source"]
    search_fields = ["user__username", "external_id"]
    list_select_related = ["user"]
    raw_id_fields = ["user"]
