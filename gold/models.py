"""Gold items (binary questions with a known answer), how each was served and answered, worker scores,
qualification, blocks and payment recommendations. Every fact is a row added once; scores are a cache."""

from __future__ import annotations

from django.conf import settings as django_settings
from django.db import models
from django.db.models import Q

from consensus.models import QuestionKind
from gold import scoring


class BlockRule(models.TextChoices):
    """Which evidence blocks a worker: one sequential test over gold answers and agreement with decided
    questions (gold.sprt), or the Beta posterior of gold answers alone (gold.scoring, the rule before it)."""

    SEQUENTIAL = "sequential", "Gold and agreement with decided questions (sequential test)"
    POSTERIOR = "posterior", "Gold answers only (Beta posterior)"


class GoldSettings(models.Model):
    """A dataset's gold policy. A dataset without a row uses the defaults."""

    dataset = models.OneToOneField(
        "annotation.Dataset", on_delete=models.CASCADE, related_name="gold_settings"
    )
    rate = models.FloatField(default=0.1, help_text="Share of a qualified worker's tasks that are gold.")
    qualification_size = models.PositiveSmallIntegerField(
        default=scoring.DEFAULT_QUALIFICATION_SIZE,
        help_text="Gold items in one qualification attempt of a kind, each answered once (0: no qualification).",
    )
    qualification_pass = models.PositiveSmallIntegerField(
        default=scoring.DEFAULT_QUALIFICATION_PASS,
        help_text="Right answers out of `qualification_size` that qualify; a coin-flipper must pass under 1%.",
    )
    qualification_attempts = models.PositiveSmallIntegerField(
        default=scoring.DEFAULT_QUALIFICATION_ATTEMPTS, help_text="Attempts per kind, each on fresh items."
    )
    qualification_cooldown = models.PositiveIntegerField(
        default=scoring.DEFAULT_QUALIFICATION_COOLDOWN,
        help_text="Seconds a failed attempt waits for a retry.",
    )
    prior_a = models.FloatField(default=scoring.DEFAULT_PRIOR[0])
    prior_b = models.FloatField(default=scoring.DEFAULT_PRIOR[1])
    block_threshold = models.FloatField(default=scoring.DEFAULT_BLOCK_THRESHOLD)
    block_confidence = models.FloatField(default=scoring.DEFAULT_BLOCK_CONFIDENCE)
    block_min_answers = models.PositiveSmallIntegerField(default=scoring.DEFAULT_MIN_ANSWERS)
    block_rule = models.CharField(
        max_length=16,
        choices=BlockRule.choices,
        default=BlockRule.SEQUENTIAL,
        help_text="What blocks a worker: the sequential test on every answer, or the posterior on gold alone "
        "(block_threshold, block_confidence, block_min_answers).",
    )
    draw_block_threshold = models.FloatField(
        default=scoring.DEFAULT_DRAW_BLOCK_THRESHOLD,
        help_text="A drawer is blocked when sure the quality question accepts fewer of their boxes than this.",
    )
    bonus_lower = models.FloatField(
        default=scoring.DEFAULT_BONUS_LOWER, help_text="Bonus when the accuracy's lower bound is above this."
    )
    seed = models.PositiveIntegerField(default=0, help_text="Seeds when gold is served.")

    class Meta:
        verbose_name_plural = "gold settings"
        constraints = [
            models.CheckConstraint(condition=Q(rate__gte=0.0) & Q(rate__lt=1.0), name="gold_rate_range"),
            models.CheckConstraint(
                condition=Q(qualification_pass__lte=models.F("qualification_size")),
                name="gold_qualification_pass_within_size",
            ),
        ]

    def __str__(self) -> str:
        return f"gold settings of dataset {self.dataset_id}"

    @classmethod
    def for_dataset(cls, dataset_id: int) -> GoldSettings:
        found = cls.objects.filter(dataset_id=dataset_id).first()
        return found if found is not None else cls(dataset_id=dataset_id)

    @property
    def prior(self) -> scoring.Prior:
        return scoring.Prior(self.prior_a, self.prior_b)

    @property
    def rule(self) -> scoring.BlockRule:
        return scoring.BlockRule(self.block_threshold, self.block_confidence, self.block_min_answers)

    @property
    def draw_rule(self) -> scoring.BlockRule:
        """The same rule on the share of a drawer's boxes the quality question accepts."""
        return scoring.BlockRule(self.draw_block_threshold, self.block_confidence, self.block_min_answers)


class ScoreKind(models.TextChoices):
    """What a worker's score is about: gold answers of one question kind, all their gold answers in the dataset
    (the evidence blocking reads), or the quality verdicts on the boxes they drew."""

    IMAGE_VERIFY = QuestionKind.IMAGE_VERIFY.value, QuestionKind.IMAGE_VERIFY.label
    BOX_QUALITY = QuestionKind.BOX_QUALITY.value, QuestionKind.BOX_QUALITY.label
    BOX_COVERAGE = QuestionKind.BOX_COVERAGE.value, QuestionKind.BOX_COVERAGE.label
    HIERARCHY = QuestionKind.HIERARCHY.value, QuestionKind.HIERARCHY.label
    ALL = "all", "Every gold answer in the dataset"
    SEQUENTIAL = "sequential", "Gold and agreement with decided questions (sequential test)"
    BOX_DRAW = "box_draw", "Quality verdicts on the boxes drawn"


