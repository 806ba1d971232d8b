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
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/class-statistics/?$",
        api.ClassStatisticsView.as_view(),
        name="dataset-class-statistics",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/detection-sets/?$",
        api.DetectionSetsView.as_view(),
        name="dataset-detection-sets",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/detection-sets/(?P<name>[-a-zA-Z0-9_]+)/todo/?$",
        api.DetectionSetTodoView.as_view(),
        name="detection-set-todo",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/detection-sets/(?P<name>[-a-zA-Z0-9_]+)/freeze/?$",
        api.DetectionSetFreezeView.as_view(),
        name="detection-set-freeze",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/blacklist/?$",
        api.BlacklistView.as_view(),
        name="dataset-blacklist",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/blacklist/lift/?$",
        api.BlacklistLiftView.as_view(),
        name="dataset-blacklist-lift",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/box-attributes/?$",
        api.BoxAttributesView.as_view(),
        name="dataset-box-attributes",
    ),
]
