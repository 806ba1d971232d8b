from django.urls import path, re_path
from rest_framework.routers import SimpleRouter

from annotation.imagerefs import REF_PATTERN

from . import bundle_api, mturk_api, study_api, views

router = SimpleRouter()
router.trailing_slash = "/?"
router.register("api/v1/studies", study_api.StudyLinkViewSet, basename="study-link")

urlpatterns = [
    path("study/<str:key>/", views.study, name="study"),
    path("mturk/task/", views.mturk_task, name="mturk-task"),
    re_path(r"^api/v1/bundle/next/?$", bundle_api.BundleNextView.as_view(), name="bundle-next"),
    re_path(
        r"^api/v1/bundle/assignments/(?P<pk>[0-9]+)/submit/?$",
        bundle_api.BundleSubmitView.as_view(),
        name="bundle-submit",
    ),
    re_path(
        rf"^api/v1/bundle/images/(?P<ref>{REF_PATTERN})/?$",
        bundle_api.BundleImageView.as_view(),
        name="bundle-image",
    ),
    re_path(r"^api/v1/mturk/hits/?$", mturk_api.PublishView.as_view(), name="mturk-publish"),
    *router.urls,
]
