"""Top-level URL map: API under /api/v1/, schema and docs, worker and reviewer pages, admin, the health probe."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from config.health import healthz
from config.login_throttle import SignInView, ThrottledAdminAuthenticationForm
from config.whoami import MeView

admin.site.login_form = ThrottledAdminAuthenticationForm
handler404 = "config.errors.not_found"  # JSON under /api/ (config/errors.py)

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("accounts/login/", SignInView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/v1/me", MeView.as_view(), name="me"),
    path("api/v1/", include("annotation.urls")),
    path("api/v1/", include("boxes.urls")),
    path("api/v1/", include("hierarchy.urls")),
    path("api/v1/", include("multilabel.urls")),
    path("api/v1/", include("consensus.urls")),
    path("api/v1/", include("benchmark.urls")),
    path("api/v1/", include("gold.urls")),
    path("api/v1/", include("outbox.urls")),
    path("api/v1/", include("candidates.urls")),
    path("api/v1/", include("predictions.urls")),
    path("api/v1/", include("organize.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path("", include("review.urls")),
    path("", include("organize.page_urls")),
    path("", include("crowd.urls")),
    path("", include("frontend.urls")),
]
