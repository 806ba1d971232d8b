"""Thin DRF views: datasets and image upload for organizers; next task, resume, submit, undo, extend and skip for
workers."""

from __future__ import annotations

from django.conf import settings
from django.core.files.storage import FileSystemStorage
from django.http import FileResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, PolymorphicProxySerializer, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from config.dbconnection import KEY_HEADER, idempotent_by_content, idempotent_by_key
from config.errors import Conflict
from config.parsers import MultiPartParser
from config.queryparams import parse_id, query_bounded, query_flag, query_id
from config.roles import ORGANIZERS, REVIEWERS, IsOrganizer, IsWorker, has_role

from . import examples, hooks, instructions, kinds, queue, vote_tasks
from .image_filters import IMAGE_FILTER_PARAMETERS, images_filtered
from .imagerefs import image_ref_id
from .ingest import images_ingest, item_read
from .models import (
    Assignment,
    AssignmentState,
    ConceptExample,
    ExampleState,
    Image,
    Task,
)
from .scoping import organizer_datasets_counted, reviewer_datasets
from .serializers import (
    AssignmentSerializer,
    ConceptExampleSerializer,
    DatasetSerializer,
    ExampleUploadSerializer,
    ImageSerializer,
    ImageUploadSerializer,
    IngestReportSerializer,
    LeasesSerializer,
    SubmitResponseSerializer,
    SubmitSerializer,
    VoteResultSerializer,
    concept_by_wnid,
)


def idempotency_key(request) -> queue.IdempotencyKey:
    """The submit's Idempotency-Key header, refused (400) when missing or longer than 128 characters: the one
    check every submit endpoint (the worker page's, a provider session's) makes; the queue takes the checked
    key as it is."""
    try:
        return queue.IdempotencyKey.parse(request.headers.get(KEY_HEADER, ""))
    except queue.KeyInvalid:
        raise ValidationError(
            {"Idempotency-Key": "send an Idempotency-Key header of 1 to 128 characters"}
        ) from None


