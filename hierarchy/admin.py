"""Admin for concepts, with their is-a parents edited inline."""

from django.contrib import admin

from .models import Concept, ConceptEdge


class ParentEdgeInline(admin.TabularInline):
    model = ConceptEdge
    fk_name = "child"  # the edges in which this concept is the child: its parents
    extra = 0
    autocomplete_fields = ["parent"]
    verbose_name = "parent"
    verbose_name_plural = "parents (is-a)"


@admin.register(Concept)
class ConceptAdmin(admin.ModelAdmin):
    list_display = ["wnid", "name"]
    search_fields = ["wnid", "name"]
    inlines = [ParentEdgeInline]
