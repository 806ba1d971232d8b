"""Classes: upload a question hierarchy (the validation of `load_hierarchy`, plus a refusal to rewrite a
concept a dataset uses), and pick the dataset's concepts from a hierarchy's leaves."""

from __future__ import annotations

from collections import defaultdict

from django.db import transaction
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.audit import audit_record
from config.errors import Conflict
from config.roles import IsOrganizer
from hierarchy.algorithm import DagError
from hierarchy.fixture import FixtureError, parse_fixture
from hierarchy.models import Concept, Hierarchy, QuestionNode
from hierarchy.services import ConceptConflict, HierarchyConflict, hierarchy_load

from .scoping import organizer_dataset, organizer_datasets


class UploadResultSerializer(serializers.Serializer):
    hierarchy = serializers.IntegerField()
    name = serializers.CharField()
    version = serializers.CharField()
    created = serializers.BooleanField(help_text="False: the same name, version and DAG was stored already.")
    nodes = serializers.IntegerField()
    leaves = serializers.IntegerField()


class HierarchyUploadView(APIView):
    """Upload a hierarchy (the crowdlabel-hierarchy/1 JSON of `load_hierarchy`, see docs/hierarchy.md) as the
    request body. Refused with 400 and every bad entry in `errors`; with 409 when the name and version are
    stored with another DAG, or when the file would change the name, gloss or parents of a concept a dataset
    uses (each conflict names the stored and the uploaded value, the caller's own datasets using it, and
    "other datasets" for the rest, never their names)."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(
        request=OpenApiTypes.OBJECT, responses={201: UploadResultSerializer, 200: UploadResultSerializer}
    )
    def post(self, request):
        try:
            fixture = parse_fixture(request.data, source="uploaded hierarchy")
        except FixtureError as exc:
            raise ValidationError({"errors": exc.errors}) from None
        try:
            result = hierarchy_load(fixture)  # refuses to rewrite a concept in use (hierarchy.services)
        except DagError as exc:
            raise ValidationError({"errors": exc.problems}) from None
        except ConceptConflict as exc:
            # The uploader's own datasets are named; other organizers' only as "other datasets".
            visible = (
                None
                if request.user.is_superuser
                else set(organizer_datasets(request.user).values_list("pk", flat=True))
            )
            raise Conflict({"errors": exc.describe(visible)}) from None
        except HierarchyConflict as exc:
            raise Conflict({"errors": [str(exc)]}) from None
        h = result.hierarchy
        body = {
            "hierarchy": h.pk,
            "name": h.name,
            "version": h.version,
            "created": result.created,
            "nodes": result.nodes,
            "leaves": result.leaves,
        }
        code = status.HTTP_201_CREATED if result.created else status.HTTP_200_OK
        return Response(UploadResultSerializer(body).data, status=code)


class ClassChoiceSerializer(serializers.ModelSerializer):
    class Meta:
        model = Concept
        fields = ["wnid", "name", "gloss"]


class DatasetConceptsSerializer(serializers.Serializer):
    selected = ClassChoiceSerializer(many=True)
    choices = ClassChoiceSerializer(many=True, help_text="The leaves of `hierarchy`, in its class order.")


class ConceptSelectionSerializer(serializers.Serializer):
    concepts = serializers.ListField(child=serializers.CharField(max_length=32), max_length=5000)


class DatasetConceptsView(APIView):
    """The dataset's classes: read them (with a hierarchy's leaves to choose from), or set them."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(
        parameters=[
            OpenApiParameter("hierarchy", int, description="List this hierarchy's leaves as choices.")
        ],
        responses=DatasetConceptsSerializer,
    )
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        choices = []
        hierarchy = request.query_params.get("hierarchy")
        if hierarchy:
            if not hierarchy.isdigit() or not Hierarchy.objects.filter(pk=hierarchy).exists():
                raise ValidationError({"hierarchy": f"no hierarchy with id {hierarchy!r}"})
            leaves = QuestionNode.objects.filter(hierarchy_id=hierarchy, leaf=True).order_by("position")
            choices = [n.concept for n in leaves.select_related("concept")]
        body = {"selected": dataset.concepts.order_by("wnid"), "choices": choices}
        return Response(DatasetConceptsSerializer(body).data)

    @extend_schema(request=ConceptSelectionSerializer, responses=DatasetConceptsSerializer)
    def put(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        form = ConceptSelectionSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        wnids = sorted(set(form.validated_data["concepts"]))
        concepts = list(Concept.objects.filter(wnid__in=wnids))
        unknown = sorted(set(wnids) - {c.wnid for c in concepts})
        if unknown:
            raise ValidationError({"concepts": f"unknown concepts: {', '.join(unknown)}"})
        with transaction.atomic():
            dataset.concepts.set(concepts)
            audit_record(
                dataset=dataset,
                actor=request.user,
                action="concepts.set",
                parameters={"concepts": wnids},
                result={"count": len(wnids)},
            )
        body = {"selected": sorted(concepts, key=lambda c: c.wnid), "choices": []}
        return Response(DatasetConceptsSerializer(body).data)


class TreeNodeSerializer(serializers.Serializer):
    node = serializers.CharField(help_text="The fixture id: a wnid, or q:slug for a question node.")
    name = serializers.CharField()
    question = serializers.CharField()
    gloss = serializers.CharField(allow_blank=True)
    leaf = serializers.BooleanField()
    wnid = serializers.CharField(allow_null=True, help_text="The node's concept.")
    parents = serializers.ListField(child=serializers.CharField(), help_text="Node ids; none for a root.")


class HierarchyTreeSerializer(serializers.Serializer):
    hierarchy = serializers.IntegerField()
    name = serializers.CharField()
    version = serializers.CharField()
    nodes = TreeNodeSerializer(
        many=True, help_text="In the hierarchy's order; a node may have several parents."
    )


class HierarchyTreeView(APIView):
    """A hierarchy's nodes with their parents, for the tree browser (three queries whatever its size)."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=HierarchyTreeSerializer)
    def get(self, request, hierarchy_id: int):
        hierarchy = Hierarchy.objects.filter(pk=hierarchy_id).first()
        if hierarchy is None:
            raise NotFound(f"no hierarchy with id {hierarchy_id}")
        edges = QuestionNode.parents.through.objects.filter(from_questionnode__hierarchy=hierarchy)
        parents: dict[int, list[str]] = defaultdict(list)
        for child, parent in edges.values_list("from_questionnode_id", "to_questionnode__node_id").order_by(
            "to_questionnode__position"
        ):
            parents[child].append(parent)
        nodes = [
            {
                "node": n.node_id,
                "name": n.name,
                "question": n.question,
                "gloss": n.gloss,
                "leaf": n.leaf,
                "wnid": n.concept.wnid if n.concept_id else None,
                "parents": parents.get(n.pk, []),
            }
            for n in QuestionNode.objects.filter(hierarchy=hierarchy)
            .select_related("concept")
            .order_by("position")
        ]
        body = {
            "hierarchy": hierarchy.pk,
            "name": hierarchy.name,
            "version": hierarchy.version,
            "nodes": nodes,
        }
        return Response(HierarchyTreeSerializer(body).data)
