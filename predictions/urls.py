from django.urls import re_path

from . import api

urlpatterns = [
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/prediction-sets/?$",
        api.PredictionSetListView.as_view(),
        name="prediction-sets",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/prediction-sets/push/?$",
        api.PredictionPushView.as_view(),
        name="prediction-push",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/prediction-sets/(?P<prediction_set_id>[0-9]+)/?$",
        api.PredictionSetView.as_view(),
        name="prediction-set",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/prediction-sets/(?P<prediction_set_id>[0-9]+)/thresholds/?$",
        api.PredictionSetThresholdsView.as_view(),
        name="prediction-set-thresholds",
    ),
]
