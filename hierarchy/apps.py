from django.apps import AppConfig


class HierarchyConfig(AppConfig):
    name = "hierarchy"

    def ready(self) -> None:
        # Registers the hierarchy question task kind with the queue.
        from . import question_kind  # noqa: F401
