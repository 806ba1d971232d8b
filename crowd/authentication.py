"""API token authentication that loads the caller's worker identity together with the user."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication


class WorkerTokenAuthentication(TokenAuthentication):
    """DRF's token authentication, plus the user's `worker` in the same query: every worker endpoint reads
    `request.user.worker`, which would otherwise cost a second query on each request."""

    def authenticate_credentials(self, key):
        model = self.get_model()
        try:
            token = model.objects.select_related("user", "user__worker").get(key=key)
        except model.DoesNotExist:
            raise exceptions.AuthenticationFailed(_("Invalid token.")) from None
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        return (token.user, token)
