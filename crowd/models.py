"""Worker identities: who answers micro-tasks, wherever they come from."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models


class WorkerSource(models.TextChoices):
    INHOUSE = "inhouse", "In-house"
    MTURK = "mturk", "Mechanical Turk"
    EXTERNAL = "external", "External link"
    SIMULATED = "simulated", "Simulated"


class Worker(models.Model):
    """A crowd worker. Every worker has a Django user (external workers get one with an unusable password),
    so the API authenticates everyone the same way; `external_id` holds e.g. the MTurk WorkerId."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="worker")
    source = models.CharField(max_length=16, choices=WorkerSource.choices, default=WorkerSource.INHOUSE)
    external_id = models.CharField(max_length=128, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["source", "external_id"],
                condition=~models.Q(external_id=""),
                name="worker_unique_external_id",
            )
        ]

    def __str__(self) -> str:
        return f"{self.source}:{self.external_id or self.user_id}"


class InvitationRole(models.TextChoices):
    """The roles an organizer may hand out for a dataset (the values are `config.roles` group names)."""

    WORKER = "workers", "Worker"
    REVIEWER = "reviewers", "Reviewer"


class Invitation(models.Model):
    """A one-time link by which a person creates a worker or reviewer account for one dataset.

        A worker invitation names the datasets the invitee may work on (`datasets`, granted on acceptance as
        `annotation.DatasetGrant` rows); one that names none makes an unscoped worker, who may take tasks of every
        dataset (the behaviour of invitations made before scopes existed). A reviewer invitation names the datasets its
    reviewer may review the same way (granted as `annotation.ReviewerGrant` rows; none: every dataset). Only the SHA-256 of the token is stored: the token itself is shown once, to the organizer who made it.
        Accepting sets `accepted_at` and `accepted_by` once, through a conditional update (single use)."""

    dataset = models.ForeignKey("annotation.Dataset", on_delete=models.PROTECT, related_name="invitations")
    role = models.CharField(max_length=16, choices=InvitationRole.choices)
    token_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="invitation",
    )
    datasets = models.ManyToManyField(
        "annotation.Dataset",
        blank=True,
        related_name="+",
        help_text="The datasets the invited worker may work on; none: every dataset (unscoped).",
    )

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["dataset", "role"], name="invitation_dataset_role_idx")]

    def __str__(self) -> str:
        return f"invitation {self.pk} ({self.role}) to dataset {self.dataset_id}"


class Provider(models.TextChoices):
    """Where a bundle's worker came from: one value per module under crowd/providers/."""

    MTURK = "mturk", "Mechanical Turk"
    EXTERNAL = "external", "External link"
    INHOUSE = "inhouse", "In-house"
    FAKE = "fake", "Fake (tests and simulation)"


class BundleSize(models.Model):
    """How many micro-tasks of one kind a provider session answers in this dataset (e.g. 20 votes, 5 boxes)."""

    dataset = models.ForeignKey("annotation.Dataset", on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=32)
    size = models.PositiveIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["dataset", "kind"], name="bundle_size_unique_dataset_kind"),
            models.CheckConstraint(condition=models.Q(size__gte=1), name="bundle_size_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.dataset_id}/{self.kind}: {self.size}"


class BundleState(models.TextChoices):
    OPEN = "open", "Open"
    COMPLETE = "complete", "Complete"


class Bundle(models.Model):
    """One provider session (an MTurk assignment, a study visit): `size` micro-tasks of one kind, each leased
    through the queue when the previous one is answered. `external_ref` names the session at the provider
    (the MTurk AssignmentId, the study link and participant id), so a reloaded page resumes the same bundle."""

    provider = models.CharField(max_length=16, choices=Provider.choices)
    external_ref = models.CharField(max_length=200)
    worker = models.ForeignKey(Worker, on_delete=models.PROTECT, related_name="bundles")
    dataset = models.ForeignKey("annotation.Dataset", on_delete=models.PROTECT, related_name="+")
    kind = models.CharField(max_length=32)
    size = models.PositiveIntegerField()
    answered = models.PositiveIntegerField(default=0)
    state = models.CharField(max_length=16, choices=BundleState.choices, default=BundleState.OPEN)
    short = models.BooleanField(
        default=False, help_text="Completed with fewer answers than `size` because the queue ran dry."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["provider", "external_ref"], name="bundle_unique_external_ref")
        ]

    def __str__(self) -> str:
        return f"bundle {self.pk} ({self.provider} {self.external_ref}): {self.answered}/{self.size}"


