from django.apps import AppConfig


class BoxesConfig(AppConfig):
    name = "boxes"

    def ready(self) -> None:
        # Registers the box pipeline's task kinds with the queue (`box_draw`, and the `box_quality` and
        # `box_coverage` tasks of questions under the fixed rule) and takes the decisions of its questions back
        # to their jobs (`consensus.events`).
        from . import box_draw, fixed_questions, questions  # noqa: F401

        fixed_questions.register()
        questions.connect()
