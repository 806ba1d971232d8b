from django.urls import re_path
from rest_framework.routers import SimpleRouter

from . import api, vote_api

router = SimpleRouter()
router.trailing_slash = "/?"  # both /api/v1/x and /api/v1/x/ work, as for annotation's dataset views
# Basename "dataset", as the action had on annotation's DatasetViewSet: the URL name stays.
router.register("datasets", vote_api.DatasetVotesViewSet, basename="dataset")

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
        r"^datasets/(?P<dataset_id>[0-9]+)/consensus-standing/?$",
        api.StandingView.as_view(),
        name="consensus-standing",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/decisions/?$", api.DecisionListView.as_view(), name="decisions"
    ),
    re_path(r"^questions/(?P<pk>[0-9]+)/?$", api.QuestionDetailView.as_view(), name="question-detail"),
    re_path(
        # Any wnid without a slash: WordNet ids, and the local "q:slug" concepts of hierarchy question nodes.
        r"^concepts/(?P<wnid>[^/]+)/calibration/?$",
        api.CalibrationTableView.as_view(),
        name="concept-calibration",
    ),
    *router.urls,
]
