from django.urls import re_path

from . import api

urlpatterns = [
    re_path(r"^me/standing/?$", api.WorkerStandingView.as_view(), name="worker-standing"),
    re_path(r"^datasets/(?P<dataset_id>[0-9]+)/gold/?$", api.GoldItemListView.as_view(), name="gold-items"),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/gold/import/?$", api.GoldImportView.as_view(), name="gold-import"
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/gold-settings/?$",
        api.GoldSettingsView.as_view(),
        name="gold-settings",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/workers/?$", api.WorkerScoreListView.as_view(), name="gold-workers"
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/payments/?$",
        api.PaymentDecisionListView.as_view(),
        name="gold-payments",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/payments/decide/?$",
        api.PaymentDecideView.as_view(),
        name="gold-payments-decide",
    ),
]
