"""The API a provider session's page speaks: next item of the bundle, submit, and the items' images.

The page holds no cookie (inside MTurk's frame or a marketplace's redirect a third-party cookie may never
arrive): it sends its signed session token as `Authorization: Bundle <token>`, and image URLs carry it in
the query string because an <img> cannot send headers."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import authentication, exceptions, serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import kinds, queue
from annotation.api import idempotency_key, image_file_response
from annotation.imagerefs import image_ref_id
from annotation.instructions import task_instructions
from annotation.models import Assignment, Image
from annotation.serializers import AssignmentSerializer, SubmitSerializer
from config.dbconnection import idempotent_by_key
from config.errors import Conflict

from .models import Bundle, BundleState
from .providers import base


class BundleAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bundle <signed session token>`: the caller is the bundle's worker, `request.auth` the
    bundle."""

    keyword = "Bundle"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("send `Authorization: Bundle <session token>`")
        try:
            bundle = base.session_bundle(header[1].decode())
        except (base.SessionInvalid, UnicodeError) as exc:
            raise exceptions.AuthenticationFailed(str(exc)) from None
        return bundle.worker.user, bundle

    def authenticate_header(self, request) -> str:
        return self.keyword


class BundleQueryAuthentication(BundleAuthentication):
    """The session token in the `session` query parameter, for images (an <img> cannot send a header)."""

    def authenticate(self, request):
        token = request.query_params.get("session")
        if not token:
            return None
        try:
            bundle = base.session_bundle(token)
        except base.SessionInvalid as exc:
            raise exceptions.AuthenticationFailed(str(exc)) from None
        return bundle.worker.user, bundle


class BundleQueryAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = BundleQueryAuthentication
    name = "bundleSessionQuery"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "query", "name": "session"}


class BundleAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = BundleAuthentication
    name = "bundleSession"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "header", "name": "Authorization", "description": "Bundle <token>"}


class HasBundle(BasePermission):
    message = "This endpoint needs a provider session token."

    def has_permission(self, request, view) -> bool:
        return isinstance(request.auth, Bundle)


class BundleProgressSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    size = serializers.IntegerField()
    answered = serializers.IntegerField()
    state = serializers.ChoiceField(choices=BundleState.choices)
    short = serializers.BooleanField()


class CompletionSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="Completion code to paste at the marketplace (may be empty).")
    redirect = serializers.CharField(help_text="Where to send the worker now (may be empty).")
    submit_to = serializers.CharField(help_text="Where the page posts `fields` (MTurk; may be empty).")
    fields = serializers.DictField(child=serializers.CharField())


class BundleStepSerializer(serializers.Serializer):
    bundle = BundleProgressSerializer()
    assignment = AssignmentSerializer(allow_null=True)
    completion = CompletionSerializer(allow_null=True)


def image_url(ref: str, token: str) -> str:
    return f"{reverse('bundle-image', args=[ref])}?session={token}"


def step_body(step: base.BundleStep, token: str) -> dict:
    b = step.bundle
    assignment = None
    if step.assignment is not None:
        assignment = AssignmentSerializer(step.assignment).data
        # The organizer's instructions for the task's stage, as the worker page shows them.
        assignment["task"]["instructions"] = task_instructions(step.assignment.task, step.instructions)
        if assignment["task"]["image"] is not None:
            assignment["task"]["image"]["url"] = image_url(assignment["task"]["image"]["ref"], token)
    return {
        "bundle": {
            "id": b.pk,
            "kind": b.kind,
            "size": b.size,
            "answered": b.answered,
            "state": b.state,
            "short": b.short,
        },
        "assignment": assignment,
        "completion": step.completion.as_dict() if step.completion is not None else None,
    }


class BundleView(APIView):
    authentication_classes = [BundleAuthentication]
    permission_classes = [HasBundle]

    def token(self, request) -> str:
        return authentication.get_authorization_header(request).split()[1].decode()


class BundleNextView(BundleView):
    @extend_schema(responses=BundleStepSerializer, operation_id="bundle_next")
    def get(self, request):
        """The item of the session's bundle to answer now; `assignment` is null when the bundle is complete
        (then `completion` says what to hand back) or when no task is available right now."""
        return Response(step_body(base.bundle_next(request.auth), self.token(request)))


class BundleSubmitView(BundleView):
    @extend_schema(
        request=SubmitSerializer,
        parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER, required=True)],
        responses={200: BundleStepSerializer, 201: BundleStepSerializer},
        operation_id="bundle_submit",
    )
    @idempotent_by_key
    def post(self, request, pk: int):
        """Answer one item of the bundle, once (a retry with the same Idempotency-Key changes nothing)."""
        key = idempotency_key(request)
        form = SubmitSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            step = base.bundle_submit(
                request.auth, assignment_id=int(pk), answer=form.validated_data["answer"], idempotency_key=key
            )
        except Assignment.DoesNotExist:
            raise NotFound("No such assignment in this session.") from None
        except kinds.AnswerInvalid as exc:
            raise ValidationError({"answer": str(exc)}) from None
        except queue.QueueError as exc:
            raise Conflict(str(exc), code=exc.code) from None
        body = step_body(step, self.token(request))
        body["assignment"].update(step.extras)
        return Response(body, status=status.HTTP_200_OK if step.replayed else status.HTTP_201_CREATED)


class BundleImageView(APIView):
    authentication_classes = [BundleQueryAuthentication]
    permission_classes = [HasBundle]

    @extend_schema(
        parameters=[OpenApiParameter("session", str, required=True, description="The session token.")],
        responses={(200, "image/*"): OpenApiTypes.BINARY},
        operation_id="bundle_image",
    )
    def get(self, request, ref: str):
        """The image of an item leased in this session (nothing else), by the reference its item gave."""
        image_id = image_ref_id(ref)
        image = (
            Image.objects.filter(pk=image_id, tasks__assignments__bundle_item__bundle=request.auth).first()
            if image_id is not None
            else None
        )
        if image is None:
            raise NotFound("No such image in this session.")
        return image_file_response(image)
