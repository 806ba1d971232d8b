"""Organizer API of external study links: create and list links, export completions with pay decisions, and
redeem the completion codes a marketplace reports (each once)."""

from __future__ import annotations

from dataclasses import asdict

from django.db import transaction
from django.http import HttpResponse
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from annotation import kinds
from annotation.models import Dataset
from annotation.scoping import organizer_datasets_named
from config.bounds import id_integer
from config.errors import Conflict
from config.queryparams import query_id
from config.roles import IsOrganizer

from .models import StudyLink
from .providers import external_link


class ScopeField(serializers.ListField):
    """A study link's datasets: ids in, ids out (its own dataset when the link names none)."""

    def __init__(self, **kwargs):
        super().__init__(child=id_integer(), max_length=1000, **kwargs)

    def get_attribute(self, instance):
        return instance

    def to_representation(self, link):
        named = sorted(d.pk for d in link.datasets.all())
        return named or [link.dataset_id]


def link_scope(user, dataset_id: int, ids) -> list[Dataset]:
    """The datasets a link's participants may work on: each one `user` organizes (403 otherwise), the link's
    own dataset among them."""
    if dataset_id not in ids:
        raise ValidationError({"datasets": "a link's datasets include its own dataset"})
    return organizer_datasets_named(user, ids)


SCOPE_HELP = (
    "The datasets (ids, each one you organize, the link's own among them) whose tasks participants take. "
    "Omitted: the link's own dataset only."
)


STUDY_LINK_FIELDS = [
    "id",
    "key",
    "dataset",
    "kind",
    "participant_param",
    "completion_redirect",
    "active",
    "url",
    "datasets",
]


class StudyLinkSerializer(serializers.ModelSerializer):
    dataset = serializers.PrimaryKeyRelatedField(queryset=Dataset.objects.all(), pk_field=id_integer())
    url = serializers.SerializerMethodField(
        help_text="The link to give the marketplace (add the participant id)."
    )
    datasets = ScopeField(required=False, help_text=SCOPE_HELP)

    class Meta:
        model = StudyLink
        fields = STUDY_LINK_FIELDS
        read_only_fields = ["id", "key", "url"]

    def validate(self, attrs):
        if "datasets" in attrs:
            attrs["datasets"] = link_scope(
                self.context["request"].user, attrs["dataset"].pk, attrs["datasets"]
            )
        return attrs

    def create(self, validated_data):
        scope = validated_data.pop("datasets", [])
        with transaction.atomic():
            link = super().create(validated_data)
            link.datasets.set(scope)
        return link

    def get_url(self, link) -> str:
        return reverse("study", args=[link.key])

    def validate_dataset(self, dataset):
        user = self.context["request"].user
        if not user.is_superuser and not dataset.organizers.filter(pk=user.pk).exists():
            raise ValidationError("you do not organize this dataset")
        return dataset

    def validate_kind(self, kind):
        if kind not in kinds.names():
            raise ValidationError(f"unknown task kind {kind!r}; known: {', '.join(kinds.names())}")
        return kind

    def validate_participant_param(self, value):
        if not value.replace("_", "").replace("-", "").isalnum():
            raise ValidationError("use letters, digits, - and _ only")
        return value


class StudyLinkChangeSerializer(serializers.ModelSerializer):
    """What may change on a link once given out: open or close it, and where participants go at the end.
    Its dataset, kind and participant parameter are the link's identity on the marketplace."""

    url = serializers.SerializerMethodField()
    datasets = ScopeField(required=False, help_text=SCOPE_HELP)

    class Meta:
        model = StudyLink
        fields = STUDY_LINK_FIELDS
        read_only_fields = ["id", "key", "dataset", "kind", "participant_param", "url"]

    def get_url(self, link) -> str:
        return reverse("study", args=[link.key])

    def validate(self, attrs):
        fixed = sorted(set(self.initial_data) & {"dataset", "kind", "participant_param", "key", "id"})
        if fixed:
            raise ValidationError(
                {name: "cannot change on a link given out; create another" for name in fixed}
            )
        if "datasets" in attrs:
            attrs["datasets"] = link_scope(
                self.context["request"].user, self.instance.dataset_id, attrs["datasets"]
            )
        return attrs

    def update(self, instance, validated_data):
        scope = validated_data.pop("datasets", None)
        with transaction.atomic():
            link = super().update(instance, validated_data)
            if scope is not None:
                link.datasets.set(scope)
        return link


class CompletionRowSerializer(serializers.Serializer):
    participant = serializers.CharField()
    bundle = serializers.IntegerField()
    code = serializers.CharField()
    answered = serializers.IntegerField()
    size = serializers.IntegerField()
    short = serializers.BooleanField()
    completed_at = serializers.CharField()
    redeemed = serializers.BooleanField()
    recommendation = serializers.ChoiceField(choices=["approve", "reject", "bonus", "pending"])


class RedeemSerializer(serializers.Serializer):
    participant = serializers.CharField(max_length=64)
    code = serializers.CharField(max_length=100)


