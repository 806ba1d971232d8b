from django.apps import AppConfig


class BenchmarkConfig(AppConfig):
    name = "benchmark"

    def ready(self) -> None:
        from . import challenges, services  # noqa: F401  register what happens when their work is parked
