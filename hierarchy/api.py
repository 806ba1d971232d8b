"""Read-only API over concepts and their is-a edges."""

from rest_framework import serializers, viewsets

from .models import Concept


class ConceptSerializer(serializers.ModelSerializer):
    parents = serializers.SlugRelatedField(many=True, read_only=True, slug_field="wnid")

    class Meta:
        model = Concept
        fields = ["id", "wnid", "name", "gloss", "parents"]


class ConceptViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = ConceptSerializer
    lookup_field = "wnid"
    queryset = Concept.objects.prefetch_related("parents").order_by("wnid")
