from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"

    def ready(self) -> None:
        # Registers the binary vote task kind with the queue.
        from . import binary_vote  # noqa: F401
