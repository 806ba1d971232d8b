from django.apps import AppConfig


class BenchmarkConfig(AppConfig):
    name = "benchmark"

    def ready(self) -> None:
        from . import services  # noqa: F401  registers what happens when an export job is parked