class RedeemManySerializer(serializers.Serializer):
    codes = RedeemSerializer(
        many=True,
        allow_empty=False,
        max_length=1000,
        help_text="The codes participants reported, each with its participant id (at most 1000).",
    )


class RedeemOutcomeSerializer(serializers.Serializer):
    participant = serializers.CharField()
    code = serializers.CharField()
    status = serializers.ChoiceField(
        choices=["redeemed", "already_redeemed", "refused"],
        help_text="redeemed: accepted now; already_redeemed: accepted before (nothing changed); refused: not "
        "issued to this participant in this study, or the bundle is not complete (`detail`).",
    )
    bundle = serializers.IntegerField(allow_null=True)
    detail = serializers.CharField(allow_blank=True)


class RedeemManyResultSerializer(serializers.Serializer):
    results = RedeemOutcomeSerializer(many=True)
    redeemed = serializers.IntegerField()
    already_redeemed = serializers.IntegerField()
    refused = serializers.IntegerField()


@extend_schema_view(
    list=extend_schema(
        parameters=[OpenApiParameter("dataset", int, description="Only this dataset's links.")]
    ),
    create=extend_schema(
        responses={
            201: StudyLinkSerializer,
            403: OpenApiResponse(
                description="Signed in, but the caller's role may not use this operation, or `datasets` names "
                "a dataset the caller does not organize."
            ),
        }
    ),
    partial_update=extend_schema(
        responses={
            200: StudyLinkChangeSerializer,
            403: OpenApiResponse(
                description="Signed in, but the caller's role may not use this operation, or `datasets` names "
                "a dataset the caller does not organize."
            ),
        }
    ),
)
class StudyLinkViewSet(
    mixins.CreateModelMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.UpdateModelMixin,
    viewsets.GenericViewSet,
):
    """Study links (external crowds) of the calling organizer's datasets; PATCH opens or closes one (`active`)
    or changes its `completion_redirect`."""

    permission_classes = [IsAuthenticated, IsOrganizer]
    http_method_names = ["get", "post", "patch", "head", "options"]

    def get_serializer_class(self):
        return StudyLinkChangeSerializer if self.action == "partial_update" else StudyLinkSerializer

    def get_queryset(self):
        qs = StudyLink.objects.order_by("id").prefetch_related("datasets")
        if getattr(self, "swagger_fake_view", False):
            return qs.none()
        if not self.request.user.is_superuser:
            qs = qs.filter(dataset__organizers=self.request.user)
        dataset = query_id(self.request.query_params, "dataset")
        if dataset is not None:
            qs = qs.filter(dataset_id=dataset)
        return qs

    @extend_schema(
        parameters=[OpenApiParameter("export", str, enum=["json", "csv"], description="Default json.")],
        responses={200: CompletionRowSerializer(many=True)},
    )
    @action(detail=True, methods=["get"])
    def completions(self, request, pk=None):
        """Completed sessions with their codes and the gold app's pay decision per session, for the
        marketplace's payment step (`?export=csv` for a spreadsheet)."""
        link = self.get_object()
        export = request.query_params.get("export", "json")
        if export not in ("json", "csv"):
            raise ValidationError({"export": "must be json or csv"})
        rows = external_link.completions_list(link)
        if export == "csv":
            response = HttpResponse(external_link.completions_csv(rows), content_type="text/csv")
            response["Content-Disposition"] = f'attachment; filename="study-{link.key}-completions.csv"'
            return response
        return Response([asdict(row) for row in rows])

    @extend_schema(
        request=RedeemSerializer,
        responses={
            200: CompletionRowSerializer,
            400: OpenApiResponse(description="The code was not issued to this participant in this study."),
            409: OpenApiResponse(description="The code was redeemed already."),
        },
    )
    @action(detail=True, methods=["post"])
    def redeem(self, request, pk=None):
        """Check a completion code a participant reported and accept it once."""
        link = self.get_object()
        form = RedeemSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            bundle = external_link.completion_redeem(study=link, **form.validated_data)
        except external_link.CodeReplayed as exc:
            raise Conflict(str(exc), code="replayed") from None
        except external_link.CodeRefused as exc:
            raise ValidationError({"code": str(exc)}) from None
        row = next(r for r in external_link.completions_list(link) if r.bundle == bundle.pk)
        return Response(asdict(row), status=status.HTTP_200_OK)

    @extend_schema(request=RedeemManySerializer, responses={200: RedeemManyResultSerializer})
    @action(detail=True, methods=["post"], url_path="redeem-many")
    def redeem_many(self, request, pk=None):
        """Check and accept many completion codes at once, each on its own (one outcome per code, in the order
        sent): a refused or replayed code never stops the others, and sending the batch again changes nothing."""
        link = self.get_object()
        form = RedeemManySerializer(data=request.data)
        form.is_valid(raise_exception=True)
        pairs = [(c["participant"], c["code"]) for c in form.validated_data["codes"]]
        outcomes = external_link.completions_redeem_many(study=link, codes=pairs)
        counts = {
            key: sum(o.status == key for o in outcomes) for key in ("redeemed", "already_redeemed", "refused")
        }
        return Response(RedeemManyResultSerializer({"results": [asdict(o) for o in outcomes], **counts}).data)
