from django.apps import AppConfig


class MultilabelConfig(AppConfig):
    name = "multilabel"

    def ready(self) -> None:
        # Registers the hierarchy question task kind with the queue and listens to consensus decisions.
        from consensus import wording

        from . import asking, question_kind, selectors  # noqa: F401

        asking.subscribe()
        # A dataset's questions are worded by its own hierarchies (consensus/wording.py).
        wording.register_wording_source(selectors.dataset_wording)
