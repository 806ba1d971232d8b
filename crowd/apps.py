from django.apps import AppConfig


class CrowdConfig(AppConfig):
    name = "crowd"

    def ready(self) -> None:
        # Each provider module registers itself with crowd.providers.base; crowd.mturk holds Celery tasks.
        from . import mturk as mturk_tasks  # noqa: F401
        from .providers import external_link, fake, inhouse, mturk  # noqa: F401