class DatasetViewSet(
    mixins.CreateModelMixin, mixins.RetrieveModelMixin, mixins.ListModelMixin, viewsets.GenericViewSet
):
    """Datasets of the calling organizer."""

    serializer_class = DatasetSerializer
    permission_classes = [IsAuthenticated, IsOrganizer]

    def get_queryset(self):
        return organizer_datasets_counted(
            self.request.user, schema_only=getattr(self, "swagger_fake_view", False)
        )

    def perform_create(self, serializer):
        dataset = serializer.save()
        dataset.organizers.add(self.request.user)
        dataset.image_count = 0  # what the list's annotation gives: a new dataset has no images yet

    @extend_schema(
        parameters=IMAGE_FILTER_PARAMETERS,
        responses=ImageSerializer(many=True),
    )
    # The route's POST uploads files: multipart is its one body type (every other body is JSON).
    @action(detail=True, methods=["get"], url_path="images", parser_classes=[MultiPartParser])
    def images(self, request, pk=None):
        dataset = self.get_object()
        qs = images_filtered(dataset.images.order_by("id"), request.query_params)
        page = self.paginate_queryset(qs)
        return self.get_paginated_response(ImageSerializer(page, many=True).data)

    @extend_schema(
        request={"multipart/form-data": ImageUploadSerializer},
        responses={201: IngestReportSerializer, 200: IngestReportSerializer, 400: IngestReportSerializer},
        description="Upload many image files at once (field `files`). Every file is checked on its own: the good "
        "ones are stored, each bad one is listed in `rejected` with its reason. A file whose exact bytes the "
        "dataset holds already is listed in `stored` with that image and `already_stored: true`, so sending a "
        "request again (its answer lost, or a 503) is safe and answers what the first one stored. 201 when a "
        "file was stored now, 200 when every good file was there already, 400 when none is in the dataset.",
    )
    @images.mapping.post
    @idempotent_by_content
    def upload_images(self, request, pk=None):
        dataset = self.get_object()
        form = ImageUploadSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        items = (
            item_read(f.name or "upload", f, size=f.size, source=form.validated_data["source"])
            for f in form.validated_data["files"]
        )
        report = images_ingest(
            dataset=dataset, items=items, pixel_budget=settings.CROWDLABEL["MAX_PIXELS_PER_REQUEST"]
        )
        if report.stored:
            code = status.HTTP_201_CREATED
        else:
            code = status.HTTP_200_OK if report.already_stored else status.HTTP_400_BAD_REQUEST
        return Response(report.as_dict(), status=code)

    @extend_schema(responses=VoteResultSerializer(many=True))
    @action(detail=True, methods=["get"], url_path="vote-results")
    def vote_results(self, request, pk=None):
        """Binary vote tasks of the dataset with their state and, once done, their outcome."""
        dataset = self.get_object()
        tasks = (
            Task.objects.filter(dataset=dataset, kind=vote_tasks.KIND)
            .select_related("concept")
            .order_by("id")
        )
        page = self.paginate_queryset(tasks)
        return self.get_paginated_response(VoteResultSerializer(page, many=True).data)

    @extend_schema(
        parameters=[
            OpenApiParameter("concept", str, description="Only examples of this concept (wnid)."),
            OpenApiParameter("kind", str, description="Only examples shown on this task kind."),
        ],
        responses=ConceptExampleSerializer(many=True),
    )
    @action(detail=True, methods=["get"], url_path="examples", parser_classes=[MultiPartParser])
    def examples(self, request, pk=None):
        """Example images shown beside the question on the dataset's tasks (removed ones too, by state)."""
        dataset = self.get_object()
        qs = ConceptExample.objects.filter(dataset=dataset).select_related("concept").order_by("id")
        if request.query_params.get("concept"):
            qs = qs.filter(concept=concept_by_wnid(request.query_params["concept"]))
        if request.query_params.get("kind"):
            qs = qs.filter(kind=request.query_params["kind"])
        page = self.paginate_queryset(qs)
        return self.get_paginated_response(ConceptExampleSerializer(page, many=True).data)

    @extend_schema(
        request={"multipart/form-data": ExampleUploadSerializer},
        responses={201: ConceptExampleSerializer},
        description="Attach an example image (field `file`) to a concept and task kind: `positive` shows what "
        "counts, `negative` what does not. The image is checked as uploads are (size, pixels, format).",
    )
    @examples.mapping.post
    def example_add(self, request, pk=None):
        dataset = self.get_object()
        form = ExampleUploadSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        upload = data["file"]
        limit = settings.CROWDLABEL["MAX_IMAGE_BYTES"]
        try:
            example = examples.example_add(
                dataset=dataset,
                concept=concept_by_wnid(data["concept"]),
                kind=data["kind"],
                polarity=data["polarity"],
                data=upload.read(limit + 1),
                size=upload.size,
                name=(upload.name or "example").rsplit("/", 1)[-1][:100],
                caption=data["caption"],
                user=request.user,
            )
        except examples.ExampleRefused as exc:
            raise ValidationError({"file": [str(exc)]}) from None
        return Response(ConceptExampleSerializer(example).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses=ConceptExampleSerializer)
    @action(detail=True, methods=["post"], url_path=r"examples/(?P<example_id>[0-9]+)/remove")
    def example_remove(self, request, pk=None, example_id=None):
        """Stop showing an example on the tasks (it stays listed, as removed)."""
        dataset = self.get_object()
        example = get_object_or_404(ConceptExample, pk=example_id, dataset=dataset)
        example = examples.example_remove(example=example)
        return Response(ConceptExampleSerializer(example).data)


LEASE_PARAMETERS = [
    OpenApiParameter("kinds", str, description="Comma-separated task kinds to take (default: any)."),
    OpenApiParameter("dataset", int, description="Only tasks of this dataset."),
]


def lease_request(params) -> queue.LeaseRequest:
    """What a lease asks for, from the query string (`kinds`, `dataset`); 400 for an unknown kind or a bad id."""
    wanted = [k for k in params.get("kinds", "").split(",") if k]
    unknown = sorted(set(wanted) - set(kinds.names()))
    if unknown:
        raise ValidationError(
            {"kinds": f"unknown task kinds: {', '.join(unknown)}; known: {', '.join(kinds.names())}"}
        )
    return queue.LeaseRequest(tuple(wanted) or None, query_id(params, "dataset"))


COUNT_PARAMETER = OpenApiParameter(
    "count",
    {"type": "integer", "minimum": 1, "maximum": queue.MANY_MAX},
    description=f"Lease up to this many tasks (1 to {queue.MANY_MAX}) at once: the answer is then "
    '`{"tasks": [...]}`, each as a single lease hands it out, in the order they were leased (an empty list '
    "when none is available). Without it, one task or 204, as always.",
)


class NextTaskView(APIView):
    """Lease the next task for the calling worker, or (with `count`) up to that many at once."""

    permission_classes = [IsAuthenticated, IsWorker]

    @extend_schema(
        parameters=[*LEASE_PARAMETERS, COUNT_PARAMETER],
        responses={
            200: PolymorphicProxySerializer(
                component_name="TaskLease",
                serializers=[AssignmentSerializer, LeasesSerializer],
                resource_type_field_name=None,
            ),
            204: OpenApiResponse(description="Without `count`: no task is available now."),
        },
    )
    def get(self, request):
        wanted = lease_request(request.query_params)
        count = query_bounded(request.query_params, "count", 1, queue.MANY_MAX)
        if count is not None:
            leases = queue.task_lease_many(
                worker=request.user.worker,
                count=count,
                kinds_wanted=wanted.kinds_wanted,
                dataset_id=wanted.dataset_id,
            )
            return Response({"tasks": [worker_view(lease.assignment, lease) for lease in leases]})
        lease = queue.task_lease(
            worker=request.user.worker, kinds_wanted=wanted.kinds_wanted, dataset_id=wanted.dataset_id
        )
        if lease is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(worker_view(lease.assignment, lease))


