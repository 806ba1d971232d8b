from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"

    def ready(self) -> None:
        # Registers the task kinds with the queue: binary votes, box drawing, and the default backend for the
        # box pipeline's quality and coverage questions.
        from . import binary_vote, box_draw, box_questions  # noqa: F401
