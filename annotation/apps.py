from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"

    def ready(self) -> None:
        # The task kinds are registered by the apps that serve them (consensus, boxes, multilabel).
        from django.db.models.signals import pre_save

        from hierarchy import services as hierarchy_services

        from . import concept_use
        from .models import Assignment
        from .queue.writes import assignment_dataset_named

        # Every assignment names its task's dataset, however it is saved (the queue's statements write it).
        pre_save.connect(assignment_dataset_named, sender=Assignment, dispatch_uid="assignment_dataset_named")

        # A hierarchy loader refuses to rewrite a concept a dataset uses.
        hierarchy_services.register_concept_users(concept_use.concept_users)
