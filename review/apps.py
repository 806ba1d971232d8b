from django.apps import AppConfig


class ReviewConfig(AppConfig):
    name = "review"

    def ready(self) -> None:
        # What the crowd cannot settle comes here: questions at their vote cap (any kind) and box jobs in
        # review; the reviewer's decision goes back to the pipeline that sent them.
        from . import box_jobs, questions

        questions.connect()
        box_jobs.connect()
