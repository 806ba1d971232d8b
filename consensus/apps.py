from django.apps import AppConfig
from django.conf import settings


class ConsensusConfig(AppConfig):
    name = "consensus"

    def ready(self) -> None:
        # Registers the `question` and plain `binary_vote` task kinds with the queue (every one a consensus
        # question), the engine as the asker of annotation's plain votes, and the fixed box-question backend
        # with its two task kinds as the box pipeline's default.
        from . import binary_vote, fixed_box_questions, question_kind  # noqa: F401

        binary_vote.connect()
        fixed_box_questions.register()

        # Decided image-verification questions become final labels (annotation.final_labels).
        from .final_labels import connect as final_labels_connect

        final_labels_connect()

        # The box pipeline's quality and coverage questions go through calibrated consensus unless the
        # deployment chose the fixed rule.
        if settings.CROWDLABEL.get("BOX_QUESTION_BACKEND", "consensus") == "consensus":
            from .box_questions import connect

            connect()

        # `counters_recount` rebuilds the question tally with the queue's counters.
        from annotation.counters import register_recount

        from .tally import tally_recount

        register_recount(tally_recount)
