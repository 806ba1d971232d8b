from rest_framework.routers import SimpleRouter

from . import api

router = SimpleRouter()
router.trailing_slash = "/?"  # both /api/v1/x and /api/v1/x/ work: clients differ
router.register("concepts", api.ConceptViewSet, basename="concept")
router.register("hierarchies", api.HierarchyViewSet, basename="hierarchy")
urlpatterns = router.urls