class BundleItem(models.Model):
    """A micro-task assignment leased inside a bundle."""

    bundle = models.ForeignKey(Bundle, on_delete=models.PROTECT, related_name="items")
    assignment = models.OneToOneField(
        "annotation.Assignment", on_delete=models.PROTECT, related_name="bundle_item"
    )

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"bundle {self.bundle_id}: assignment {self.assignment_id}"


def _study_key() -> str:
    return secrets.token_urlsafe(12)


class StudyLink(models.Model):
    """The public link of an external (Prolific-style) study for one dataset and task kind. Participants
    arrive with their id in the `participant_param` query parameter; `completion_redirect` (optional) is where
    they are sent when done, with `{code}` replaced by their completion code. `datasets` names the datasets its
    participants' sessions take tasks of (the link's own dataset among them); none: its own dataset only."""

    key = models.CharField(max_length=32, unique=True, default=_study_key)
    dataset = models.ForeignKey("annotation.Dataset", on_delete=models.PROTECT, related_name="+")
    kind = models.CharField(max_length=32)
    participant_param = models.CharField(max_length=64, default="PROLIFIC_PID")
    completion_redirect = models.URLField(max_length=500, blank=True)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    datasets = models.ManyToManyField(
        "annotation.Dataset",
        blank=True,
        related_name="+",
        help_text="The datasets participants take tasks of (the link's own among them); none: its own only.",
    )

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "kind"], name="study_link_unique_dataset_kind")
        ]

    def __str__(self) -> str:
        return f"study {self.key} ({self.dataset_id}/{self.kind})"


class CompletionRedemption(models.Model):
    """A completion code accepted once from the marketplace: the unique bundle makes a replay fail."""

    bundle = models.OneToOneField(Bundle, on_delete=models.PROTECT, related_name="redemption")
    redeemed_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"bundle {self.bundle_id} redeemed"


class MturkHitType(models.Model):
    """How HITs of one dataset and task kind look on Mechanical Turk. `hit_type_id` caches the HIT type MTurk
    made from these fields, valid while `hit_type_fingerprint` matches them. Money in US dollars."""

    dataset = models.ForeignKey("annotation.Dataset", on_delete=models.PROTECT, related_name="+")
    kind = models.CharField(max_length=32)
    title = models.CharField(max_length=128)
    description = models.CharField(max_length=2000)
    keywords = models.CharField(max_length=1000, blank=True)
    reward = models.DecimalField(max_digits=8, decimal_places=2, help_text="Per assignment (one bundle).")
    bonus = models.DecimalField(
        max_digits=8, decimal_places=2, default=0, help_text="Paid when gold says a bonus is due."
    )
    assignment_seconds = models.PositiveIntegerField(default=3600)
    lifetime_seconds = models.PositiveIntegerField(default=7 * 24 * 3600)
    auto_approval_seconds = models.PositiveIntegerField(default=3 * 24 * 3600)
    min_approval_rate = models.PositiveSmallIntegerField(null=True, blank=True)
    min_approved = models.PositiveIntegerField(null=True, blank=True)
    locale = models.CharField(max_length=2, blank=True, help_text="ISO country code workers must be in.")
    qualification_type_id = models.CharField(
        max_length=64,
        blank=True,
        help_text="Our own MTurk qualification type of this dataset and kind, made once by "
        "crowd.providers.mturk_qualification and granted to workers who pass gold's qualification set.",
    )
    require_qualification = models.BooleanField(
        default=False,
        help_text="Only workers holding our qualification may accept (publish a first batch without it, so "
        "that workers can take the qualification set).",
    )
    hit_type_id = models.CharField(max_length=64, blank=True)
    hit_type_fingerprint = models.CharField(
        max_length=64, blank=True, help_text="SHA-256 of the settings `hit_type_id` was made from."
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["dataset", "kind"], name="mturk_hit_type_unique_dataset_kind")
        ]

    def __str__(self) -> str:
        return f"{self.title} ({self.dataset_id}/{self.kind})"


