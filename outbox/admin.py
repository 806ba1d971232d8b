from django.contrib import admin, messages

from . import services
from .models import Message, MessageState


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ("id", "task_name", "args", "dataset", "state", "attempts", "created_at", "finished_at")
    list_filter = ("state", "task_name")
    readonly_fields = [f.name for f in Message._meta.fields]
    actions = ["retry"]

    @admin.action(description="Retry the selected parked work")
    def retry(self, request, queryset):
        parked = list(queryset.filter(state=MessageState.PARKED))
        for message in parked:
            services.message_retry(message)
        self.message_user(request, f"{len(parked)} queued again", messages.SUCCESS)

    def has_add_permission(self, request) -> bool:
        return False
