"""The settings page's own endpoints beside consensus-settings, gold-settings and cost-settings: whether the
settings fit the crowd (with the presets), worker instructions per stage, study-link and HIT session sizes, and
shifting the priority of waiting tasks. Every write is checked whole first (a 400 names the field), done in one
transaction and written to the audit trail."""

from __future__ import annotations

from django.db import transaction
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import instructions
from annotation.audit import audit_record
from annotation.models import INSTRUCTIONS_MAX_CHARS, PRIORITY_LIMIT, TaskInstructions
from annotation.priorities import task_priority_groups, tasks_reprioritize
from annotation.serializers import concept_by_wnid
from config.roles import IsOrganizer
from consensus.models import ConsensusSettings
from crowd import bundle_sizes
from crowd.models import StudyLink

from .crowd_fit import PRESETS, settings_warnings
from .scoping import organizer_dataset
from .stages import stage_names, work_stages
from .stalls import crowd_counts

# --- does the crowd fit the settings? -------------------------------------------------------------------------


class CrowdCheckQuerySerializer(serializers.Serializer):
    calibration_votes = serializers.IntegerField(min_value=1, max_value=30, required=False)
    vote_cap = serializers.IntegerField(min_value=1, max_value=30, required=False)


class CrowdSerializer(serializers.Serializer):
    joined = serializers.IntegerField(
        help_text="Workers who have worked in the dataset or accepted a worker invitation to it, not blocked."
    )
    qualified = serializers.IntegerField(help_text="Of them, those qualified on some question kind so far.")
    qualification_required = serializers.BooleanField(
        help_text="Qualification is in force: a qualification size and gold items."
    )


class CrowdWarningSerializer(serializers.Serializer):
    code = serializers.ChoiceField(choices=["calibration_votes", "vote_cap"])
    setting = serializers.CharField(help_text="The consensus-settings field it is about.")
    needed = serializers.IntegerField(help_text="Distinct workers the setting needs.")
    crowd = serializers.IntegerField()
    message = serializers.CharField()


class CrowdCheckSerializer(serializers.Serializer):
    crowd = CrowdSerializer()
    calibration_votes = serializers.IntegerField()
    vote_cap = serializers.IntegerField()
    warnings = CrowdWarningSerializer(many=True)


class CrowdCheckView(APIView):
    """Whether the consensus settings need more distinct workers than the dataset's crowd has: the saved settings,
    or the values given in the query (the page checks a form before it is saved)."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "calibration_votes", int, description="Check this value instead of the saved one."
            ),
            OpenApiParameter("vote_cap", int, description="Check this value instead of the saved one."),
        ],
        responses=CrowdCheckSerializer,
    )
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        form = CrowdCheckQuerySerializer(data=request.query_params)
        form.is_valid(raise_exception=True)
        saved = ConsensusSettings.for_dataset(dataset.pk)
        votes = form.validated_data.get("calibration_votes", saved.calibration_votes)
        cap = form.validated_data.get("vote_cap", saved.vote_cap)
        crowd = crowd_counts(dataset)
        warnings = settings_warnings(calibration_votes=votes, vote_cap=cap, crowd=crowd)
        body = {"crowd": crowd, "calibration_votes": votes, "vote_cap": cap, "warnings": warnings}
        return Response(CrowdCheckSerializer(body).data)


class PresetSerializer(serializers.Serializer):
    name = serializers.CharField()
    title = serializers.CharField()
    description = serializers.CharField()
    consensus = serializers.DictField(help_text="Values for consensus-settings.")
    gold = serializers.DictField(help_text="Values for gold-settings.")
    needs_workers = serializers.IntegerField(help_text="Distinct workers the preset's settings need.")


class PresetsSerializer(serializers.Serializer):
    presets = PresetSerializer(many=True)


class SettingsPresetsView(APIView):
    """Settings for two typical crowds ("Small in-house team", "Open crowd"): the page fills its consensus and
    gold forms with them, and the organizer saves (`organize/crowd_fit.py`, docs/organize.md)."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=PresetsSerializer)
    def get(self, request, dataset_id: int):
        organizer_dataset(request.user, dataset_id)
        return Response(PresetsSerializer({"presets": [p.as_dict() for p in PRESETS]}).data)


