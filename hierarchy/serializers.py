"""API representation of loaded question hierarchies."""

from __future__ import annotations

from rest_framework import serializers

from .models import Hierarchy


class HierarchySerializer(serializers.ModelSerializer):
    nodes = serializers.IntegerField(source="node_count", read_only=True)
    leaves = serializers.IntegerField(source="leaf_count", read_only=True)
    roots = serializers.SerializerMethodField()

    class Meta:
        model = Hierarchy
        fields = [
            "id",
            "name",
            "version",
            "description",
            "fingerprint",
            "nodes",
            "leaves",
            "roots",
            "created_at",
        ]

    def get_roots(self, hierarchy) -> list[str]:
        return [n.question for n in getattr(hierarchy, "root_nodes", [])]
