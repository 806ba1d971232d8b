"""The organizer workspace's own endpoints: a dataset's live progress, its audit trail, its cost ledger and prices."""

from __future__ import annotations

from django.db import transaction
from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.audit import audit_record
from annotation.models import AuditEntry
from config.errors import Conflict
from config.pagination import StrictPageNumberPagination
from config.roles import IsOrganizer
from consensus.starved import starved_settle

from .checklist import dataset_checklist
from .cost import dataset_ledger
from .dataset_archive import dataset_archive, dataset_restore
from .dataset_delete import DatasetInUse, dataset_delete
from .models import CostSettings
from .progress import dataset_progress
from .scoping import organizer_dataset
from .stages import stage_names
from .stalls import dataset_stalls


class StageSerializer(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()
    done = serializers.IntegerField()
    total = serializers.IntegerField()
    eta_seconds = serializers.IntegerField(allow_null=True, help_text="Null: no recent progress to go by.")
    rate_per_hour = serializers.FloatField(help_text="Units finished per hour over the recent window.")
    in_review = serializers.IntegerField(required=False)


class ProgressSerializer(serializers.Serializer):
    dataset = serializers.IntegerField()
    images = serializers.IntegerField()
    boxes_drawn = serializers.IntegerField()
    box_jobs_in_review = serializers.IntegerField()
    review_open = serializers.IntegerField()
    window_seconds = serializers.IntegerField(help_text="The window the rates and ETAs are measured over.")
    stages = StageSerializer(many=True)


class AuditEntrySerializer(serializers.ModelSerializer):
    actor = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = AuditEntry
        fields = ["id", "actor", "action", "parameters", "result", "created_at"]


class DatasetProgressView(APIView):
    """Per-stage counts with a rate and an ETA; the dashboard polls this."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=ProgressSerializer)
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        return Response(ProgressSerializer(dataset_progress(dataset)).data)


class DatasetAuditView(generics.ListAPIView):
    """Who started what on the dataset, newest first (paginated, as the schema says)."""

    permission_classes = [IsAuthenticated, IsOrganizer]
    serializer_class = AuditEntrySerializer
    pagination_class = StrictPageNumberPagination

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation runs without a user
            return AuditEntry.objects.none()
        dataset = organizer_dataset(self.request.user, self.kwargs["dataset_id"])
        return AuditEntry.objects.filter(dataset=dataset).select_related("actor").order_by("-id")


class CostRowSerializer(serializers.Serializer):
    stage = serializers.CharField(help_text="Question kind (image_verify, hierarchy, ...) or task kind.")
    wnid = serializers.CharField(allow_blank=True)
    tasks = serializers.IntegerField()
    answers = serializers.IntegerField()
    worker_seconds = serializers.FloatField()
    decided_questions = serializers.IntegerField()
    cost = serializers.FloatField()


class CostTotalsSerializer(serializers.Serializer):
    tasks = serializers.IntegerField()
    answers = serializers.IntegerField()
    worker_seconds = serializers.FloatField()
    cost = serializers.FloatField()


class CostAlternativesSerializer(serializers.Serializer):
    fixed_majority_5 = serializers.FloatField(help_text="Every decided question at exactly five answers.")
    multilabel_hierarchical = serializers.FloatField(help_text="What Algorithm 1's questions cost.")
    multilabel_flat_per_class = serializers.FloatField(
        help_text="Every multi-labelled image asked about every class, at the observed answers per question."
    )
    flat_votes_per_question = serializers.FloatField()


class SpendSerializer(serializers.Serializer):
    provider = serializers.CharField(help_text="The provider that paid (mturk).")
    assignments_approved = serializers.IntegerField()
    assignments_rejected = serializers.IntegerField()
    rewards = serializers.DecimalField(max_digits=12, decimal_places=2, help_text="Rewards actually paid.")
    bonuses = serializers.DecimalField(max_digits=12, decimal_places=2, help_text="Bonuses actually paid.")
    fees = serializers.DecimalField(max_digits=12, decimal_places=2, help_text="The provider's fees on both.")
    total = serializers.DecimalField(max_digits=12, decimal_places=2)
    estimated = serializers.DecimalField(
        max_digits=12, decimal_places=2, help_text="What the published HITs were estimated to cost with fees."
    )
    budget = serializers.DecimalField(max_digits=12, decimal_places=2, allow_null=True)


class ReviewerTimeSerializer(serializers.Serializer):
    decided_items = serializers.IntegerField(help_text="Review items reviewers decided.")
    open_items = serializers.IntegerField(help_text="Review items waiting for a reviewer (or leased to one).")
    seconds_per_item = serializers.IntegerField(help_text="A reviewer's time per item (a server setting).")
    minutes_spent = serializers.FloatField(help_text="Decided items at that time each.")
    minutes_expected = serializers.FloatField(help_text="Open items at that time each: still to come.")
    minutes_total = serializers.FloatField()


class LedgerSerializer(serializers.Serializer):
    currency = serializers.CharField()
    fee_fraction = serializers.FloatField()
    rows = CostRowSerializer(many=True)
    totals = CostTotalsSerializer()
    alternatives = CostAlternativesSerializer()
    spend = SpendSerializer(
        many=True, help_text="Money providers paid, in US$ (empty: none moved through us)."
    )
    reviewers = ReviewerTimeSerializer(
        help_text="In-house reviewers' time in minutes (not priced: they are not paid per item)."
    )


class CostSettingsSerializer(serializers.ModelSerializer):
    rewards = serializers.DictField(child=serializers.FloatField(min_value=0, max_value=100), required=False)
    fee_fraction = serializers.FloatField(min_value=0, max_value=5, required=False)

    class Meta:
        model = CostSettings
        fields = ["currency", "default_reward", "rewards", "fee_fraction"]
        extra_kwargs = {"default_reward": {"min_value": 0}}

    def validate_currency(self, currency):
        if len(currency) != 3 or not currency.isascii() or not currency.isalpha():
            raise serializers.ValidationError("a three-letter currency code such as USD or EUR")
        return currency.upper()

    def validate_rewards(self, rewards):
        known = stage_names()
        unknown = sorted(set(rewards) - set(known))
        if unknown:
            raise serializers.ValidationError(
                f"unknown stage {', '.join(unknown)}; rewards are set per stage: {', '.join(known)}"
            )
        return rewards


class DatasetCostView(APIView):
    """The cost ledger: tasks, answers and worker-seconds per stage and synset, priced at the dataset's rewards
    plus the provider's fee, beside what fixed majority-5 voting and flat per-class questions would have cost,
    what providers actually paid (rewards, bonuses and fees of settled MTurk assignments), and the in-house
    reviewers' minutes on the dataset's review items."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=LedgerSerializer)
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        return Response(LedgerSerializer(dataset_ledger(dataset)).data)


class CostSettingsView(APIView):
    """The prices the ledger uses: reward per answer by stage, a default reward, the provider's fee."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=CostSettingsSerializer)
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        return Response(CostSettingsSerializer(CostSettings.for_dataset(dataset.pk)).data)

    @extend_schema(request=CostSettingsSerializer, responses=CostSettingsSerializer)
    def patch(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        form = CostSettingsSerializer(CostSettings.for_dataset(dataset.pk), data=request.data, partial=True)
        form.is_valid(raise_exception=True)
        with transaction.atomic():
            form.save(dataset=dataset)
            audit_record(
                dataset=dataset, actor=request.user, action="cost_settings.change", parameters=request.data
            )
        return Response(form.data)


class StallSerializer(serializers.Serializer):
    code = serializers.ChoiceField(choices=["starved_questions", "calibration_short"])
    count = serializers.IntegerField(help_text="Questions held up.")
    message = serializers.CharField(help_text="Why work stopped, in words.")
    stages = serializers.ListField(child=serializers.CharField(), help_text="Progress stages it holds up.")
    actions = serializers.ListField(
        child=serializers.CharField(),
        help_text="What the organizer can do: settle (POST stalls/settle), lower_calibration_votes (PATCH "
        "consensus-settings), invite (People page).",
    )
    crowd = serializers.IntegerField(
        required=False, help_text="Distinct workers who have worked in the dataset."
    )


class StallsSerializer(serializers.Serializer):
    stalls = StallSerializer(many=True)


class StallsSettledSerializer(StallsSerializer):
    settled = serializers.DictField(child=serializers.IntegerField(), help_text="Decision -> questions.")


class DatasetStallsView(APIView):
    """Why the dataset's work stopped, if it did: questions no worker of the dataset can take any more, and
    calibration that needs more distinct workers than have worked in it (`organize/stalls.py`)."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=StallsSerializer)
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        return Response(StallsSerializer({"stalls": dataset_stalls(dataset)}).data)


class DatasetStallsSettleView(APIView):
    """Settle now the questions no worker of the dataset can take: each is decided with the votes it has, as at
    the vote cap (accepted or rejected where the dataset's precision guarantee holds, else sent to review)."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(request=None, responses=StallsSettledSerializer)
    def post(self, request, dataset_id: int):

        dataset = organizer_dataset(request.user, dataset_id)
        report = starved_settle(dataset_id=dataset.pk, idle_seconds=0)
        audit_record(
            dataset=dataset,
            actor=request.user,
            action="stalls.settle",
            parameters={},
            result={"settled": report.settled},
        )
        body = {"settled": report.settled, "stalls": dataset_stalls(dataset)}
        return Response(StallsSettledSerializer(body).data)


class ChecklistStepSerializer(serializers.Serializer):
    key = serializers.ChoiceField(choices=["images", "classes", "gold", "start", "crowd"])
    label = serializers.CharField()
    done = serializers.BooleanField()
    optional = serializers.BooleanField()
    href = serializers.CharField(help_text="The page where the step is done.")


class ChecklistSerializer(serializers.Serializer):
    steps = ChecklistStepSerializer(many=True)


class DatasetChecklistView(APIView):
    """A new dataset's first steps (upload, classes, gold, start, workers), each ticked off from the data."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(responses=ChecklistSerializer)
    def get(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        return Response(ChecklistSerializer({"steps": dataset_checklist(dataset)}).data)


class DatasetDeletedSerializer(serializers.Serializer):
    deleted = serializers.IntegerField(help_text="The deleted dataset's id.")
    images = serializers.IntegerField(help_text="Images deleted with it.")


class DatasetDeleteView(APIView):
    """Delete a dataset nobody has worked on, with its images and setup (`organize/dataset_delete.py`); a
    dataset whose tasks were ever handed out is kept (409, saying why)."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(request=None, responses=DatasetDeletedSerializer)
    def post(self, request, dataset_id: int):
        dataset = organizer_dataset(request.user, dataset_id)
        try:
            images = dataset_delete(dataset)
        except DatasetInUse as exc:
            raise Conflict(f"{dataset.name} cannot be deleted: {exc}") from None
        return Response(DatasetDeletedSerializer({"deleted": dataset_id, "images": images}).data)


class DatasetArchivedSerializer(serializers.Serializer):
    dataset = serializers.IntegerField()
    archived_at = serializers.DateTimeField(allow_null=True, help_text="Null: the dataset is active.")


class DatasetArchiveView(APIView):
    """Archive the dataset (`organize/dataset_archive.py`): it leaves the active list, nothing of it is handed
    out any more, and all it holds stays (labels, answers, exports). Archiving it again changes nothing."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(request=None, responses=DatasetArchivedSerializer)
    def post(self, request, dataset_id: int):
        dataset = dataset_archive(organizer_dataset(request.user, dataset_id), actor=request.user)
        return Response(
            DatasetArchivedSerializer({"dataset": dataset.pk, "archived_at": dataset.archived_at}).data
        )


class DatasetRestoreView(APIView):
    """Restore an archived dataset: back in the active list, its tasks and review items handed out again."""

    permission_classes = [IsAuthenticated, IsOrganizer]

    @extend_schema(request=None, responses=DatasetArchivedSerializer)
    def post(self, request, dataset_id: int):
        dataset = dataset_restore(organizer_dataset(request.user, dataset_id), actor=request.user)
        return Response(
            DatasetArchivedSerializer({"dataset": dataset.pk, "archived_at": dataset.archived_at}).data
        )
