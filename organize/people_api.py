"""People of a dataset: one-time invitations for worker and reviewer accounts (made by the dataset's
organizers, accepted by anyone holding the link). The logic is `crowd.invitations`; these views only parse and
scope."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Prefetch
from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import Dataset
from annotation.scoping import organizer_datasets_named
from config.bounds import id_integer
from config.roles import IsOrganizer
from crowd import invitations
from crowd.models import Invitation, InvitationRole

from .scoping import organizer_dataset


class InvitationCreateSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=InvitationRole.choices)
    expires_in_hours = serializers.IntegerField(
        min_value=1, max_value=invitations.MAX_TTL.days * 24, default=invitations.DEFAULT_TTL.days * 24
    )
    datasets = serializers.ListField(
        child=id_integer(),
        required=False,
        max_length=1000,
        help_text="The datasets (ids, each one you organize) the worker may take tasks of, or the reviewer may "
        "review. Omitted or empty: an unscoped worker, who may take tasks of every dataset on the server, or an "
        "unscoped reviewer, who reviews every dataset's items.",
    )


class ScopeDatasetSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class InvitationSerializer(serializers.ModelSerializer):
    status = serializers.SerializerMethodField()
    accepted_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    datasets = ScopeDatasetSerializer(
        many=True,
        read_only=True,
        help_text="The datasets its worker may take tasks of (its reviewer may review); empty: every dataset "
        "(unscoped).",
    )

    class Meta:
        model = Invitation
        fields = [
            "id",
            "dataset",
            "role",
            "status",
            "created_by",
            "created_at",
            "expires_at",
            "accepted_by",
            "datasets",
        ]

    def get_status(self, obj) -> str:
        return invitations.invitation_status(obj)


class IssuedInvitationSerializer(InvitationSerializer):
    token = serializers.CharField(help_text="Shown only in this response; only its hash is stored.")
    accept_url = serializers.CharField(help_text="The page where the invitee creates their account.")

    class Meta(InvitationSerializer.Meta):
        fields = [*InvitationSerializer.Meta.fields, "token", "accept_url"]


class AcceptSerializer(serializers.Serializer):
    token = serializers.CharField(max_length=100)
    username = serializers.RegexField(
        r"^[\w.@+-]+\Z", max_length=150, error_messages={"invalid": "letters, digits and @.+-_ only"}
    )
    password = serializers.CharField(max_length=128, write_only=True, style={"input_type": "password"})

    def validate_password(self, value):
        try:
            validate_password(value)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(list(exc.messages)) from None
        return value


class AcceptedSerializer(serializers.Serializer):
    username = serializers.CharField()
    role = serializers.CharField()
    dataset = serializers.IntegerField()
    datasets = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="The datasets the new worker may take tasks of; empty: every dataset (unscoped).",
    )
    api_token = serializers.CharField(help_text="The new account's API token, shown only in this response.")


def accept_path(token: str) -> str:
    return reverse("invitation-accept-page", kwargs={"token": token})


class DatasetInvitationsView(APIView):
    """Invitations to a dataset: list them (tokens are never listed), or make one."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=InvitationSerializer(many=True))
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        rows = (
            Invitation.objects.filter(dataset=dataset)
            .select_related("accepted_by", "created_by")
            .prefetch_related(
                Prefetch("datasets", queryset=Dataset.objects.order_by("pk").only("pk", "name"))
            )[:200]
        )
        return Response(InvitationSerializer(rows, many=True).data)

    @extend_schema(
        request=InvitationCreateSerializer,
        responses={
            201: IssuedInvitationSerializer,
            403: OpenApiResponse(
                description="Signed in, but the caller's role may not use this operation, or `datasets` names "
                "a dataset the caller does not organize."
            ),
        },
    )
    def post(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        form = InvitationCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        scope = organizer_datasets_named(request.user, form.validated_data.get("datasets", []))
        issued = invitations.invitation_create(
            dataset=dataset,
            role=form.validated_data["role"],
            created_by=request.user,
            ttl=timedelta(hours=form.validated_data["expires_in_hours"]),
            datasets=scope,
        )
        invitation = issued.invitation
        invitation.token = issued.token
        invitation.accept_url = request.build_absolute_uri(accept_path(issued.token))
        return Response(IssuedInvitationSerializer(invitation).data, status=status.HTTP_201_CREATED)


class InvitationAcceptView(APIView):
    """Accept an invitation: create the account (username and password chosen here) with the invitation's role.
    Needs no sign-in: the token is the credential. Each token works once, until it expires."""

    permission_classes = [AllowAny]
    authentication_classes = []

    @extend_schema(request=AcceptSerializer, responses={201: AcceptedSerializer})
    def post(self, request):
        form = AcceptSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        try:
            accepted = invitations.invitation_accept(
                token=data["token"], username=data["username"], password=data["password"]
            )
        except invitations.InvitationInvalid as exc:
            raise NotFound(str(exc), code=exc.code) from None
        except invitations.UsernameTaken as exc:
            raise ValidationError({"username": str(exc)}) from None
        body = {
            "username": accepted.user.username,
            "role": accepted.invitation.role,
            "dataset": accepted.invitation.dataset_id,
            "datasets": sorted(accepted.invitation.datasets.values_list("pk", flat=True)),
            "api_token": accepted.api_token,
        }
        return Response(AcceptedSerializer(body).data, status=status.HTTP_201_CREATED)
