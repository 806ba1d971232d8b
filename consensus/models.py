"""Binary questions, their votes and decisions, per-(question kind, concept) calibration tables, and each
dataset's consensus settings (ILSVRC §3.1.3, dynamic consensus)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from consensus.calibration import DEFAULT_CAP
from consensus.stopping import DEFAULT_REJECT_ERROR, DEFAULT_TARGET_PRECISION, Decision


class QuestionKind(models.TextChoices):
    IMAGE_VERIFY = "image_verify", "Does this image show CONCEPT?"
    BOX_QUALITY = "box_quality", "Is this box tight around one whole CONCEPT?"
    BOX_COVERAGE = "box_coverage", "Is every CONCEPT in this image boxed?"
    HIERARCHY = "hierarchy", "Is there a CONCEPT in this image? (hierarchy question)"
    BINARY_VOTE = "binary_vote", "Does this image show CONCEPT? (plain vote, fixed majority)"


class Estimator(models.TextChoices):
    DYNAMIC = "dynamic", "Calibration table per (question kind, concept)"
    WEIGHTED = "weighted", "Reliability-weighted (Dawid-Skene) posterior"
    COUNT = "count", "Vote counts under the question's own count rule"


# A dataset chooses between the calibrated estimators; COUNT belongs to questions carrying their own rule.
SETTINGS_ESTIMATORS = [(value, label) for value, label in Estimator.choices if value != Estimator.COUNT]


# The second vote cap a dataset starts with (issue 33): a reviewer's minute costs far more than a crowd vote,
# so an image question undecided at the vote cap asks up to 8 of the kind's most reliable workers first. Measured
# on DET 200 (80 images, 40 workers, seed 2): reviewer items 22.5 per 100 images without, none with it.
DEFAULT_EXTENSION_CAP = 20


class ConsensusSettings(models.Model):
    """How a dataset's binary questions are decided. A dataset without a row uses the defaults."""

    dataset = models.OneToOneField(
        "annotation.Dataset", on_delete=models.CASCADE, related_name="consensus_settings"
    )
    estimator = models.CharField(max_length=16, choices=SETTINGS_ESTIMATORS, default=Estimator.WEIGHTED)
    target_precision = models.FloatField(
        default=DEFAULT_TARGET_PRECISION, help_text="Accept when P(positive) reaches this."
    )
    reject_error = models.FloatField(
        default=DEFAULT_REJECT_ERROR, help_text="Reject when P(positive) falls to this."
    )
    vote_cap = models.PositiveSmallIntegerField(
        default=DEFAULT_CAP, help_text="Votes after which an undecided question goes to review."
    )
    extension_cap = models.PositiveSmallIntegerField(
        default=DEFAULT_EXTENSION_CAP,
        help_text="Votes a question still undecided at the vote cap may collect from the workers most reliable on "
        "its kind before it is settled or sent to review (0, or at most the vote cap: no extension).",
    )
    calibration_votes = models.PositiveSmallIntegerField(
        default=10, help_text="Votes each calibration question collects before the table is built."
    )
    calibration_fraction = models.FloatField(default=0.10)
    calibration_min = models.PositiveIntegerField(default=20)
    calibration_max = models.PositiveIntegerField(default=100)
    favour_yes = models.BooleanField(
        default=False, help_text="Reject only as surely as accept (always on for hierarchy questions)."
    )
    seed = models.PositiveIntegerField(default=0, help_text="Seeds the choice of calibration images.")

    class Meta:
        verbose_name_plural = "consensus settings"
        constraints = [
            models.CheckConstraint(
                condition=Q(target_precision__gt=0.5) & Q(target_precision__lt=1.0),
                name="consensus_target_precision_range",
            ),
            models.CheckConstraint(
                condition=Q(reject_error__gt=0.0) & Q(reject_error__lt=0.5),
                name="consensus_reject_error_range",
            ),
            models.CheckConstraint(condition=Q(vote_cap__gte=1), name="consensus_vote_cap_positive"),
            models.CheckConstraint(
                condition=Q(calibration_votes__gte=1) & Q(calibration_votes__lte=models.F("vote_cap")),
                name="consensus_calibration_votes_within_cap",
            ),
        ]

    def __str__(self) -> str:
        return f"consensus settings of dataset {self.dataset_id}"

    @classmethod
    def for_dataset(cls, dataset_id: int) -> ConsensusSettings:
        """The dataset's settings, or unsaved defaults when it has none."""
        found = cls.objects.filter(dataset_id=dataset_id).first()
        return found if found is not None else cls(dataset_id=dataset_id)


class QuestionRole(models.TextChoices):
    CALIBRATION = "calibration", "Calibration"
    PRODUCTION = "production", "Production"


