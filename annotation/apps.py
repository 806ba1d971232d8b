from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"

    def ready(self) -> None:
        # Registers the box drawing task kind with the queue (the yes/no kinds, and the backends that decide the
        # box pipeline's questions, are registered by consensus).
        from hierarchy import events as hierarchy_events
        from hierarchy import services as hierarchy_services

        from . import box_draw, boxes, concept_use  # noqa: F401

        # Present classes found by full multi-label annotation flow into the box pipeline.
        hierarchy_events.subscribe(boxes.on_leaves_present)
        # A hierarchy loader refuses to rewrite a concept a dataset uses.
        hierarchy_services.register_concept_users(concept_use.concept_users)
