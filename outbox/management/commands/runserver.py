"""`runserver` (what `make run` serves with) that also runs the beat schedule in-process when there is no broker
(outbox/embedded_beat.py). It wraps the next `runserver` of INSTALLED_APPS (whitenoise's, which wraps
staticfiles'), so this app is listed before them."""

from __future__ import annotations

import os

from django.apps import apps
from django.core.management import find_commands, load_command_class

from outbox import embedded_beat


def _wrapped_runserver():
    """The `runserver` command class of the first app after this one that has one, else Django's own."""
    names = [config.name for config in apps.get_app_configs()]
    below = names[names.index("outbox") + 1 :]
    for config in apps.get_app_configs():
        if config.name in below and "runserver" in find_commands(os.path.join(config.path, "management")):
            return type(load_command_class(config.name, "runserver"))
    return type(load_command_class("django.core", "runserver"))


class Command(_wrapped_runserver()):
    help = (
        "Serve the platform for development; with no broker configured (the embedded default) the beat "
        "schedule (lease expiry, outbox relay, overlap scans, the stuck-question sweep) runs in this process "
        "too (CROWDLABEL_EMBEDDED_BEAT=0 turns that off)."
    )
    beat: embedded_beat.EmbeddedBeat | None = None

    def on_bind(self, server_port):
        # Called once the socket is bound, in the serving process only: never in the autoreloader's parent
        # (which only restarts the child), so one schedule runs per server.
        super().on_bind(server_port)
        self.beat = embedded_beat.start()
        if self.beat is not None:
            self.stdout.write(
                f"Scheduled work runs in this process (no broker; pid {os.getpid()}): {self.beat.describe()}\n"
            )