class QuestionState(models.TextChoices):
    WAITING = "waiting", "Waiting for its calibration table"
    OPEN = "open", "Collecting votes"
    ACCEPTED = "accepted", "Accepted (yes)"
    REJECTED = "rejected", "Rejected (no)"
    REVIEW = "review", "Sent to review (ambiguous)"
    UNANSWERED = "unanswered", "Closed without an answer (a tie its rule does not send to review)"


DECIDED_STATES = (
    QuestionState.ACCEPTED,
    QuestionState.REJECTED,
    QuestionState.REVIEW,
    QuestionState.UNANSWERED,
)


class Verdict(models.TextChoices):
    """A final decision of the stopping rule (its values are consensus.stopping.Decision's)."""

    ACCEPT = Decision.ACCEPT.value, "Accept"
    REJECT = Decision.REJECT.value, "Reject"
    REVIEW = Decision.REVIEW.value, "Review"
    # A count rule's REVIEW (a fixed majority's tie at the cap) where the rule says to close the question
    # without an answer rather than ask a person (the plain vote kind).
    UNANSWERED = "unanswered", "Closed unanswered"
    # Not a stopping-rule verdict: a decided question went back to collecting votes after some of its votes
    # were voided (consensus.voiding).
    REOPENED = "reopened", "Reopened"


VERDICT_STATE = {
    Verdict.ACCEPT: QuestionState.ACCEPTED,
    Verdict.REJECT: QuestionState.REJECTED,
    Verdict.REVIEW: QuestionState.REVIEW,
    Verdict.UNANSWERED: QuestionState.UNANSWERED,
}


