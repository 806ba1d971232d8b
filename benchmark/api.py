"""Thin views: export jobs and detection sets for a dataset's organizers; blacklist flags and box attributes
for reviewers; submissions and the leaderboard of a challenge."""

from __future__ import annotations

from django.core.files.storage import FileSystemStorage
from django.db import transaction
from django.http import FileResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.utils.http import content_disposition_header, http_date
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import APIException, NotFound, PermissionDenied, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.audit import audit_record
from annotation.models import Dataset
from annotation.scoping import organizer_dataset, reviewer_datasets
from config.dbconnection import idempotent_by_content
from config.pagination import PAGE_PARAMETER, paginated, strict_paginator
from config.parsers import MultiPartParser
from config.roles import REVIEWERS, IsOrganizer, IsReviewer, has_role

from . import challenges, detection_sets, reports, services
from .metrics import SubmissionError
from .models import BlacklistEntry, Challenge, DetectionSet, ExportJob, ReportKind
from .serializers import (
    BlacklistEntrySerializer,
    BlacklistLiftSerializer,
    BlacklistRequestSerializer,
    BoxAttributesRequestSerializer,
    BoxAttributesSerializer,
    ClassStatisticsSerializer,
    DetectionSetRequestSerializer,
    DetectionSetSerializer,
    ExportJobListSerializer,
    ExportJobSerializer,
    ExportRequestSerializer,
    LeaderboardRowSerializer,
    MergeTodoSerializer,
    ReportFailedSerializer,
    ReportPendingSerializer,
    SubmissionProblemsSerializer,
    SubmissionSerializer,
    SubmissionUploadSerializer,
    TodoJobsSerializer,
)


def report_not_done(current) -> Response:
    """The answer while a kept report (`reports.report_current`) has no computed body to serve: 409 naming why
    its last computation failed, else 202 with the pending one's state (ask again)."""
    if current.failed is not None:
        detail = f"the report could not be computed: {current.failed.error}"
        return Response({"detail": detail}, status=status.HTTP_409_CONFLICT)
    pending = {
        "state": current.pending.state,
        "requested_at": current.pending.created_at,
        "detail": "the report is being computed; ask again in a few seconds",
    }
    return Response(ReportPendingSerializer(pending).data, status=status.HTTP_202_ACCEPTED)


class TooManySubmissions(APIException):
    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    default_code = "submission_limit"


def _organized(user, queryset, field: str):
    if user.is_superuser:
        return queryset
    return queryset.filter(**{field: user})


