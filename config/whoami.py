"""`GET /api/v1/me`: who the caller is (username, roles, worker identity), so a client can check its token."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from .roles import ALL_ROLES, has_role


class MeSerializer(serializers.Serializer):
    username = serializers.CharField()
    roles = serializers.ListField(child=serializers.ChoiceField(choices=ALL_ROLES))
    worker = serializers.IntegerField(
        allow_null=True, help_text="The caller's worker id, if they are a worker."
    )


class MeView(APIView):
    """The authenticated caller. Also the benchmark's reference for an authenticated API request
    (bench/queue_throughput.py): token lookup, one read, a small JSON body."""

    @extend_schema(responses=MeSerializer)
    def get(self, request):
        user = request.user
        worker = getattr(user, "worker", None)
        body = {
            "username": user.get_username(),
            "roles": [role for role in ALL_ROLES if has_role(user, role)],
            "worker": worker.pk if worker is not None else None,
        }
        return Response(MeSerializer(body).data)
