from django.urls import re_path

from . import api

urlpatterns = [
    re_path(
        r"^datasets/(?P<pk>[0-9]+)/multilabel/?$", api.MultilabelView.as_view(), name="dataset-multilabel"
    ),
]
