"""Thin DRF views: concepts (read-only) and loaded hierarchies."""

from django.db.models import Count, Prefetch, Q
from rest_framework import serializers, viewsets
from rest_framework.permissions import IsAuthenticated

from config.roles import IsOrganizer

from .models import Concept, Hierarchy, QuestionNode
from .serializers import HierarchySerializer


class ConceptSerializer(serializers.ModelSerializer):
    parents = serializers.SlugRelatedField(many=True, read_only=True, slug_field="wnid")

    class Meta:
        model = Concept
        fields = ["id", "wnid", "name", "gloss", "parents"]


class ConceptViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = ConceptSerializer
    lookup_field = "wnid"
    queryset = Concept.objects.prefetch_related("parents").order_by("wnid")


class HierarchyViewSet(viewsets.ReadOnlyModelViewSet):
    """Question hierarchies loaded with `manage.py load_hierarchy`."""

    serializer_class = HierarchySerializer
    permission_classes = [IsAuthenticated, IsOrganizer]

    def get_queryset(self):
        roots = QuestionNode.objects.filter(parents__isnull=True).order_by("position")
        return (
            Hierarchy.objects.annotate(
                node_count=Count("nodes", distinct=True),
                leaf_count=Count("nodes", filter=Q(nodes__leaf=True), distinct=True),
            )
            .prefetch_related(Prefetch("nodes", queryset=roots, to_attr="root_nodes"))
            .order_by("id")
        )
