from django.urls import re_path
from rest_framework.routers import SimpleRouter

from . import api

router = SimpleRouter()
router.trailing_slash = "/?"  # both /api/v1/x and /api/v1/x/ work, as for annotation's dataset views
# Basename "dataset", as the actions had on annotation's DatasetViewSet: the URL names stay.
router.register("datasets", api.DatasetBoxesViewSet, basename="dataset")

urlpatterns = [
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/box-settings/?$",
        api.BoxSettingsView.as_view(),
        name="box-settings",
    ),
    *router.urls,
]
