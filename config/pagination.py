"""The API's one pagination: numbered pages as DRF pages them, but a `page` that is not a positive integer is a
400 (DRF reads an empty one as the first page, so a client's bug would go unnoticed; the schema says integer)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination


class StrictPageNumberPagination(PageNumberPagination):
    def get_page_number(self, request, paginator):
        raw = request.query_params.get(self.page_query_param)
        if raw is not None and raw not in self.last_page_strings and not (raw.isascii() and raw.isdigit()):
            raise ValidationError({self.page_query_param: "must be a page number (1, 2, ...) or 'last'"})
        return super().get_page_number(request, paginator)


def paginated(serializer_class: type[serializers.Serializer], name: str) -> type[serializers.Serializer]:
    """The schema of one page of `serializer_class` rows as the pagination above answers it (for views that
    page by hand, where drf-spectacular cannot see the paginator)."""
    return type(
        name,
        (serializers.Serializer,),
        {
            "count": serializers.IntegerField(),
            "next": serializers.CharField(allow_null=True),
            "previous": serializers.CharField(allow_null=True),
            "results": serializer_class(many=True),
        },
    )


PAGE_PARAMETER = OpenApiParameter("page", int, description="Page number (1, 2, ...) or 'last'.")


def strict_paginator(page_size: int) -> StrictPageNumberPagination:
    paginator = StrictPageNumberPagination()
    paginator.page_size = page_size
    return paginator
