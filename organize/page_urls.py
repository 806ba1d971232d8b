from django.urls import path

from . import views

urlpatterns = [
    path("organize/", views.datasets, name="organize"),
    path("organize/datasets/<int:dataset_id>/", views.dataset_home, name="organize-dataset"),
    path("organize/datasets/<int:dataset_id>/images/", views.dataset_images, name="organize-images"),
    path(
        "organize/datasets/<int:dataset_id>/images/<int:image_id>/",
        views.dataset_image,
        name="organize-image",
    ),
    path("organize/datasets/<int:dataset_id>/classes/", views.dataset_classes, name="organize-classes"),
    path(
        "organize/datasets/<int:dataset_id>/candidates/",
        views.dataset_candidates,
        name="organize-candidates",
    ),
    path(
        "organize/datasets/<int:dataset_id>/predictions/",
        views.dataset_predictions,
        name="organize-predictions",
    ),
    path("organize/datasets/<int:dataset_id>/benchmark/", views.dataset_benchmark, name="organize-benchmark"),
    path("organize/datasets/<int:dataset_id>/quality/", views.dataset_quality, name="organize-quality"),
    path(
        "organize/datasets/<int:dataset_id>/statistics/",
        views.dataset_statistics,
        name="organize-statistics",
    ),
    path("organize/datasets/<int:dataset_id>/settings/", views.dataset_settings, name="organize-settings"),
    path("organize/datasets/<int:dataset_id>/crowds/", views.dataset_crowds, name="organize-crowds"),
    path("organize/datasets/<int:dataset_id>/people/", views.dataset_people, name="organize-people"),
    path(
        "organize/datasets/<int:dataset_id>/people/<int:worker_id>/",
        views.dataset_worker,
        name="organize-worker",
    ),
    path("invite/<str:token>/", views.invitation_accept, name="invitation-accept-page"),
]