# --- worker instructions ----------------------------------------------------------------------------------------


class StageInstructionsSerializer(serializers.Serializer):
    kind = serializers.CharField(help_text="The stage: a question kind (image_verify, ...) or a task kind.")
    title = serializers.CharField()
    text = serializers.CharField(allow_blank=True)
    updated_at = serializers.DateTimeField(allow_null=True)


class InstructionsListSerializer(serializers.Serializer):
    max_chars = serializers.IntegerField()
    stages = StageInstructionsSerializer(many=True)


class InstructionsChangeSerializer(serializers.Serializer):
    kind = serializers.CharField(help_text="The stage the text is for (see GET).")
    text = serializers.CharField(
        allow_blank=True,
        trim_whitespace=False,
        max_length=INSTRUCTIONS_MAX_CHARS,
        help_text="Plain text shown to the workers as typed (blank lines part paragraphs, lines starting "
        '"- " are bullets); empty removes the instructions.',
    )

    def validate_kind(self, kind):
        known = stage_names()
        if kind not in known:
            raise ValidationError(f"unknown stage {kind!r}; known: {', '.join(known)}")
        return kind


def _instructions_list(dataset) -> dict:
    rows = {r.kind: r for r in TaskInstructions.objects.filter(dataset=dataset)}
    stages = [
        {
            **stage,
            "text": rows[stage["kind"]].text if stage["kind"] in rows else "",
            "updated_at": rows[stage["kind"]].updated_at if stage["kind"] in rows else None,
        }
        for stage in work_stages()
    ]
    return {"max_chars": INSTRUCTIONS_MAX_CHARS, "stages": stages}