def worker_view(assignment: Assignment, lease: queue.Lease | None = None) -> dict:
    """An assignment as the worker's browser receives it when the task is handed out (leased, or resumed after
    a reload): the assignment and its task with the task's example images (`task.examples`) and the organizer's
    instructions for its stage (`task.instructions`, "" when none), plus what registered lease extras add; the
    `lease` that handed it out carries the examples and instructions, else they are looked up. Submit, extend
    and release answers leave the examples and instructions out."""
    data = AssignmentSerializer(assignment).data
    leased = lease or queue.Lease(assignment)
    data["task"]["examples"] = examples.task_examples(assignment.task, leased.examples)
    data["task"]["instructions"] = instructions.task_instructions(assignment.task, leased.instructions)
    for extras in hooks.lease_extras:
        data.update(extras(assignment))
    return data


class AssignmentViewSet(viewsets.ReadOnlyModelViewSet):
    """The calling worker's own assignments."""

    serializer_class = AssignmentSerializer
    permission_classes = [IsAuthenticated, IsWorker]

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation runs without a user
            return Assignment.objects.none()
        mine = Assignment.objects.filter(worker=self.request.user.worker).select_related(
            "task__image", "task__concept"
        )
        if self.action == "list" and self._held():
            return mine.filter(state=AssignmentState.LEASED, expires_at__gt=timezone.now()).order_by("id")
        return mine.order_by("-id")

    def _held(self) -> bool:
        return query_flag(self.request.query_params, "held")

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "held",
                bool,
                description="true: only the leases this worker holds now (not submitted, not expired), oldest "
                "first, each as the lease handed it out; the worker page resumes them after a reload.",
            )
        ]
    )
    def list(self, request, *args, **kwargs):
        if not self._held():
            return super().list(request, *args, **kwargs)
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response([worker_view(a) for a in page])

    @extend_schema(
        request=SubmitSerializer,
        parameters=[
            OpenApiParameter(
                "Idempotency-Key",
                str,
                OpenApiParameter.HEADER,
                required=True,
                description="A key chosen by the client for this submission; a retry with the same key is "
                "answered with the stored result and changes nothing.",
            ),
            OpenApiParameter(
                "next",
                bool,
                description="true: also lease this worker's next task, in the same transaction, and return it "
                "as `next` (as `tasks/next` hands it out; null when none is available), which saves the "
                "worker a round trip per task. `kinds` and `dataset` say what to lease, as for `tasks/next`. "
                "A retry with the same key returns the same `next` while that lease is still open.",
            ),
            *LEASE_PARAMETERS,
        ],
        responses={200: SubmitResponseSerializer, 201: SubmitResponseSerializer},
        description="Submit the answer once. After a wrong answer to a qualification task (the short training "
        "set a new worker answers before production tasks of a kind), the response also carries `feedback` "
        "(the expected answer and an explanation); no other response ever does.",
    )
    @action(detail=True, methods=["post"])
    @idempotent_by_key
    def submit(self, request, pk=None):
        if parse_id(str(pk)) is None:
            raise NotFound("No such assignment.")
        key = idempotency_key(request)
        form = SubmitSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        wants_next = query_flag(request.query_params, "next")
        try:
            result = queue.assignment_submit(
                assignment=int(pk),
                worker=request.user.worker,
                answer=form.validated_data["answer"],
                idempotency_key=key,
                lease_next=lease_request(request.query_params) if wants_next else None,
            )
        except Assignment.DoesNotExist:  # another worker's assignment looks the same as none at all
            raise NotFound("No such assignment.") from None
        except kinds.AnswerInvalid as exc:
            raise ValidationError({"answer": str(exc)}) from None
        except queue.QueueError as exc:
            raise Conflict(str(exc), code=exc.code) from None
        code = status.HTTP_200_OK if result.replayed else status.HTTP_201_CREATED
        data = {**AssignmentSerializer(result.assignment).data, **result.extras}
        if wants_next:
            lease = result.next_lease
            data["next"] = worker_view(lease.assignment, lease) if lease is not None else None
        return Response(data, status=code)

    @extend_schema(
        request=None,
        responses={
            201: AssignmentSerializer,
            200: OpenApiResponse(AssignmentSerializer, description="A retry of an undo already done."),
            409: OpenApiResponse(
                description="The answer stands: the window passed or its question is settled."
            ),
        },
        description="Take back this submitted answer within `CROWDLABEL_ANSWER_UNDO_SECONDS` of sending it, "
        "while its question is undecided: the answer stops counting and the task is leased to you again (the "
        "response is that new lease, as `tasks/next` hands one out). A retry returns the same lease.",
    )
    @action(detail=True, methods=["post"])
    def undo(self, request, pk=None):
        if parse_id(str(pk)) is None:
            raise NotFound("No such assignment.")
        try:
            result = queue.assignment_withdraw(assignment=int(pk), worker=request.user.worker)
        except Assignment.DoesNotExist:
            raise NotFound("No such assignment.") from None
        except queue.QueueError as exc:
            raise Conflict(str(exc), code=exc.code) from None
        code = status.HTTP_200_OK if result.replayed else status.HTTP_201_CREATED
        return Response(worker_view(result.lease), status=code)

    @extend_schema(request=None, responses=AssignmentSerializer)
    @action(detail=True, methods=["post"])
    def extend(self, request, pk=None):
        """The worker is still at this task: the lease runs for a full lease duration from now. A lease that
        already ended is a 409."""
        try:
            assignment = queue.assignment_extend(assignment=self.get_object())
        except queue.QueueError as exc:
            raise Conflict(str(exc), code=exc.code) from None
        return Response(AssignmentSerializer(assignment).data)

    @extend_schema(request=None, responses=AssignmentSerializer)
    @action(detail=True, methods=["post"])
    def release(self, request, pk=None):
        """Skip this task: the lease ends now and other workers can take it."""
        try:
            assignment = queue.assignment_release(assignment=self.get_object())
        except queue.QueueError as exc:
            raise Conflict(str(exc)) from None
        return Response(AssignmentSerializer(assignment).data)


