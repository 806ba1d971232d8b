"""Organizer workspace endpoints under /api/v1/ (progress, audit, people)."""

from django.urls import re_path

from . import (
    api,
    classes_api,
    confusable_api,
    image_api,
    people_api,
    quality_api,
    review_api,
    splits_api,
    worker_history,
    workers_api,
)

urlpatterns = [
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/progress/?$",
        api.DatasetProgressView.as_view(),
        name="dataset-progress",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/audit/?$", api.DatasetAuditView.as_view(), name="dataset-audit"
    ),
    re_path(r"^datasets/(?P<dataset_id>[0-9]+)/cost/?$", api.DatasetCostView.as_view(), name="dataset-cost"),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/cost-settings/?$",
        api.CostSettingsView.as_view(),
        name="cost-settings",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/invitations/?$",
        people_api.DatasetInvitationsView.as_view(),
        name="dataset-invitations",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/concepts/?$",
        classes_api.DatasetConceptsView.as_view(),
        name="dataset-concepts",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/people/?$",
        workers_api.DatasetWorkersView.as_view(),
        name="dataset-people",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/people/(?P<worker_id>[0-9]+)/block/?$",
        workers_api.WorkerBlockView.as_view(),
        name="worker-block",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/people/(?P<worker_id>[0-9]+)/unblock/?$",
        workers_api.WorkerUnblockView.as_view(),
        name="worker-unblock",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/split-versions/?$",
        splits_api.SplitVersionsView.as_view(),
        name="split-versions",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/split-versions/(?P<number>[0-9]+)/freeze/?$",
        splits_api.SplitFreezeView.as_view(),
        name="split-version-freeze",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/review/?$",
        review_api.DatasetReviewView.as_view(),
        name="dataset-review",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/quality/?$",
        quality_api.DatasetQualityView.as_view(),
        name="dataset-quality",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/images/(?P<image_id>[0-9]+)/?$",
        image_api.DatasetImageDetailView.as_view(),
        name="dataset-image-detail",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/people/(?P<worker_id>[0-9]+)/?$",
        worker_history.WorkerHistoryView.as_view(),
        name="worker-history",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/confusable-pairs/?$",
        confusable_api.ConfusablePairsView.as_view(),
        name="confusable-pairs",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/confusable-pairs/(?P<pair_id>[0-9]+)/?$",
        confusable_api.ConfusablePairDetailView.as_view(),
        name="confusable-pair-detail",
    ),
    re_path(
        r"^hierarchies/(?P<hierarchy_id>[0-9]+)/tree/?$",
        classes_api.HierarchyTreeView.as_view(),
        name="hierarchy-tree",
    ),
    re_path(r"^hierarchy-uploads/?$", classes_api.HierarchyUploadView.as_view(), name="hierarchy-upload"),
    re_path(r"^invitations/accept/?$", people_api.InvitationAcceptView.as_view(), name="invitation-accept"),
]
