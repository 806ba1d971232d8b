"""Thin views: export jobs for a dataset's organizers; submissions and the leaderboard of a challenge."""

from __future__ import annotations

from django.core.files.storage import FileSystemStorage
from django.http import FileResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.utils.http import content_disposition_header
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import APIException, NotFound, PermissionDenied, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.audit import audit_record
from annotation.models import Dataset
from config.parsers import MultiPartParser
from config.roles import IsOrganizer

from . import challenges, services
from .metrics import SubmissionError
from .models import Challenge, ExportJob
from .serializers import (
    ExportJobSerializer,
    ExportRequestSerializer,
    LeaderboardRowSerializer,
    SubmissionProblemsSerializer,
    SubmissionSerializer,
    SubmissionUploadSerializer,
)


class TooManySubmissions(APIException):
    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    default_code = "submission_limit"


def _organized(user, queryset, field: str):
    if user.is_superuser:
        return queryset
    return queryset.filter(**{field: user})


class DatasetExportsView(APIView):
    """Start an export job of the dataset (organizers of the dataset)."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(
        request=ExportRequestSerializer,
        responses={201: ExportJobSerializer, 200: ExportJobSerializer},
        description="Queue an export (Celery queue `exports`). The same request while an identical job is "
        "queued or running returns that job (200) instead of starting another. Test labels are never "
        "included: test images come with ids only.",
    )
    def post(self, request, dataset_id: int):
        dataset = get_object_or_404(
            _organized(request.user, Dataset.objects.all(), "organizers"), pk=dataset_id
        )
        form = ExportRequestSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        try:
            job, created = services.export_job_request(
                dataset=dataset,
                user=request.user,
                format_name=data["format"],
                split=data["split"],
                include_images=data["include_images"],
                provenance=data["provenance"],
            )
        except services.BenchmarkError as exc:
            raise ValidationError({"split": str(exc)}) from None
        job.refresh_from_db()
        if created:
            audit_record(
                dataset=dataset,
                actor=request.user,
                action="export.start",
                parameters=dict(data),
                result={
                    "job": job.pk,
                    "split_version": job.split_version.number if job.split_version else None,
                },
            )
        code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return Response(ExportJobSerializer(job, context={"request": request}).data, status=code)


class ExportJobView(APIView):
    """An export job's state and progress, with its download URL once done."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    def get_object(self, request, pk: int) -> ExportJob:
        qs = _organized(
            request.user, ExportJob.objects.select_related("split_version"), "dataset__organizers"
        )
        return get_object_or_404(qs, pk=pk)

    @extend_schema(responses=ExportJobSerializer)
    def get(self, request, pk: int):
        return Response(ExportJobSerializer(self.get_object(request, pk), context={"request": request}).data)


class ExportFileView(ExportJobView):
    """The finished export archive."""

    @extend_schema(responses={(200, "application/zip"): OpenApiTypes.BINARY})
    def get(self, request, pk: int):
        job = self.get_object(request, pk)
        if job.state != "done" or not job.file:
            raise NotFound("This export has no file yet.")
        storage = job.file.storage
        filename = job.file.name.rsplit("/", 1)[-1]
        if isinstance(storage, FileSystemStorage):
            return FileResponse(job.file.open("rb"), as_attachment=True, filename=filename)
        # The signed URL asks the bucket for the same attachment header the local download sends.
        disposition = content_disposition_header(as_attachment=True, filename=filename)
        return HttpResponseRedirect(
            storage.url(job.file.name, parameters={"ResponseContentDisposition": disposition})
        )


class SubmissionsView(APIView):
    """Upload a submission to a challenge (members of one of its teams)."""

    permission_classes = [IsAuthenticated]
    parser_classes = [MultiPartParser]

    @extend_schema(
        request={"multipart/form-data": SubmissionUploadSerializer},
        responses={
            201: SubmissionSerializer,
            400: SubmissionProblemsSerializer,
            429: OpenApiResponse(description="The team used its submissions for this window."),
        },
        description="Validated against the hidden test labels: a malformed file is refused with every "
        "problem (line or entry number and reason) and does not count. At most 2 submissions per team per "
        "7 days. Small files are scored at once, larger ones shortly after (state `pending`).",
    )
    def post(self, request, pk: int):
        challenge = get_object_or_404(Challenge.objects.select_related("split_version", "dataset"), pk=pk)
        form = SubmissionUploadSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        upload = form.validated_data["file"]
        if upload.size > challenges.MAX_SUBMISSION_BYTES:
            raise ValidationError({"file": "the file is too large"})
        try:
            submission = challenges.submission_create(
                challenge=challenge, user=request.user, name=upload.name or "submission", data=upload.read()
            )
        except SubmissionError as exc:
            body = {
                "detail": f"{len(exc.problems)} problem(s) in the submission; nothing was stored.",
                "problems": [{"where": p.where, "reason": p.reason} for p in exc.problems],
            }
            return Response(body, status=status.HTTP_400_BAD_REQUEST)
        except challenges.NotATeamMember as exc:
            raise PermissionDenied(str(exc)) from None
        except challenges.SubmissionLimit as exc:
            raise TooManySubmissions(str(exc)) from None
        except services.BenchmarkError as exc:
            raise ValidationError({"file": str(exc)}) from None
        return Response(SubmissionSerializer(submission).data, status=status.HTTP_201_CREATED)


class LeaderboardView(APIView):
    """Each team's best scored submission, best first."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses=LeaderboardRowSerializer(many=True))
    def get(self, request, pk: int):
        challenge = get_object_or_404(Challenge, pk=pk)
        return Response(LeaderboardRowSerializer(challenges.leaderboard(challenge), many=True).data)
