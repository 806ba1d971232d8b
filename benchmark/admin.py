"""Admin for split versions, export jobs, and challenges with their teams and submissions."""

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError

from .challenges import challenge_validate
from .models import Challenge, ExportJob, SplitVersion, Submission, Team
from .services import BenchmarkError


@admin.register(SplitVersion)
class SplitVersionAdmin(admin.ModelAdmin):
    list_display = ["dataset", "number", "seed", "frozen", "created_at"]
    list_filter = ["dataset", "frozen"]
    readonly_fields = ["dataset", "number", "seed", "ratios", "source_rules", "manifest", "created_at"]


@admin.register(ExportJob)
class ExportJobAdmin(admin.ModelAdmin):
    list_display = ["id", "dataset", "format", "split", "state", "progress", "created_at"]
    list_filter = ["state", "format"]
    list_select_related = ["dataset"]
    readonly_fields = ["manifest", "error", "file", "progress", "total", "finished_at"]


class ChallengeForm(forms.ModelForm):
    class Meta:
        model = Challenge
        fields = ["name", "dataset", "split_version", "protocol", "submissions_per_window", "window_days"]

    def clean(self):
        data = super().clean()
        if data.get("dataset") and data.get("split_version"):
            try:
                challenge_validate(Challenge(**{k: v for k, v in data.items() if k in self.Meta.fields}))
            except BenchmarkError as exc:
                raise ValidationError(str(exc)) from None
        return data


@admin.register(Challenge)
class ChallengeAdmin(admin.ModelAdmin):
    form = ChallengeForm
    list_display = ["name", "dataset", "split_version", "protocol", "created_at"]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name", "challenge"]
    filter_horizontal = ["members"]


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ["id", "team", "state", "created_at", "scored_at"]
    list_filter = ["state"]
    readonly_fields = ["team", "submitted_by", "file", "state", "scores", "errors", "created_at", "scored_at"]
