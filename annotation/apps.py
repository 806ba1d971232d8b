from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"

    def ready(self) -> None:
        # The task kinds are registered by the apps that serve them (consensus, boxes, multilabel).
        from hierarchy import services as hierarchy_services

        from . import concept_use

        # A hierarchy loader refuses to rewrite a concept a dataset uses.
        hierarchy_services.register_concept_users(concept_use.concept_users)