class Question(models.Model):
    """One binary question about a subject, answered by votes from distinct workers until the stopping rule
    decides it. `yes_count`, `no_count` and `p` cache what the Vote rows say; they are written in the same
    transaction as each vote, with the question row locked."""

    kind = models.CharField(max_length=32, choices=QuestionKind.choices)
    dataset = models.ForeignKey("annotation.Dataset", on_delete=models.PROTECT, related_name="questions")
    concept = models.ForeignKey("hierarchy.Concept", on_delete=models.PROTECT, related_name="questions")
    image = models.ForeignKey(
        "annotation.Image", null=True, blank=True, on_delete=models.PROTECT, related_name="questions"
    )
    box = models.ForeignKey(
        "annotation.Box", null=True, blank=True, on_delete=models.PROTECT, related_name="questions"
    )
    subject = models.JSONField(
        default=dict, blank=True, help_text="Other references (e.g. a hierarchy node)."
    )
    round = models.PositiveIntegerField(
        default=0,
        help_text="Tells apart questions asked again about the same subject over time (a box job asks coverage "
        "after every accepted box: round 1, 2, ...); 0 for questions asked once.",
    )
    rule = models.JSONField(
        default=dict,
        blank=True,
        help_text="The question's own count policy (consensus.stopping.rule_of: a fixed majority, first-to-k or a "
        "margin); empty: the dataset's calibrated policy (dynamic or weighted, favour-yes for hierarchy).",
    )
    role = models.CharField(max_length=16, choices=QuestionRole.choices, default=QuestionRole.PRODUCTION)
    state = models.CharField(max_length=16, choices=QuestionState.choices, default=QuestionState.OPEN)
    min_votes = models.PositiveSmallIntegerField(
        default=1, help_text="Votes collected before the stopping rule is first consulted."
    )
    yes_count = models.PositiveIntegerField(default=0)
    no_count = models.PositiveIntegerField(default=0)
    p = models.FloatField(null=True, blank=True, help_text="P(positive) after the latest vote, when known.")
    task = models.OneToOneField(
        "annotation.Task", null=True, blank=True, on_delete=models.PROTECT, related_name="question"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            # One question per subject, kind and round in a dataset: queuing verification twice asks nothing
            # twice, while a box job's coverage question is asked again in a new round after each accepted box.
            models.UniqueConstraint(
                fields=["dataset", "kind", "concept", "image", "round"],
                condition=Q(box__isnull=True),
                name="question_unique_image_subject_round",
            ),
            # ... but only one undecided coverage question per (image, concept) at a time.
            models.UniqueConstraint(
                fields=["dataset", "kind", "concept", "image"],
                condition=Q(box__isnull=True, kind="box_coverage", state__in=["waiting", "open"]),
                name="question_one_open_coverage_per_image",
            ),
            models.UniqueConstraint(
                fields=["dataset", "kind", "concept", "box"],
                condition=Q(box__isnull=False),
                name="question_unique_box_subject",
            ),
        ]
        indexes = [
            models.Index(fields=["kind", "concept", "role", "state"], name="question_calibration_idx"),
            models.Index(fields=["dataset", "concept", "state"], name="question_progress_idx"),
            # The organizer's progress counts the questions decided in the last minutes (rate and ETA).
            models.Index(fields=["dataset", "kind", "decided_at"], name="question_decided_recent_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} question {self.pk} ({self.state})"

    @property
    def n_votes(self) -> int:
        return self.yes_count + self.no_count

    @property
    def is_decided(self) -> bool:
        return self.state in DECIDED_STATES


class Vote(models.Model):
    """One worker's yes/no on one question. Append-only."""

    question = models.ForeignKey(Question, on_delete=models.PROTECT, related_name="votes")
    worker = models.ForeignKey("crowd.Worker", on_delete=models.PROTECT, related_name="votes")
    answer = models.BooleanField()
    assignment = models.OneToOneField(
        "annotation.Assignment", null=True, blank=True, on_delete=models.PROTECT, related_name="vote"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Set once, when its worker takes the answer back within the undo window (consensus.voiding.vote_withdraw;
    # the vote is voided too, so every count skips it): their new answer is a new vote.
    withdrawn = models.BooleanField(default=False)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["question", "worker"],
                condition=Q(withdrawn=False),
                name="vote_one_per_worker_per_question",
            )
        ]

    def __str__(self) -> str:
        return f"vote {self.pk}: worker {self.worker_id} says {'yes' if self.answer else 'no'}"


class VoteVoid(models.Model):
    """A vote that no longer counts (its worker was found unreliable, or took it back at once). The vote row stays; this fact is added
    once and never removed. Counts, estimators and calibration tables skip voided votes."""

    vote = models.OneToOneField(Vote, on_delete=models.PROTECT, related_name="void")
    reason = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"vote {self.vote_id} void: {self.reason}"


class CalibrationTable(models.Model):
    """A confidence table P(positive | a yes, b no) for one (question kind, concept), built from every complete
    calibration question of that pair in any dataset. The newest row is the one in use; older rows stay."""

    kind = models.CharField(max_length=32, choices=QuestionKind.choices)
    concept = models.ForeignKey(
        "hierarchy.Concept", on_delete=models.PROTECT, related_name="calibration_tables"
    )
    table = models.JSONField(help_text="consensus.calibration.ConfidenceTable.to_dict()")
    n_images = models.PositiveIntegerField()
    n_votes = models.PositiveIntegerField()
    method = models.CharField(max_length=100)
    last_vote_id = models.BigIntegerField(
        help_text="The newest vote the table saw: rebuilding is idempotent."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["kind", "concept", "-id"], name="calibration_newest_idx")]

    def __str__(self) -> str:
        return f"{self.kind} table for concept {self.concept_id} ({self.n_images} images)"


class QuestionDecision(models.Model):
    """The stopping rule's verdict on a question, with what it was based on. Append-only: a question reopened
    for more votes (a calibration question the new table could not decide) keeps its earlier rows."""

    question = models.ForeignKey(Question, on_delete=models.PROTECT, related_name="decisions")
    decision = models.CharField(max_length=16, choices=Verdict.choices)
    p = models.FloatField(null=True, blank=True)
    yes_count = models.PositiveIntegerField()
    no_count = models.PositiveIntegerField()
    estimator = models.CharField(max_length=16, choices=Estimator.choices)
    table = models.ForeignKey(
        CalibrationTable, null=True, blank=True, on_delete=models.PROTECT, related_name="decisions"
    )
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The reviewer who decided a question the stopping rule sent to review; empty for the rule's "
        "own decisions.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"question {self.question_id}: {self.decision}"


class QuestionTally(models.Model):
    """Questions asked and decided (accepted, rejected or sent to review) per dataset, kind and concept, and
    of the decided production questions their number, votes and those in review, kept exact by
    `consensus.tally` in the transactions that create, decide, reopen and recount questions (adding UPDATEs), so
    the organizer's progress, cost ledger and quality page read these rows instead of counting every question.
    `manage.py counters_recount` rebuilds them."""

    dataset = models.ForeignKey("annotation.Dataset", on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=32, choices=QuestionKind.choices)
    concept = models.ForeignKey("hierarchy.Concept", on_delete=models.PROTECT, related_name="+")
    questions = models.BigIntegerField(default=0)
    decided = models.BigIntegerField(default=0)
    production_decided = models.BigIntegerField(
        default=0, help_text="Production questions accepted, rejected or in review."
    )
    production_votes = models.BigIntegerField(default=0, help_text="Their yes and no votes.")
    production_review = models.BigIntegerField(default=0, help_text="Those of them in review.")

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "kind", "concept"], name="question_tally_unique_key")
        ]

    def __str__(self) -> str:
        return f"{self.kind} questions of dataset {self.dataset_id} about {self.concept_id}"
