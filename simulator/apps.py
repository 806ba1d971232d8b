"""The crowd simulator: scenes with known objects, simulated workers and scenarios that drive the platform from
outside through its HTTP API (`manage.py simulate`), like `bench/`. It owns no models and nothing imports it."""

from django.apps import AppConfig


class SimulatorConfig(AppConfig):
    name = "simulator"
    verbose_name = "Crowd simulator"