class GoldSource(models.TextChoices):
    ORGANIZER = "organizer", "Created by an organizer"
    IMPORT = "import", "Imported from CSV"
    PROMOTED = "promoted", "Promoted from a confirmed decision"


class GoldItem(models.Model):
    """A binary question whose answer is known. Served to workers as an ordinary `question` task: `task`, made
    when the item is added, by the code path every question's task is made by, in gold's reserved pool."""

    dataset = models.ForeignKey("annotation.Dataset", on_delete=models.PROTECT, related_name="gold_items")
    kind = models.CharField(max_length=32, choices=QuestionKind.choices)
    concept = models.ForeignKey("hierarchy.Concept", on_delete=models.PROTECT, related_name="gold_items")
    image = models.ForeignKey("annotation.Image", on_delete=models.PROTECT, related_name="gold_items")
    box = models.ForeignKey(
        "annotation.Box", null=True, blank=True, on_delete=models.PROTECT, related_name="gold_items"
    )
    answer = models.BooleanField()
    explanation = models.CharField(
        max_length=300, blank=True, help_text="Shown after a wrong qualification answer."
    )
    source = models.CharField(max_length=16, choices=GoldSource.choices, default=GoldSource.ORGANIZER)
    created_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    task = models.OneToOneField(
        "annotation.Task", null=True, blank=True, on_delete=models.PROTECT, related_name="gold_item"
    )

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["dataset", "kind", "concept", "image"],
                condition=Q(box__isnull=True),
                name="gold_unique_image_subject",
            ),
            models.UniqueConstraint(
                fields=["dataset", "kind", "concept", "box"],
                condition=Q(box__isnull=False),
                name="gold_unique_box_subject",
            ),
        ]
        indexes = [models.Index(fields=["dataset", "kind"], name="gold_item_pool_idx")]

    def __str__(self) -> str:
        return f"gold {self.kind} item {self.pk} ({'yes' if self.answer else 'no'})"


class GoldTally(models.Model):
    """How many gold items a dataset has of one question kind, kept with the items (gold.items) so that a lease
    learns which pairs need qualification without counting every tenant's items (gold.serving.gold_context);
    `manage.py counters_recount` rebuilds it from the items."""

    dataset = models.ForeignKey("annotation.Dataset", on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=32, choices=QuestionKind.choices)
    items = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["dataset", "kind"], name="gold_tally_unique")]

    def __str__(self) -> str:
        return f"{self.items} gold {self.kind} items in dataset {self.dataset_id}"


class Purpose(models.TextChoices):
    QUALIFICATION = "qualification", "Qualification"
    EMBEDDED = "embedded", "Embedded in production"


class GoldServing(models.Model):
    """A gold item answered by one worker: the lease of its pool task that was answered, and why it was served
    (recorded with the answer; a lease that ended unanswered still keeps the item from that worker)."""

    item = models.ForeignKey(GoldItem, on_delete=models.PROTECT, related_name="servings")
    worker = models.ForeignKey("crowd.Worker", on_delete=models.PROTECT, related_name="gold_servings")
    task = models.ForeignKey("annotation.Task", on_delete=models.PROTECT, related_name="gold_servings")
    assignment = models.OneToOneField(
        "annotation.Assignment", null=True, blank=True, on_delete=models.PROTECT, related_name="gold_serving"
    )
    purpose = models.CharField(max_length=16, choices=Purpose.choices)
    attempt = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="The qualification attempt (1, 2, ...) this item belongs to."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            # A worker never sees the same gold item twice.
            models.UniqueConstraint(fields=["item", "worker"], name="gold_serving_once_per_worker")
        ]

    def __str__(self) -> str:
        return f"gold item {self.item_id} to worker {self.worker_id} ({self.purpose})"


class GoldAnswer(models.Model):
    """A worker's answer to a gold item, checked against the known answer. Append-only."""

    serving = models.OneToOneField(GoldServing, on_delete=models.PROTECT, related_name="answer")
    assignment = models.OneToOneField("annotation.Assignment", on_delete=models.PROTECT, related_name="gold")
    worker = models.ForeignKey("crowd.Worker", on_delete=models.PROTECT, related_name="gold_answers")
    dataset = models.ForeignKey("annotation.Dataset", on_delete=models.PROTECT, related_name="+")
    kind = models.CharField(max_length=32, choices=QuestionKind.choices)
    correct = models.BooleanField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["worker", "dataset", "kind"], name="gold_answer_worker_idx")]

    def __str__(self) -> str:
        return f"gold answer {self.pk} by worker {self.worker_id} ({'right' if self.correct else 'wrong'})"


