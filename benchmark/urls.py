from django.urls import re_path

from . import api

urlpatterns = [
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/exports/?$",
        api.DatasetExportsView.as_view(),
        name="dataset-exports",
    ),
    re_path(r"^exports/(?P<pk>[0-9]+)/?$", api.ExportJobView.as_view(), name="export-detail"),
    re_path(r"^exports/(?P<pk>[0-9]+)/file/?$", api.ExportFileView.as_view(), name="export-file"),
    re_path(
        r"^challenges/(?P<pk>[0-9]+)/submissions/?$",
        api.SubmissionsView.as_view(),
        name="challenge-submissions",
    ),
    re_path(
        r"^challenges/(?P<pk>[0-9]+)/leaderboard/?$",
        api.LeaderboardView.as_view(),
        name="challenge-leaderboard",
    ),
]