class ImageFileView(APIView):
    """The image bytes by id, for the dataset's organizers and for reviewers. Workers load a task's image by
    the opaque reference its lease gives (`task-images/{ref}`): an id would tell them how old the image is."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses={(200, "image/*"): OpenApiTypes.BINARY})
    def get(self, request, pk: int):
        user = request.user
        if not (user.is_superuser or has_role(user, REVIEWERS) or has_role(user, ORGANIZERS)):
            raise PermissionDenied(
                "Workers load a task's image from the URL its lease gives (task.image.url)."
            )
        image = get_object_or_404(Image.objects.select_related("dataset"), pk=pk)
        allowed = (
            user.is_superuser
            or (has_role(user, REVIEWERS) and reviewer_datasets(user).filter(pk=image.dataset_id).exists())
            or image.dataset.organizers.filter(pk=user.pk).exists()
        )
        if not allowed:
            raise NotFound("No such image.")
        return image_file_response(image)


class TaskImageFileView(APIView):
    """The image of a task, by the opaque reference the lease gave, for the worker who holds (or held) a task
    on it. Any other reference, or an image of nobody's task of theirs, is the same 404."""

    permission_classes = [IsAuthenticated, IsWorker]

    @extend_schema(responses={(200, "image/*"): OpenApiTypes.BINARY})
    def get(self, request, ref: str):
        image_id = image_ref_id(ref)
        image = (
            Image.objects.filter(
                pk=image_id,
                pk__in=Assignment.objects.filter(worker=request.user.worker).values("task__image_id"),
            ).first()
            if image_id is not None
            else None
        )
        if image is None:
            raise NotFound("No such image.")
        return image_file_response(image)


def image_file_response(image: Image):
    """The image's bytes from local storage, or a redirect to the storage's own (signed) URL."""
    storage = image.file.storage
    if isinstance(storage, FileSystemStorage):
        response = FileResponse(image.file.open("rb"))
        response["Cache-Control"] = "private, max-age=3600"
        return response
    return HttpResponseRedirect(storage.url(image.file.name))


class ExampleFileView(APIView):
    """An example image's bytes, for the dataset's organizers and reviewers and for workers with a task in it."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses={(200, "image/*"): OpenApiTypes.BINARY})
    def get(self, request, pk: int):
        example = get_object_or_404(
            ConceptExample.objects.select_related("dataset"), pk=pk, state=ExampleState.SHOWN
        )
        user = request.user
        allowed = (
            user.is_superuser
            or (has_role(user, REVIEWERS) and reviewer_datasets(user).filter(pk=example.dataset_id).exists())
            or (has_role(user, ORGANIZERS) and example.dataset.organizers.filter(pk=user.pk).exists())
            or (
                hasattr(user, "worker")
                and Assignment.objects.filter(
                    worker=user.worker, task__dataset_id=example.dataset_id
                ).exists()
            )
        )
        if not allowed:
            raise NotFound("No such example.")
        return image_file_response(example)