class MturkBudget(models.Model):
    """The most a dataset may spend on MTurk (rewards, bonuses and MTurk's fees), checked before publishing."""

    dataset = models.OneToOneField("annotation.Dataset", on_delete=models.PROTECT, related_name="+")
    cap = models.DecimalField(max_digits=10, decimal_places=2)

    def __str__(self) -> str:
        return f"budget of {self.dataset_id}: ${self.cap}"


class HitState(models.TextChoices):
    PENDING = "pending", "Waiting to be published"
    PUBLISHED = "published", "Published"
    EXPIRED = "expired", "Expired, deleted once its assignments are decided"
    DISPOSED = "disposed", "Expired and deleted"


class MturkHit(models.Model):
    """One HIT we publish. The row (with its UniqueRequestToken) is written before MTurk is called, so a
    retried publish sends the same token and MTurk never makes a second HIT for it."""

    hit_type = models.ForeignKey(MturkHitType, on_delete=models.PROTECT, related_name="hits")
    batch = models.CharField(max_length=36, db_index=True)
    request_token = models.CharField(max_length=64, unique=True)
    hit_id = models.CharField(max_length=64, null=True, blank=True, unique=True)
    max_assignments = models.PositiveIntegerField()
    estimated_cost = models.DecimalField(max_digits=10, decimal_places=2)
    state = models.CharField(max_length=16, choices=HitState.choices, default=HitState.PENDING)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"HIT {self.hit_id or self.request_token} ({self.state})"


class MturkAssignmentStatus(models.TextChoices):
    ACCEPTED = "accepted", "Accepted, being worked on"
    SUBMITTED = "submitted", "Submitted, awaiting a decision"
    UNMATCHED = "unmatched", "Submitted without a complete bundle (left to the organizer)"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"


class MturkAssignment(models.Model):
    """An MTurk assignment: written when its worker opens the task page (with the checked externalSubmit URL),
    then settled by `sync_hits`. Locked while it is settled, so two syncs never decide (or pay) it twice."""

    assignment_id = models.CharField(max_length=64, unique=True)
    hit = models.ForeignKey(MturkHit, on_delete=models.PROTECT, related_name="assignments")
    mturk_worker_id = models.CharField(max_length=64)
    bundle = models.OneToOneField(Bundle, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    status = models.CharField(
        max_length=16, choices=MturkAssignmentStatus.choices, default=MturkAssignmentStatus.ACCEPTED
    )
    submit_to = models.URLField(max_length=200, blank=True, help_text="The allow-listed externalSubmit URL.")
    confirmed = models.BooleanField(
        default=False,
        help_text="MTurk confirmed the worker and HIT (get_assignment at arrival, or its submitted list).",
    )
    # What approving paid (the HIT type's reward at that moment) and MTurk's fees on the reward and bonus:
    # the spend the organizer's cost ledger shows beside the estimates.
    reward_paid = models.DecimalField(max_digits=8, decimal_places=2, default=0)
    bonus_paid = models.DecimalField(max_digits=8, decimal_places=2, default=0)
    fees_paid = models.DecimalField(max_digits=8, decimal_places=2, default=0)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"MTurk assignment {self.assignment_id}: {self.status}"


class MturkWorkerBlock(models.Model):
    """An MTurk worker we blocked (requester-wide) because gold blocked them in a dataset; one row per worker, so
    the block is sent once even by two syncs at once."""

    mturk_worker_id = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"MTurk worker {self.mturk_worker_id} blocked"


class MturkQualificationGrant(models.Model):
    """Our qualification type granted to an MTurk worker, once: the unique pair makes a retried grant task
    find its own row and call MTurk again only if the earlier call never finished."""

    qualification_type_id = models.CharField(max_length=64)
    mturk_worker_id = models.CharField(max_length=64)
    granted_at = models.DateTimeField(null=True, blank=True, help_text="When MTurk confirmed the grant.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["qualification_type_id", "mturk_worker_id"], name="mturk_qualification_grant_unique"
            )
        ]

    def __str__(self) -> str:
        return f"qualification {self.qualification_type_id} for {self.mturk_worker_id}"
