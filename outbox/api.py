"""Background work as its organizers see it: what is parked after failing every attempt, and a retry."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import APIException
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from config.roles import IsOrganizer

from . import services
from .models import Message
from .serializers import MessageFilterSerializer, MessageSerializer


class NotParked(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "not_parked"


def organized_messages(user):
    qs = Message.objects.select_related(None)
    if user.is_superuser:
        return qs
    return qs.filter(dataset__organizers=user)


class MessageListView(generics.ListAPIView):
    """Background work of the datasets you organize, newest first; `?state=parked` shows what waits for you."""

    permission_classes = [IsAuthenticated, IsOrganizer]
    serializer_class = MessageSerializer

    def get_queryset(self):
        form = MessageFilterSerializer(data=self.request.query_params)
        form.is_valid(raise_exception=True)
        qs = organized_messages(self.request.user).order_by("-id")
        if "state" in form.validated_data:
            qs = qs.filter(state=form.validated_data["state"])
        return qs

    @extend_schema(
        parameters=[OpenApiParameter("state", str, enum=[c[0] for c in Message.state.field.choices])]
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


class MessageRetryView(APIView):
    """Give parked work another round of attempts (409 when it is not parked)."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(request=None, responses={200: MessageSerializer})
    def post(self, request, pk: int):
        message = get_object_or_404(organized_messages(request.user), pk=pk)
        try:
            message = services.message_retry(message)
        except ValueError as exc:
            raise NotParked(str(exc)) from None
        return Response(MessageSerializer(message).data)
