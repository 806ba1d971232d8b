from django.apps import AppConfig


class MultilabelConfig(AppConfig):
    name = "multilabel"

    def ready(self) -> None:
        # Registers the hierarchy question task kind with the queue and listens to consensus decisions.
        from . import asking, question_kind  # noqa: F401

        asking.subscribe()
