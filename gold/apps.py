from django.apps import AppConfig


class GoldConfig(AppConfig):
    name = "gold"

    def ready(self) -> None:
        # Gold sits above the queue and consensus: it plugs into the queue's hooks instead of being imported.
        from annotation import hooks
        from boxes import services as boxes

        from . import services, serving

        hooks.register_lease_policy(serving.lease_policy)
        hooks.register_submit_interceptor(services.gold_submit_intercept)
        hooks.register_withdraw_interceptor(services.gold_withdraw_intercept)
        hooks.register_submit_extras(services.qualification_feedback)
        hooks.register_lease_extras(services.training_progress)
        boxes.verdict_hook_register(services.drawer_verdict_record)

        # A decided question is agreement evidence on its voters (the sequential test, gold.quality).
        from consensus import events as consensus_events

        from . import quality

        consensus_events.subscribe(consensus_events.ANY_KIND, quality.question_decided)

        # `counters_recount` rebuilds the gold tally with the queue's counters.
        from annotation.counters import register_recount

        from .tally import gold_tally_recount

        register_recount(gold_tally_recount)
