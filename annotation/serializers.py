"""API representations of datasets, images and the worker's view of tasks and assignments."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.bounds import id_integer
from config.urlids import id_url

from . import kinds
from .imagecheck import ACCEPTED_FORMATS
from .imagerefs import image_ref
from .models import PRIORITY_LIMIT, Assignment, ConceptExample, Dataset, ExamplePolarity, Image
from .queue import IDEMPOTENCY_KEY_MAX, MANY_MAX


class DatasetSerializer(serializers.ModelSerializer):
    image_count = serializers.IntegerField(read_only=True)
    image_formats = serializers.ListField(
        child=serializers.ChoiceField(choices=sorted(ACCEPTED_FORMATS)),
        required=False,
        max_length=len(ACCEPTED_FORMATS),
        help_text="Formats uploads may use; empty (the default) accepts every format.",
    )

    class Meta:
        model = Dataset
        fields = ["id", "name", "description", "image_formats", "created_at", "archived_at", "image_count"]
        read_only_fields = ["id", "created_at", "archived_at", "image_count"]


class ImageSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()

    class Meta:
        model = Image
        fields = [
            "id",
            "original_name",
            "width",
            "height",
            "sha256",
            "phash",
            "source",
            "near_duplicate_of",
            "excluded_at",
            "url",
        ]

    def get_url(self, image: Image) -> str:
        return id_url("image-file", image.pk)


class ImageUploadSerializer(serializers.Serializer):
    files = serializers.ListField(child=serializers.FileField(allow_empty_file=True), allow_empty=False)
    source = serializers.CharField(required=False, allow_blank=True, max_length=500, default="")


class IngestRejectionSerializer(serializers.Serializer):
    name = serializers.CharField()
    reason = serializers.CharField()


class IngestStoredSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    ref = serializers.CharField(help_text="The reference workers' leases name the image by (task.image.ref).")
    name = serializers.CharField()
    near_duplicate_of = serializers.IntegerField(required=False, allow_null=True)
    already_stored = serializers.BooleanField(
        required=False,
        help_text="True when the dataset held these exact bytes already (a repeated upload, e.g. a retry of a "
        "request whose answer was lost): the image stored before, not a second copy.",
    )


class IngestReportSerializer(serializers.Serializer):
    stored = IngestStoredSerializer(many=True)
    near_duplicates = IngestStoredSerializer(many=True)
    rejected = IngestRejectionSerializer(many=True)


def task_image_url(ref: str) -> str:
    return f"/api/v1/task-images/{ref}"


class WorkerImageSerializer(serializers.Serializer):
    ref = serializers.CharField(
        help_text="The image's opaque reference (no id: nothing a worker sees tells an old image from a new one); "
        "a box_draw answer may name it as `image`."
    )
    url = serializers.CharField(
        help_text="/api/v1/task-images/{ref}: the bytes, for the worker holding the task."
    )
    width = serializers.IntegerField()
    height = serializers.IntegerField()


class WorkerTaskSerializer(serializers.Serializer):
    """What a worker's browser may know about a task: its kind, the public payload and the image. Never
    the task's result, its other answers, whether it is a gold item, or an id that tells its age: the task is
    named by its assignment, the image by an opaque reference (annotation/imagerefs.py)."""

    kind = serializers.CharField()
    title = serializers.SerializerMethodField()
    payload = serializers.SerializerMethodField()
    image = serializers.SerializerMethodField()

    def get_title(self, task) -> str:
        return kinds.get(task.kind).title

    @extend_schema_field(serializers.DictField())
    def get_payload(self, task) -> dict:
        return kinds.get(task.kind).public_payload(task)

    @extend_schema_field(WorkerImageSerializer(allow_null=True))
    def get_image(self, task) -> dict | None:
        image = task.image
        if image is None:
            return None
        ref = image_ref(image.pk)
        return {
            "ref": ref,
            "url": task_image_url(ref),
            "width": image.width,
            "height": image.height,
        }

    def to_representation(self, task):
        """The fields above, built directly (see AssignmentSerializer.to_representation)."""
        return {
            "kind": task.kind,
            "title": self.get_title(task),
            "payload": self.get_payload(task),
            "image": self.get_image(task),
        }


_datetime = serializers.DateTimeField()
_worker_task = WorkerTaskSerializer()


class AssignmentSerializer(serializers.ModelSerializer):
    task = WorkerTaskSerializer(read_only=True)

    class Meta:
        model = Assignment
        fields = ["id", "state", "leased_at", "expires_at", "submitted_at", "answer", "task"]
        read_only_fields = fields

    def to_representation(self, assignment):
        """The fields above, built directly: this answers every lease and submit, and DRF's per-field
        machinery cost about as much as the queue's SQL (bench/queue_throughput.py). A test compares it
        with the generic representation."""
        return {
            "id": assignment.pk,
            "state": assignment.state,
            "leased_at": _datetime.to_representation(assignment.leased_at),
            "expires_at": _datetime.to_representation(assignment.expires_at),
            "submitted_at": _datetime.to_representation(assignment.submitted_at)
            if assignment.submitted_at
            else None,
            "answer": assignment.answer,
            "task": _worker_task.to_representation(assignment.task),
        }


class SubmitResponseSerializer(AssignmentSerializer):
    """A submit's answer, for the schema: the stored assignment and, when the submit asked for it (`next=true`),
    the worker's next lease as `tasks/next` hands it out (null when none is available)."""

    next = AssignmentSerializer(
        read_only=True, allow_null=True, required=False, help_text="Only with next=true: the next lease."
    )

    class Meta(AssignmentSerializer.Meta):
        fields = [*AssignmentSerializer.Meta.fields, "next"]
        read_only_fields = fields


