from django.apps import AppConfig
from django.conf import settings


class ConsensusConfig(AppConfig):
    name = "consensus"

    def ready(self) -> None:
        # Registers the `question` task kind with the queue.
        from . import question_kind  # noqa: F401

        # Decided image-verification questions become final labels (annotation.final_labels).
        from .final_labels import connect as final_labels_connect

        final_labels_connect()

        # The box pipeline's quality and coverage questions go through consensus unless the deployment chose
        # annotation's fixed rule.
        if settings.CROWDLABEL.get("BOX_QUESTION_BACKEND", "consensus") == "consensus":
            from .box_questions import connect

            connect()
