"""Admin for datasets, images, boxes and the queue. Assignments are facts: the admin only shows them."""

from django import forms
from django.contrib import admin
from django.db.models import Count

from . import examples, kinds
from .models import Assignment, Box, BoxJob, ConceptExample, Dataset, Image, Task


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ["name", "image_count", "created_at"]
    search_fields = ["name"]
    filter_horizontal = ["organizers"]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(image_count=Count("images"))

    @admin.display(ordering="image_count", description="images")
    def image_count(self, dataset) -> int:
        return dataset.image_count


@admin.register(Image)
class ImageAdmin(admin.ModelAdmin):
    list_display = ["id", "original_name", "dataset", "width", "height", "near_duplicate_of"]
    list_filter = ["dataset", ("near_duplicate_of", admin.EmptyFieldListFilter)]
    search_fields = ["original_name", "sha256", "source"]
    list_select_related = ["dataset", "near_duplicate_of"]
    raw_id_fields = ["near_duplicate_of"]
    # The hashes are computed from the stored bytes at ingestion; editing them would break duplicate checks.
    readonly_fields = ["sha256", "phash", "width", "height", "created_at"]


@admin.register(Box)
class BoxAdmin(admin.ModelAdmin):
    list_display = ["id", "image", "concept", "x1", "y1", "x2", "y2", "state", "drawn_by"]
    list_filter = ["state"]
    search_fields = ["concept__wnid", "concept__name"]
    list_select_related = ["image", "concept", "drawn_by"]
    raw_id_fields = ["image", "concept", "drawn_by"]


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "kind",
        "state",
        "priority",
        "answers_count",
        "answers_wanted",
        "dataset",
        "concept",
    ]
    list_filter = ["kind", "state", "dataset"]
    list_select_related = ["dataset", "concept"]
    raw_id_fields = ["image", "concept", "box", "dataset"]
    readonly_fields = ["answers_count", "lease_expires_at", "result", "created_at", "updated_at"]


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    """Read-only: answers are append-only facts (a submitted assignment is never edited or deleted)."""

    list_display = ["id", "task", "worker", "state", "leased_at", "expires_at", "submitted_at"]
    list_filter = ["state", "task__kind"]
    list_select_related = ["task", "worker"]
    search_fields = ["worker__external_id", "worker__user__username"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(BoxJob)
class BoxJobAdmin(admin.ModelAdmin):
    """Box jobs change only through the pipeline's services; the admin shows them and their event log."""

    list_display = ["id", "image", "concept", "status", "review_reason", "updated_at"]
    list_filter = ["status", "review_reason", "dataset"]
    list_select_related = ["image", "concept"]
    raw_id_fields = ["image", "concept"]
    readonly_fields = [f.name for f in BoxJob._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class ConceptExampleAddForm(forms.ModelForm):
    """Adding an example from the admin: the image is checked as API uploads are, then stored by the service."""

    upload = forms.FileField(help_text="The example image; checked as uploads are (size, pixels, format).")

    class Meta:
        model = ConceptExample
        fields = ["dataset", "concept", "kind", "polarity", "caption"]

    def clean(self):
        data = super().clean()
        if data.get("kind") and data["kind"] not in kinds.names():
            self.add_error("kind", f"unknown task kind; known kinds: {', '.join(kinds.names())}")
        upload = data.get("upload")
        if upload and data.get("dataset"):
            try:
                examples.example_check(dataset=data["dataset"], data=upload.read(), name=upload.name)
            except examples.ExampleRefused as exc:
                self.add_error("upload", str(exc))
            upload.seek(0)
        return data


@admin.register(ConceptExample)
class ConceptExampleAdmin(admin.ModelAdmin):
    list_display = ["id", "dataset", "concept", "kind", "polarity", "caption", "state", "created_at"]
    list_filter = ["state", "polarity", "kind", "dataset"]
    search_fields = ["concept__wnid", "concept__name", "caption"]
    list_select_related = ["dataset", "concept"]
    raw_id_fields = ["concept"]
    readonly_fields = ["file", "width", "height", "sha256", "created_by", "created_at", "removed_at"]

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            kwargs["form"] = ConceptExampleAddForm
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["dataset", "concept", "kind", "polarity", "caption", "upload"]
        return super().get_fields(request, obj)

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else [*self.readonly_fields, "dataset", "concept", "kind", "polarity"]

    def save_model(self, request, obj, form, change):
        if change:
            return super().save_model(request, obj, form, change)
        data = form.cleaned_data
        upload = data["upload"]
        try:
            created = examples.example_add(
                dataset=data["dataset"],
                concept=data["concept"],
                kind=data["kind"],
                polarity=data["polarity"],
                data=upload.read(),
                name=upload.name.rsplit(".", 1)[0][:100],
                caption=data.get("caption", ""),
                user=request.user,
            )
        except examples.ExampleRefused as exc:
            raise forms.ValidationError(str(exc)) from None
        obj.pk = created.pk  # the admin redirects to the stored example
