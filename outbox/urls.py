from django.urls import re_path

from . import api

urlpatterns = [
    re_path(r"^background-work/?$", api.MessageListView.as_view(), name="background-work"),
    re_path(
        r"^background-work/(?P<pk>[0-9]+)/retry/?$",
        api.MessageRetryView.as_view(),
        name="background-work-retry",
    ),
]
