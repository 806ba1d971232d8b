"""The candidate import API: start an import of a URL list, follow its progress, and read per-query
precision of a concept's pool once verification decided some of it. Organizers of the dataset only."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.audit import audit_record
from annotation.scoping import organizer_dataset
from annotation.serializers import concept_by_wnid
from config.parsers import MultiPartParser
from config.roles import IsOrganizer
from hierarchy.selectors import queries_for_concept

from . import selectors, services, sources
from .models import CandidateImport, SourceBucket
from .serializers import (
    CandidateQuerySerializer,
    ImportProgressSerializer,
    ImportUploadSerializer,
    PoolSummarySerializer,
    QueryPrecisionSerializer,
    SourceBucketSerializer,
)

MAX_LIST_BYTES = 50 * 1024 * 1024


class CandidateImportListView(APIView):
    """The dataset's candidate imports (newest first), and starting a new one from an uploaded list."""

    permission_classes = [IsAuthenticated, IsOrganizer]
    parser_classes = [MultiPartParser]

    @extend_schema(responses=ImportProgressSerializer(many=True))
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        jobs = CandidateImport.objects.filter(dataset=dataset).order_by("-id")[:50]
        body = [services.import_progress(job, failures=0) for job in jobs]
        return Response(ImportProgressSerializer(body, many=True).data)

    @extend_schema(
        request={"multipart/form-data": ImportUploadSerializer},
        responses={202: ImportProgressSerializer},
        description="Record every row of the list (refused rows with their reason) and queue the downloads; "
        "follow the import at its own URL. Re-importing a list fetches nothing twice.",
    )
    def post(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        form = ImportUploadSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        upload = form.validated_data["file"]
        if upload.size > MAX_LIST_BYTES:
            raise ValidationError(
                {"file": [f"the list is {upload.size:,} bytes; at most {MAX_LIST_BYTES:,}"]}
            )
        name = (upload.name or "list.csv").rsplit("/", 1)[-1][:200]
        try:
            job = services.candidate_import_create(
                dataset=dataset, name=name, data=upload.read(), actor=request.user
            )
        except services.ImportRefused as exc:
            raise ValidationError({"file": [str(exc)]}) from None
        job.refresh_from_db()
        body = ImportProgressSerializer(services.import_progress(job)).data
        audit_record(
            dataset=dataset,
            actor=request.user,
            action="candidates.import",
            parameters={"file": name},
            result={"import": job.pk, "rows": job.total},
        )
        return Response(body, status=status.HTTP_202_ACCEPTED)


class CandidateImportView(APIView):
    """One import's progress: counts by outcome and the first failed rows with their reasons."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=ImportProgressSerializer)
    def get(self, request, dataset_id: int, candidate_import_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        job = get_object_or_404(CandidateImport, pk=candidate_import_id, dataset=dataset)
        return Response(ImportProgressSerializer(services.import_progress(job)).data)


class QueryPrecisionView(APIView):
    """Per query that found candidates for the concept: found, decided, present and their precision."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=QueryPrecisionSerializer(many=True))
    def get(self, request, dataset_id: int, wnid: str):
        dataset = organizer_dataset(request.user, dataset_id)
        concept = concept_by_wnid(wnid)
        return Response(QueryPrecisionSerializer(selectors.query_precision(dataset, concept), many=True).data)


class CandidatePoolsView(APIView):
    """The dataset's candidate pools: per concept, its entries, distinct images and the queries that found them."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=PoolSummarySerializer(many=True))
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        return Response(PoolSummarySerializer(selectors.pool_summary(dataset), many=True).data)


class CandidateQueriesView(APIView):
    """The search queries that collect a concept's candidates (the `candidate_queries` command's list, without
    a translation table): run them against your own search service, then import what they found."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(
        parameters=[OpenApiParameter("concept", str, required=True, description="The concept's wnid.")],
        responses=CandidateQuerySerializer(many=True),
    )
    def get(self, request, dataset_id: int):
        organizer_dataset(request.user, dataset_id)
        wnid = request.query_params.get("concept", "")
        if not wnid:
            raise ValidationError({"concept": "required: the wnid of the concept to write queries for"})
        concept = concept_by_wnid(wnid)
        return Response(
            CandidateQuerySerializer([q.as_dict() for q in queries_for_concept(concept)], many=True).data
        )


class SourceBucketListView(APIView):
    """The buckets the dataset's `s3://bucket/key` candidate rows may be read from, and registering one. A row
    naming any other bucket (the platform's media bucket included) fails like a missing object."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=SourceBucketSerializer(many=True))
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        return Response(SourceBucketSerializer(dataset.source_buckets.order_by("id"), many=True).data)

    @extend_schema(
        request=SourceBucketSerializer,
        responses={201: SourceBucketSerializer},
        description="Register a bucket (again: replace its endpoint, region and credentials). Read with your own "
        "access key on the platform's S3 endpoint or one the operator approved, or with the platform's "
        "credentials when the operator granted the bucket to this dataset. The secret is never shown again.",
    )
    def post(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        form = SourceBucketSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            source = sources.source_register(dataset=dataset, actor=request.user, **form.validated_data)
        except sources.SourceRefused as exc:
            raise ValidationError({"bucket": [str(exc)]}) from None
        audit_record(
            dataset=dataset,
            actor=request.user,
            action="candidates.source_bucket_register",
            parameters={"bucket": source.bucket, "endpoint_url": source.endpoint_url},
            result={"source_bucket": source.pk, "credentials": source.credentials},
        )
        return Response(SourceBucketSerializer(source).data, status=status.HTTP_201_CREATED)


class SourceBucketView(APIView):
    """One registered source bucket; deleting it stops every later read of it (pending rows fail)."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=SourceBucketSerializer)
    def get(self, request, dataset_id: int, source_bucket_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        return Response(SourceBucketSerializer(self._source(dataset, source_bucket_id)).data)

    @extend_schema(responses={204: None})
    def delete(self, request, dataset_id: int, source_bucket_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        source = self._source(dataset, source_bucket_id)
        audit_record(
            dataset=dataset,
            actor=request.user,
            action="candidates.source_bucket_remove",
            parameters={"bucket": source.bucket},
        )
        source.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)

    @staticmethod
    def _source(dataset, source_bucket_id: int) -> SourceBucket:
        return get_object_or_404(SourceBucket, pk=source_bucket_id, dataset=dataset)
