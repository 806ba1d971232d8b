from django.apps import AppConfig


class ConsensusConfig(AppConfig):
    name = "consensus"

    def ready(self) -> None:
        # Registers the `question` task kind with the queue.
        from . import question_kind  # noqa: F401
