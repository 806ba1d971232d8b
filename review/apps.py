from django.apps import AppConfig


class ReviewConfig(AppConfig):
    name = "review"

    def ready(self) -> None:
        # Box jobs that the crowd cannot finish (caps, undecidable questions) come here as ambiguous items.
        from .box_jobs import connect

        connect()
