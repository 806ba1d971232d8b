"""In-house teams: the organizers' own annotators and reviewers. They hold ordinary accounts (invited per
dataset through the organizer workspace, not here), sign in and take tasks on /worker/ through the same API
as everyone else. There is no marketplace and no payment flow, so a session hands nothing back."""

from __future__ import annotations

from crowd.models import Bundle, Provider

from .base import Completion, CrowdProvider, register


class InhouseProvider(CrowdProvider):
    name = Provider.INHOUSE
    title = "In-house team"

    def completion(self, bundle: Bundle) -> Completion:
        return Completion()


provider = register(InhouseProvider())
