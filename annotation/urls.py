from django.urls import re_path
from rest_framework.routers import SimpleRouter

from . import api, many_api
from .imagerefs import REF_PATTERN

router = SimpleRouter()
router.trailing_slash = "/?"  # both /api/v1/x and /api/v1/x/ work: clients differ
router.register("datasets", api.DatasetViewSet, basename="dataset")
router.register("assignments", api.AssignmentViewSet, basename="assignment")

urlpatterns = [
    re_path(r"^tasks/next/?$", api.NextTaskView.as_view(), name="task-next"),
    # Before the router's `assignments/{id}`, which would take "submit" for an id.
    re_path(r"^assignments/submit/?$", many_api.SubmitManyView.as_view(), name="assignments-submit-many"),
    re_path(r"^images/(?P<pk>[0-9]+)/file/?$", api.ImageFileView.as_view(), name="image-file"),
    re_path(
        rf"^task-images/(?P<ref>{REF_PATTERN})/?$", api.TaskImageFileView.as_view(), name="task-image-file"
    ),
    re_path(r"^examples/(?P<pk>[0-9]+)/file/?$", api.ExampleFileView.as_view(), name="example-file"),
    *router.urls,
]