class SubmitSerializer(serializers.Serializer):
    answer = serializers.JSONField(help_text='The answer, shaped by the task kind, e.g. {"answer": true}.')


class LeasesSerializer(serializers.Serializer):
    """`tasks/next?count=N`'s answer: up to N leases, each as `tasks/next` hands one out, in the order they
    were leased (an empty list when no task is available)."""

    tasks = AssignmentSerializer(many=True, read_only=True)


class AnswerItemSerializer(serializers.Serializer):
    assignment = id_integer(help_text="The id of the assignment this answers (one of the worker's leases).")
    idempotency_key = serializers.CharField(
        min_length=1,
        max_length=IDEMPOTENCY_KEY_MAX,
        help_text="A key chosen by the client for this answer, as the single submit's Idempotency-Key header.",
    )
    answer = serializers.JSONField(help_text='The answer, shaped by the task kind, e.g. {"answer": true}.')


class SubmitManySerializer(serializers.Serializer):
    answers = serializers.ListField(
        child=AnswerItemSerializer(), min_length=1, max_length=MANY_MAX, help_text=f"1 to {MANY_MAX} answers."
    )


class AnswerResultSerializer(serializers.Serializer):
    """What became of one answer of a batch."""

    assignment = serializers.IntegerField()
    idempotency_key = serializers.CharField()
    status = serializers.IntegerField(
        help_text="200: stored (now or by an earlier run with this key); 400: the answer is not valid for its "
        "task; 404: no such assignment of yours; 409: the lease expired, or the assignment was submitted with "
        "another key."
    )
    code = serializers.CharField(
        help_text="stored, answer_invalid, not_found, lease_expired or already_submitted."
    )
    detail = serializers.CharField(help_text="Why it was refused (empty when stored).")
    replayed = serializers.BooleanField(help_text="Stored by an earlier run with the same key.")
    result = AssignmentSerializer(
        read_only=True,
        allow_null=True,
        help_text="The stored assignment as the single submit answers it (with `feedback` after a wrong answer "
        "to a qualification task); null when refused.",
    )


class SubmitManyResponseSerializer(serializers.Serializer):
    results = AnswerResultSerializer(many=True, help_text="One per answer sent, in the same order.")


class VoteTasksSerializer(serializers.Serializer):
    concept = serializers.CharField(help_text="wnid of the concept to ask about.")
    images = serializers.ListField(child=id_integer(), required=False, help_text="Default: all.")
    answers_wanted = serializers.IntegerField(min_value=1, max_value=15, default=3)
    priority = serializers.IntegerField(
        default=0,
        min_value=-PRIORITY_LIMIT,
        max_value=PRIORITY_LIMIT,
        help_text="Higher first, among this dataset's tasks.",
    )


class VoteResultSerializer(serializers.Serializer):
    task = serializers.IntegerField(source="pk")
    image = serializers.IntegerField(source="image_id")
    concept = serializers.CharField(source="concept.wnid")
    state = serializers.CharField()
    answers = serializers.IntegerField(source="answers_count")
    result = serializers.JSONField(
        allow_null=True,
        help_text='Once done: {"answer", "yes", "no", "rule"}; while open: the running {"yes", "no"} tally.',
    )


def dataset_images(dataset, data: dict) -> list | None:
    """The images named by an organizer request's optional `images` ids (None when absent: all of them);
    an id that is not an image of `dataset` is a 400 naming it."""
    if "images" not in data:
        return None
    images = list(dataset.images.filter(pk__in=data["images"]).order_by("id"))
    missing = sorted(set(data["images"]) - {image.pk for image in images})
    if missing:
        raise serializers.ValidationError({"images": f"not images of this dataset: {missing}"})
    return images


def concept_by_wnid(wnid: str, field: str = "concept"):
    """The concept an organizer request names by wnid; an unknown wnid is a 400 on `field`."""
    from hierarchy.models import Concept

    concept = Concept.objects.filter(wnid=wnid).first()
    if concept is None:
        raise serializers.ValidationError({field: f"no concept with wnid {wnid!r}"})
    return concept


class TaskExampleSerializer(serializers.Serializer):
    """An example image as a task's page shows it (`task.examples` of a handed-out assignment)."""

    url = serializers.CharField()
    polarity = serializers.ChoiceField(choices=ExamplePolarity.choices)
    caption = serializers.CharField()
    width = serializers.IntegerField()
    height = serializers.IntegerField()


class ConceptExampleSerializer(serializers.ModelSerializer):
    concept = serializers.CharField(source="concept.wnid", read_only=True)
    url = serializers.SerializerMethodField()

    class Meta:
        model = ConceptExample
        fields = [
            "id",
            "concept",
            "kind",
            "polarity",
            "caption",
            "url",
            "width",
            "height",
            "state",
            "created_at",
        ]
        read_only_fields = fields

    def get_url(self, example) -> str:
        return id_url("example-file", example.pk)


class ExampleUploadSerializer(serializers.Serializer):
    concept = serializers.CharField(help_text="The concept's wnid.")
    kind = serializers.CharField(help_text="The task kind whose page shows the example, e.g. binary_vote.")
    polarity = serializers.ChoiceField(choices=ExamplePolarity.choices)
    caption = serializers.CharField(required=False, allow_blank=True, max_length=200, default="")
    file = serializers.FileField(allow_empty_file=True)
