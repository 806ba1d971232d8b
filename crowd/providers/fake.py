"""A provider backend with no marketplace behind it, for workflow tests and the simulator: its sessions are
real bundles on the real queue, and its completion hands back a code naming the bundle."""

from __future__ import annotations

from crowd.models import Bundle, Provider

from .base import Completion, CrowdProvider, register


class FakeProvider(CrowdProvider):
    name = Provider.FAKE
    title = "Fake marketplace"

    def completion(self, bundle: Bundle) -> Completion:
        return Completion(code=f"FAKE-{bundle.pk}")


provider = register(FakeProvider())
