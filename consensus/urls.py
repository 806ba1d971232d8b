from django.urls import re_path

from . import api

urlpatterns = [
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/consensus-settings/?$",
        api.ConsensusSettingsView.as_view(),
        name="consensus-settings",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/verification/?$",
        api.VerificationView.as_view(),
        name="verification",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/decisions/?$", api.DecisionListView.as_view(), name="decisions"
    ),
    re_path(r"^questions/(?P<pk>[0-9]+)/?$", api.QuestionDetailView.as_view(), name="question-detail"),
    re_path(
        r"^concepts/(?P<wnid>[A-Za-z0-9_.:-]+)/calibration/?$",
        api.CalibrationTableView.as_view(),
        name="concept-calibration",
    ),
]
