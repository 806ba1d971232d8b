from django.urls import path, re_path

from . import api, views

urlpatterns = [
    path("review/", views.review_page, name="review"),
    re_path(r"^api/v1/review/next/?$", api.NextItemView.as_view(), name="review-next"),
    re_path(r"^api/v1/review/summary/?$", api.SummaryView.as_view(), name="review-summary"),
    re_path(r"^api/v1/review/items/?$", api.ItemsView.as_view(), name="review-items"),
    re_path(r"^api/v1/review/decide/?$", api.DecideManyView.as_view(), name="review-decide-many"),
    re_path(r"^api/v1/review/items/(?P<pk>[0-9]+)/decide/?$", api.DecideView.as_view(), name="review-decide"),
    re_path(
        r"^api/v1/review/items/(?P<pk>[0-9]+)/release/?$", api.ReleaseView.as_view(), name="review-release"
    ),
    re_path(r"^api/v1/review/decisions/(?P<pk>[0-9]+)/undo/?$", api.UndoView.as_view(), name="review-undo"),
]
