from django.apps import AppConfig


class ConsensusConfig(AppConfig):
    name = "consensus"

    def ready(self) -> None:
        # Registers the `question` and plain `binary_vote` task kinds with the queue (every one a consensus
        # question).
        from . import binary_vote, question_kind  # noqa: F401

        # Decided image-verification questions become final labels (annotation.final_labels).
        from .final_labels import connect as final_labels_connect

        final_labels_connect()

        # `counters_recount` rebuilds the question tally with the queue's counters.
        from annotation.counters import register_recount

        from .tally import tally_recount

        register_recount(tally_recount)

        # Workers out of good standing on an image-question kind are not offered its questions.
        from annotation import hooks

        from .standing_lease import lease_policy

        hooks.register_lease_policy(lease_policy)
