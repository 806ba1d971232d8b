"""API token authentication that loads the caller's worker identity together with the user."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from annotation.queue import statements

from .models import Worker


class WorkerTokenAuthentication(TokenAuthentication):
    """DRF's token authentication, plus the user's `worker` in the same query: every worker endpoint reads
    `request.user.worker`, which would otherwise cost a second query on each request. The statement lives with
    the queue's other hot SQL (annotation/queue/statements.py)."""

    def authenticate_credentials(self, key):
        found = statements.token_with_worker(statements.token_connection(), key)
        if found is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        token, user, worker = found
        if worker is not None:
            worker.user = user
            user.worker = worker  # the reverse one-to-one cache: no query for request.user.worker
        else:
            Worker.user.field.remote_field.set_cached_value(user, None)  # no worker: known, not queried
        token.user = user
        if not user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        return (user, token)