class DatasetExportsView(APIView):
    """The dataset's export jobs, newest first, and starting one (organizers of the dataset)."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(
        operation_id="v1_datasets_exports_list",
        parameters=[PAGE_PARAMETER],
        responses=paginated(ExportJobListSerializer, "ExportJobPage"),
        description="Every export job of the dataset, newest first (paginated): format, split, state, when, who "
        "asked, and the download URL of each finished one. An earlier archive stays downloadable.",
    )
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        paginator = strict_paginator(50)
        jobs = (
            ExportJob.objects.filter(dataset=dataset)
            .select_related("split_version", "requested_by")
            .defer("manifest")
            .order_by("-id")
        )
        page = paginator.paginate_queryset(jobs, request, view=self)
        rows = ExportJobListSerializer(page, many=True, context={"request": request}).data
        return paginator.get_paginated_response(rows)

    @extend_schema(
        request=ExportRequestSerializer,
        responses={201: ExportJobSerializer, 200: ExportJobSerializer},
        description="Queue an export (Celery queue `exports`). The same request while an identical job is "
        "queued or running returns that job (200) instead of starting another. Test labels are never "
        "included: test images come with ids only. The job first checks the overlaps of every accepted box not "
        "checked yet, then writes; its manifest's `completeness` lists, per class, accepted boxes not final "
        "and images left out (unfinished labelling, gold, unlabelled), with reasons.",
    )
    @idempotent_by_content
    def post(self, request, dataset_id: int):
        # Idempotent by content: the same request while its job is queued or running answers that job, so the
        # middleware runs it again after a lost connection (even one lost after the job committed) instead of
        # answering 503. The job and its audit entry commit together.
        dataset = organizer_dataset(request.user, dataset_id)
        form = ExportRequestSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        with transaction.atomic():
            job, created = self._request(request, dataset, data)
        job.refresh_from_db()
        code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return Response(ExportJobSerializer(job, context={"request": request}).data, status=code)

    @staticmethod
    def _request(request, dataset, data) -> tuple[ExportJob, bool]:
        try:
            job, created = services.export_job_request(
                dataset=dataset,
                user=request.user,
                format_name=data["format"],
                split=data["split"],
                include_images=data["include_images"],
                provenance=data["provenance"],
                detection_set=data["detection_set"],
                include_provisional=data["include_provisional"],
                file_names=data["file_names"],
            )
        except services.UnknownDetectionSet as exc:
            raise ValidationError({"detection_set": str(exc)}) from None
        except services.BenchmarkError as exc:
            raise ValidationError({"split": str(exc)}) from None
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
        return job, created


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

    @extend_schema(
        responses={
            (200, "application/zip"): OpenApiTypes.BINARY,
            302: OpenApiResponse(
                description="With S3 storage: a redirect to a signed bucket URL that serves the archive as an "
                "attachment for a limited time. Follow it without the API's credentials."
            ),
        },
        parameters=[
            OpenApiParameter(
                "Location",
                str,
                OpenApiParameter.HEADER,
                description="The signed bucket URL of the archive.",
                response=[302],
            )
        ],
        description="The archive itself from local storage (200), or a redirect to it in the bucket (302).",
    )
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


# --- detection sets: class selection, merging, freezing ------------------------------------------------------


def _set_of(dataset: Dataset, name: str) -> DetectionSet:
    return get_object_or_404(DetectionSet.objects.select_related("split_version"), dataset=dataset, name=name)


class ClassStatisticsView(APIView):
    """Per-class statistics of the dataset's final boxes, to choose a detection set's classes by: a kept
    report (`benchmark.reports`), computed in the background, since reading every box of a million-image
    dataset takes far longer than a request may."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(
        responses={
            200: ClassStatisticsSerializer(many=True),
            202: ReportPendingSerializer,
            409: ReportFailedSerializer,
        },
        description="The newest computed report (200; `Last-Modified` says when it was computed from the "
        "labels). Before the first one is ready: 202, ask again; a report older than "
        "CROWDLABEL_REPORT_MAX_AGE_SECONDS is answered while a fresh one is computed. 409 when the last "
        "computation failed.",
    )
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        current = reports.report_current(dataset, ReportKind.CLASS_STATISTICS, {}, request.user)
        if current.done is not None:
            response = Response(ClassStatisticsSerializer(current.done.body["classes"], many=True).data)
            response["Last-Modified"] = http_date(current.done.finished_at.timestamp())
            return response
        return report_not_done(current)


class DetectionSetsView(APIView):
    """The dataset's detection sets; POST applies the class rules and stores one."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=DetectionSetSerializer(many=True))
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        rows = DetectionSet.objects.filter(dataset=dataset).select_related("split_version")
        return Response(DetectionSetSerializer(rows, many=True).data)

    @extend_schema(
        request=DetectionSetRequestSerializer,
        responses={201: DetectionSetSerializer},
        description="Refused (400, naming both) when one class is an ancestor of another; classes whose "
        "objects average more than `max_area_share` of the image are dropped, listed in `report.dropped`. "
        "Posting a name again replaces that set unless it is frozen.",
    )
    def post(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        form = DetectionSetRequestSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        try:
            detection_set = detection_sets.detection_set_create(
                dataset=dataset,
                user=request.user,
                name=data["name"],
                wnids=data["classes"],
                merge=data["merge"],
                max_area_share=data["max_area_share"],
                min_instances=data["min_instances"],
            )
        except services.BenchmarkError as exc:
            raise ValidationError({"classes": str(exc)}) from None
        return Response(DetectionSetSerializer(detection_set).data, status=status.HTTP_201_CREATED)


class DetectionSetTodoView(APIView):
    """What a basic-level merge still owes: images showing a merged class not yet boxed for all of it."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=MergeTodoSerializer(many=True))
    def get(self, request, dataset_id: int, name: str):
        detection_set = _set_of(organizer_dataset(request.user, dataset_id), name)
        todo = [t.as_dict() for t in detection_sets.merge_todo(detection_set)]
        return Response(MergeTodoSerializer(todo, many=True).data)

    @extend_schema(
        request=None,
        responses=TodoJobsSerializer,
        description="Start a box job of the merged class on every owed image (existing jobs are kept).",
    )
    def post(self, request, dataset_id: int, name: str):
        detection_set = _set_of(organizer_dataset(request.user, dataset_id), name)
        return Response(detection_sets.merge_todo_jobs(detection_set=detection_set, user=request.user))


