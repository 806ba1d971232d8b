from django.apps import AppConfig


class HierarchyConfig(AppConfig):
    name = "hierarchy"

    def ready(self) -> None:
        # Registers the hierarchy question task kind with the queue and listens to consensus decisions.
        from . import asking, question_kind  # noqa: F401

        asking.subscribe()
