from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"

    def ready(self) -> None:
        # Registers the task kinds with the queue: binary votes, box drawing, and the default backend for the
        # box pipeline's quality and coverage questions.
        from hierarchy import events as hierarchy_events

        from . import binary_vote, box_draw, box_questions, boxes  # noqa: F401

        # Present classes found by full multi-label annotation flow into the box pipeline.
        hierarchy_events.subscribe(boxes.on_leaves_present)