class DetectionSetFreezeView(APIView):
    """Freeze a detection set on the latest frozen split version (snapshot of blacklist and attributes)."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(request=None, responses=DetectionSetSerializer)
    def post(self, request, dataset_id: int, name: str):
        detection_set = _set_of(organizer_dataset(request.user, dataset_id), name)
        try:
            detection_set = detection_sets.detection_set_freeze(
                detection_set=detection_set, user=request.user
            )
        except services.BenchmarkError as exc:
            raise ValidationError({"split_version": str(exc)}) from None
        return Response(DetectionSetSerializer(detection_set).data)


# --- reviewers: blacklist and box attributes -----------------------------------------------------------------


def _reviewed_dataset(request, dataset_id: int) -> Dataset:
    """Reviewers work on the datasets they may review (every dataset when unscoped); organizers on their own."""
    if has_role(request.user, REVIEWERS):
        return get_object_or_404(reviewer_datasets(request.user), pk=dataset_id)
    return organizer_dataset(request.user, dataset_id)


class BlacklistView(APIView):
    """Images flagged too ambiguous to localize: left out of the localization truth, listed in exports."""

    permission_classes = [IsAuthenticated, IsReviewer | IsOrganizer]

    @extend_schema(responses=BlacklistEntrySerializer(many=True))
    def get(self, request, dataset_id: int):
        dataset = _reviewed_dataset(request, dataset_id)
        rows = BlacklistEntry.objects.filter(dataset=dataset, lifted_at__isnull=True).select_related(
            "concept"
        )
        return Response(BlacklistEntrySerializer(rows, many=True).data)

    @extend_schema(
        request=BlacklistRequestSerializer,
        responses={201: BlacklistEntrySerializer, 200: BlacklistEntrySerializer},
        description="Flag an image for one class (`wnid`) or every class. Flagging again returns the active "
        "entry (200). Recorded in the dataset's audit trail.",
    )
    def post(self, request, dataset_id: int):
        dataset = _reviewed_dataset(request, dataset_id)
        form = BlacklistRequestSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        try:
            entry, created = detection_sets.blacklist_flag(
                dataset=dataset,
                image_id=data["image"],
                wnid=data.get("wnid"),
                reason=data["reason"],
                user=request.user,
            )
        except services.BenchmarkError as exc:
            raise ValidationError({"image": str(exc)}) from None
        code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return Response(BlacklistEntrySerializer(entry).data, status=code)


class BlacklistLiftView(APIView):
    """Lift a blacklist flag (kept as a lifted entry; audited)."""

    permission_classes = [IsAuthenticated, IsReviewer | IsOrganizer]

    @extend_schema(request=BlacklistLiftSerializer, responses=BlacklistEntrySerializer)
    def post(self, request, dataset_id: int):
        dataset = _reviewed_dataset(request, dataset_id)
        form = BlacklistLiftSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        try:
            entry = detection_sets.blacklist_lift(
                dataset=dataset, image_id=data["image"], wnid=data.get("wnid"), user=request.user
            )
        except services.BenchmarkError as exc:
            raise ValidationError({"image": str(exc)}) from None
        return Response(BlacklistEntrySerializer(entry).data)


class BoxAttributesView(APIView):
    """Set an accepted box's PASCAL VOC attributes (difficult, truncated, occluded, viewpoint)."""

    permission_classes = [IsAuthenticated, IsReviewer | IsOrganizer]

    @extend_schema(
        request=BoxAttributesRequestSerializer,
        responses={201: BoxAttributesSerializer},
        description="Attributes not given keep their value. `difficult` boxes are neither true nor false "
        "positives in voc07/voc12 scoring. Recorded in the dataset's audit trail.",
    )
    def post(self, request, dataset_id: int):
        dataset = _reviewed_dataset(request, dataset_id)
        form = BoxAttributesRequestSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = dict(form.validated_data)
        box_id = data.pop("box")
        try:
            row = detection_sets.box_attributes_set(dataset=dataset, box_id=box_id, user=request.user, **data)
        except services.BenchmarkError as exc:
            raise ValidationError({"box": str(exc)}) from None
        return Response(BoxAttributesSerializer(row).data, status=status.HTTP_201_CREATED)