class InstructionsView(APIView):
    """What the workers of the dataset are told about each stage of work, shown on the worker page above the
    task and in its help sheet (`task.instructions` of a lease). PATCH sets one stage's text."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=InstructionsListSerializer)
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        return Response(InstructionsListSerializer(_instructions_list(dataset)).data)

    @extend_schema(request=InstructionsChangeSerializer, responses=InstructionsListSerializer)
    def patch(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        form = InstructionsChangeSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        kind, text = form.validated_data["kind"], form.validated_data["text"]
        with transaction.atomic():
            try:
                row = instructions.instructions_set(dataset=dataset, kind=kind, text=text, user=request.user)
            except instructions.InstructionsRefused as exc:
                raise ValidationError({"text": str(exc)}) from None
            audit_record(
                dataset=dataset,
                actor=request.user,
                action="instructions.change",
                parameters={"kind": kind, "characters": len(row.text) if row else 0},
            )
        return Response(InstructionsListSerializer(_instructions_list(dataset)).data)


# --- study-link and HIT session sizes ---------------------------------------------------------------------------


class BundleSizeRowSerializer(serializers.Serializer):
    kind = serializers.CharField(help_text="Task kind.")
    size = serializers.IntegerField(help_text="Tasks one session answers.")
    default = serializers.BooleanField(help_text="The kind uses the server's default size.")
    study_link = serializers.CharField(
        allow_null=True, help_text="The key of the dataset's study link of the kind."
    )


class BundleSizesSerializer(serializers.Serializer):
    default_size = serializers.IntegerField()
    max_size = serializers.IntegerField()
    kinds = BundleSizeRowSerializer(many=True)


class BundleSizesChangeSerializer(serializers.Serializer):
    sizes = serializers.DictField(
        child=serializers.IntegerField(
            allow_null=True,
            min_value=1,
            max_value=bundle_sizes.MAX_BUNDLE_SIZE,
            error_messages={
                "min_value": f"a session answers 1 to {bundle_sizes.MAX_BUNDLE_SIZE} tasks",
                "max_value": f"a session answers 1 to {bundle_sizes.MAX_BUNDLE_SIZE} tasks",
            },
        ),
        allow_empty=False,
        help_text="{task kind: tasks per session, or null for the default}.",
    )


def _bundle_sizes_body(dataset) -> dict:
    default = bundle_sizes.bundle_size_default()
    links = dict(StudyLink.objects.filter(dataset=dataset).values_list("kind", "key"))
    rows = [
        {"kind": kind, "size": size or default, "default": size is None, "study_link": links.get(kind)}
        for kind, size in bundle_sizes.bundle_sizes(dataset).items()
    ]
    return {"default_size": default, "max_size": bundle_sizes.MAX_BUNDLE_SIZE, "kinds": rows}


class BundleSizesView(APIView):
    """How many tasks one study-link visit or MTurk assignment answers, per task kind. A change applies to
    sessions opened from then on."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=BundleSizesSerializer)
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        return Response(BundleSizesSerializer(_bundle_sizes_body(dataset)).data)

    @extend_schema(request=BundleSizesChangeSerializer, responses=BundleSizesSerializer)
    def patch(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        form = BundleSizesChangeSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        sizes = form.validated_data["sizes"]
        with transaction.atomic():
            try:
                bundle_sizes.bundle_sizes_set(dataset=dataset, sizes=sizes)
            except bundle_sizes.BundleSizeRefused as exc:
                raise ValidationError({"sizes": str(exc)}) from None
            audit_record(dataset=dataset, actor=request.user, action="bundle_sizes.change", parameters=sizes)
        return Response(BundleSizesSerializer(_bundle_sizes_body(dataset)).data)


# --- priorities of waiting tasks --------------------------------------------------------------------------------


class PriorityGroupSerializer(serializers.Serializer):
    stage = serializers.CharField()
    concept = serializers.CharField(help_text="wnid; empty for tasks without a class.")
    concept_name = serializers.CharField()
    tasks = serializers.IntegerField(help_text="Waiting tasks (open or leased).")
    min_priority = serializers.IntegerField()
    max_priority = serializers.IntegerField()


class PriorityGroupsSerializer(serializers.Serializer):
    groups = PriorityGroupSerializer(many=True)
    changed = serializers.IntegerField(required=False, help_text="After a shift: tasks it changed.")


class PriorityShiftSerializer(serializers.Serializer):
    change = serializers.IntegerField(
        min_value=-PRIORITY_LIMIT,
        max_value=PRIORITY_LIMIT,
        help_text="Added to each task's priority (higher goes first).",
    )
    stage = serializers.CharField(
        required=False, default="", allow_blank=True, help_text="Empty: every stage."
    )
    concept = serializers.CharField(
        required=False, default="", allow_blank=True, help_text="wnid; empty: all."
    )

    def validate_change(self, change):
        if change == 0:
            raise ValidationError("give a shift other than 0")
        return change

    def validate_stage(self, stage):
        known = stage_names()
        if stage and stage not in known:
            raise ValidationError(f"unknown stage {stage!r}; known: {', '.join(known)}")
        return stage


class TaskPrioritiesView(APIView):
    """The dataset's waiting tasks by stage and class with their priorities; POST moves a group up (positive
    `change`) or down. Priorities order tasks inside this dataset only."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=PriorityGroupsSerializer)
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        return Response(PriorityGroupsSerializer({"groups": task_priority_groups(dataset)}).data)

    @extend_schema(request=PriorityShiftSerializer, responses=PriorityGroupsSerializer)
    def post(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        form = PriorityShiftSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        concept = concept_by_wnid(data["concept"]) if data["concept"] else None
        with transaction.atomic():
            changed = tasks_reprioritize(
                dataset=dataset, change=data["change"], stage=data["stage"], concept=concept
            )
            if not changed:
                named = [f"stage {data['stage']}"] if data["stage"] else []
                named += [f"class {concept.wnid} ({concept.name})"] if concept else []
                raise ValidationError(
                    {"change": f"no waiting task of this dataset matches ({', '.join(named) or 'any stage'})"}
                )
            audit_record(
                dataset=dataset,
                actor=request.user,
                action="task_priorities.shift",
                parameters=data,
                result={"changed": changed},
            )
        body = {"groups": task_priority_groups(dataset), "changed": changed}
        return Response(PriorityGroupsSerializer(body).data)
