from django.apps import AppConfig
from django.conf import settings


class ConsensusConfig(AppConfig):
    name = "consensus"

    def ready(self) -> None:
        # Registers the `question` task kind with the queue.
        from . import question_kind  # noqa: F401

        # The box pipeline's quality questions go through consensus when the deployment says so.
        if settings.CROWDLABEL.get("BOX_QUALITY_BACKEND") == "consensus":
            from .box_questions import connect

            connect()