class WorkerScore(models.Model):
    """The posterior summary of one worker in one dataset on one ScoreKind (a question kind, all gold answers,
    or drawing), rewritten in the transaction of each gold answer or box verdict (a cache of those rows).
    Qualification state lives on the question-kind rows."""

    worker = models.ForeignKey("crowd.Worker", on_delete=models.PROTECT, related_name="gold_scores")
    dataset = models.ForeignKey("annotation.Dataset", on_delete=models.PROTECT, related_name="+")
    kind = models.CharField(max_length=32, choices=ScoreKind.choices)
    answered = models.PositiveIntegerField(default=0)
    correct = models.PositiveIntegerField(default=0)
    mean = models.FloatField()
    lower = models.FloatField()
    p_below = models.FloatField(
        help_text="P(accuracy < the block threshold); on a sequential row, Lambda / (1 + Lambda): P(the answers "
        "carry no information) at even prior odds."
    )
    llr = models.FloatField(
        null=True, blank=True, help_text="Sequential rows: log Lambda of the test (blocked at log A)."
    )
    qualified = models.BooleanField(default=False)
    qualification_answered = models.PositiveIntegerField(default=0)
    qualification_failed = models.PositiveSmallIntegerField(default=0, help_text="Failed attempts.")
    qualification_retry_at = models.DateTimeField(
        null=True, blank=True, help_text="When the worker may start the next attempt after failing one."
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["dataset", "kind", "worker"]
        constraints = [
            models.UniqueConstraint(fields=["worker", "dataset", "kind"], name="worker_score_unique")
        ]

    def __str__(self) -> str:
        return f"worker {self.worker_id} on {self.kind}: {self.correct}/{self.answered}"


class Block(models.Model):
    """A worker blocked from every task of a dataset, with the evidence that blocked them (`kind`: all their gold
    answers, or the verdicts on their boxes). Added once, never removed. Rows from before blocking was per
    dataset may name a question kind; any row blocks the whole dataset."""

    worker = models.ForeignKey("crowd.Worker", on_delete=models.PROTECT, related_name="gold_blocks")
    dataset = models.ForeignKey("annotation.Dataset", on_delete=models.PROTECT, related_name="+")
    kind = models.CharField(max_length=32, choices=ScoreKind.choices)
    answered = models.PositiveIntegerField()
    correct = models.PositiveIntegerField()
    p_below = models.FloatField()
    llr = models.FloatField(null=True, blank=True, help_text="Sequential blocks: log Lambda when blocked.")
    repair = models.JSONField(default=dict, help_text="What voiding their votes did to the questions.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["worker", "dataset", "kind"], name="block_once")]

    def __str__(self) -> str:
        return f"worker {self.worker_id} blocked from dataset {self.dataset_id} ({self.kind})"


class DrawVerdict(models.Model):
    """The quality question's verdict on a drawn box, counted for (accepted) or against (rejected) its drawer.
    Added once per box, when the box pipeline applies the verdict."""

    box = models.OneToOneField("annotation.Box", on_delete=models.PROTECT, related_name="draw_verdict")
    worker = models.ForeignKey("crowd.Worker", on_delete=models.PROTECT, related_name="draw_verdicts")
    dataset = models.ForeignKey("annotation.Dataset", on_delete=models.PROTECT, related_name="+")
    accepted = models.BooleanField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["worker", "dataset"], name="draw_verdict_worker_idx")]

    def __str__(self) -> str:
        return f"box {self.box_id} by worker {self.worker_id}: {'accepted' if self.accepted else 'rejected'}"


class Recommendation(models.TextChoices):
    APPROVE = "approve", "Approve"
    REJECT = "reject", "Reject"
    BONUS = "bonus", "Approve with a bonus"


class PaymentDecision(models.Model):
    """A pay recommendation for one assignment, with its reason. Append-only: the newest row is current."""

    assignment = models.ForeignKey("annotation.Assignment", on_delete=models.PROTECT, related_name="payments")
    worker = models.ForeignKey("crowd.Worker", on_delete=models.PROTECT, related_name="+")
    dataset = models.ForeignKey("annotation.Dataset", on_delete=models.PROTECT, related_name="+")
    recommendation = models.CharField(max_length=16, choices=Recommendation.choices)
    reason = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["dataset", "worker"], name="payment_dataset_worker_idx")]

    def __str__(self) -> str:
        return f"assignment {self.assignment_id}: {self.recommendation}"


class BlockAction(models.Model):
    """An organizer blocking (or unblocking) a worker in a dataset, with a reason. Append-only: the latest row of
    a (worker, dataset) says whether the organizer's block stands. Independent of the gold `Block`, which the
    evidence adds and nobody removes."""

    worker = models.ForeignKey("crowd.Worker", on_delete=models.PROTECT, related_name="block_actions")
    dataset = models.ForeignKey("annotation.Dataset", on_delete=models.PROTECT, related_name="+")
    blocked = models.BooleanField()
    reason = models.CharField(max_length=500)
    actor = models.ForeignKey(django_settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["worker", "dataset", "-id"], name="block_action_latest_idx")]

    def __str__(self) -> str:
        verb = "blocked" if self.blocked else "unblocked"
        return f"worker {self.worker_id} {verb} in dataset {self.dataset_id} by user {self.actor_id}"
