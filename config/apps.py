"""The platform's own wiring as an app, so that its system checks are registered at start-up."""

from django.apps import AppConfig
from django.core import checks


class PlatformConfig(AppConfig):
    name = "config"
    label = "platform"
    verbose_name = "Platform configuration"

    def ready(self) -> None:
        from .clientaddress import proxy_count_check

        checks.register(proxy_count_check, checks.Tags.security)
