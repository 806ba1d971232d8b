from django.apps import AppConfig


class CrowdConfig(AppConfig):
    name = "crowd"

    def ready(self) -> None:
        # Each provider module registers itself with crowd.providers.base; crowd.mturk holds Celery tasks.
        from annotation import hooks
        from gold import events

        from . import mturk as mturk_tasks  # noqa: F401
        from .providers import base, external_link, fake, inhouse, mturk, mturk_qualification  # noqa: F401

        events.qualification_passed_register(mturk_qualification.on_qualification_passed)
        hooks.register_lease_policy(base.study_lease_policy)
