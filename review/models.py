"""Review queues (ILSVRC Appendix E): items for in-house reviewers, their append-only decisions, the
organizer's confusable class pairs and the per-box record of the overlap check."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q


class ReviewKind(models.TextChoices):
    DUPLICATE = "duplicate", "Duplicate boxes"
    CROSS_CLASS = "cross_class", "Cross-class overlap"
    AMBIGUOUS = "ambiguous", "Ambiguous item"


class ItemState(models.TextChoices):
    OPEN = "open", "Open"
    LEASED = "leased", "Leased to a reviewer"
    DECIDED = "decided", "Decided"
    DISMISSED = "dismissed", "Dismissed (no longer applies)"


OPEN_STATES = (ItemState.OPEN, ItemState.LEASED)


class Decision(models.TextChoices):
    # duplicate pairs
    DISTINCT = "distinct", "Distinct objects: keep both"
    DUPLICATE_KEEP_A = "duplicate_keep_a", "Duplicate: keep A, remove B"
    DUPLICATE_KEEP_B = "duplicate_keep_b", "Duplicate: keep B, remove A"
    # cross-class pairs
    BOTH_RIGHT = "both_right", "Both labels are right"
    REMOVE_A = "remove_a", "A is wrong: remove it"
    REMOVE_B = "remove_b", "B is wrong: remove it"
    RELABEL_A = "relabel_a", "Relabel A"
    RELABEL_B = "relabel_b", "Relabel B"
    # ambiguous items from other pipelines
    ACCEPT = "accept", "Accept"
    REJECT = "reject", "Reject"
    # box jobs in review (annotation.pipeline.ReviewOutcome)
    REDRAW = "redraw", "Boxes are missing: draw more"
    CLOSE = "close", "Close the job with its accepted boxes"
    ABSENT = "absent", "There is no such object in this image"
    # an organizer reverting an earlier decision
    UNDO = "undo", "Undo"


DECISIONS_BY_KIND: dict[str, tuple[str, ...]] = {
    ReviewKind.DUPLICATE: (Decision.DISTINCT, Decision.DUPLICATE_KEEP_A, Decision.DUPLICATE_KEEP_B),
    ReviewKind.CROSS_CLASS: (
        Decision.BOTH_RIGHT,
        Decision.REMOVE_A,
        Decision.REMOVE_B,
        Decision.RELABEL_A,
        Decision.RELABEL_B,
    ),
    ReviewKind.AMBIGUOUS: (Decision.ACCEPT, Decision.REJECT),
}


class ReviewItem(models.Model):
    """One thing a reviewer must decide: a pair of overlapping boxes, or an ambiguous item from another
    pipeline (`subject`, e.g. {"type": "consensus.question", "id": 12}, about an image and optionally one box).

    Pairs are stored with box_a < box_b and queued once per kind ever: a decided pair is not queued again by a
    rescan, an undo reopens the same row."""

    kind = models.CharField(max_length=16, choices=ReviewKind.choices)
    dataset = models.ForeignKey("annotation.Dataset", on_delete=models.PROTECT, related_name="review_items")
    box_a = models.ForeignKey(
        "annotation.Box", null=True, blank=True, on_delete=models.PROTECT, related_name="review_items_as_a"
    )
    box_b = models.ForeignKey(
        "annotation.Box", null=True, blank=True, on_delete=models.PROTECT, related_name="review_items_as_b"
    )
    image = models.ForeignKey(
        "annotation.Image",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="review_items",
        help_text="The image the reviewer looks at (a pair's or an ambiguous item's).",
    )
    subject = models.JSONField(null=True, blank=True, help_text="What an ambiguous item is about.")
    subject_key = models.CharField(
        max_length=200, blank=True, help_text="Canonical form of `subject`, for the once-while-open rule."
    )
    reason = models.TextField(blank=True, help_text="Why the item needs a reviewer.")
    iou = models.FloatField(null=True, blank=True)
    confusable = models.BooleanField(default=False, help_text="The two classes are a listed confusable pair.")
    priority = models.IntegerField(default=0, help_text="Higher first.")
    state = models.CharField(max_length=16, choices=ItemState.choices, default=ItemState.OPEN)
    leased_to = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["box_a", "box_b", "kind"], condition=Q(box_b__isnull=False), name="review_pair_once"
            ),
            models.UniqueConstraint(
                fields=["dataset", "kind", "subject_key"],
                condition=Q(state__in=["open", "leased"]) & ~Q(subject_key=""),
                name="review_subject_once_while_open",
            ),
            models.CheckConstraint(
                condition=Q(box_b__isnull=True) | Q(box_a__lt=F("box_b")), name="review_pair_ordered"
            ),
            models.CheckConstraint(
                condition=Q(kind="ambiguous") | (Q(box_a__isnull=False) & Q(box_b__isnull=False)),
                name="review_pair_has_two_boxes",
            ),
            models.CheckConstraint(
                condition=(Q(state="leased") & Q(leased_to__isnull=False) & Q(lease_expires_at__isnull=False))
                | (~Q(state="leased") & Q(leased_to__isnull=True)),
                name="review_lease_fields_match_state",
            ),
        ]
        indexes = [
            models.Index(
                F("priority").desc(),
                "id",
                name="review_item_available_idx",
                condition=Q(state__in=["open", "leased"]),
            ),
            models.Index(fields=["dataset", "kind", "state"], name="review_item_summary_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} item {self.pk} ({self.state})"

    @property
    def box_ids(self) -> list[int]:
        """The item's boxes in id order: the order every service locks them in."""
        return sorted(b for b in (self.box_a_id, self.box_b_id) if b is not None)


class ReviewDecision(models.Model):
    """A reviewer's decision, or an organizer's undo of one; never edited. `before`/`after` snapshot the boxes
    the decision touched (state and concept), so what it changed stays visible after later edits."""

    item = models.ForeignKey(ReviewItem, on_delete=models.PROTECT, related_name="decisions")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    decision = models.CharField(max_length=20, choices=Decision.choices)
    new_concept = models.ForeignKey(
        "hierarchy.Concept", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    before = models.JSONField(default=dict)
    after = models.JSONField(default=dict)
    reason = models.TextField(blank=True)
    undoes = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="undone_by"
    )
    # The Idempotency-Key the reviewer's client sent with the decision (blank when it sent none): a retry with
    # the same key is answered with this row and changes nothing.
    idempotency_key = models.CharField(max_length=128, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["reviewer", "idempotency_key"],
                condition=~Q(idempotency_key=""),
                name="review_decision_key_once_per_reviewer",
            ),
            models.CheckConstraint(
                condition=(Q(decision="undo") & Q(undoes__isnull=False))
                | (~Q(decision="undo") & Q(undoes__isnull=True)),
                name="review_undo_names_its_decision",
            ),
            models.CheckConstraint(
                condition=Q(new_concept__isnull=True) | Q(decision__in=["relabel_a", "relabel_b"]),
                name="review_new_concept_only_for_relabel",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.decision} on item {self.item_id} by user {self.reviewer_id}"


class ConfusablePair(models.Model):
    """Two of a dataset's classes its crowd mixes up (seal / sea otter, banjo / guitar): their overlaps in that
    dataset are queued at the lower confusable threshold. Each dataset keeps its own pairs and notes (concepts
    are shared by every dataset; what an organizer says about them is not). Stored with concept_a < concept_b."""

    dataset = models.ForeignKey(
        "annotation.Dataset", on_delete=models.CASCADE, related_name="confusable_pairs"
    )
    concept_a = models.ForeignKey("hierarchy.Concept", on_delete=models.CASCADE, related_name="+")
    concept_b = models.ForeignKey("hierarchy.Concept", on_delete=models.CASCADE, related_name="+")
    note = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["dataset", "concept_a", "concept_b"], name="confusable_pair_unique_per_dataset"
            ),
            models.CheckConstraint(condition=Q(concept_a__lt=F("concept_b")), name="confusable_pair_ordered"),
        ]

    def __str__(self) -> str:
        return f"confusable {self.concept_a_id} / {self.concept_b_id} in dataset {self.dataset_id}"

    def save(self, *args, **kwargs):
        # Either order is accepted from forms and scripts; the row is stored canonically.
        if self.concept_a_id and self.concept_b_id and self.concept_a_id > self.concept_b_id:
            self.concept_a_id, self.concept_b_id = self.concept_b_id, self.concept_a_id
        super().save(*args, **kwargs)


class ScanState(models.Model):
    """When the overlap catch-up of a dataset last ran and what it found, and whether one is requested (the
    debounce of `scan.overlaps_scan_request`). Which boxes are checked is not a watermark: each accepted
    box has its own `OverlapCheck`."""

    dataset = models.OneToOneField("annotation.Dataset", on_delete=models.CASCADE, related_name="scan_state")
    last_finished_at = models.DateTimeField(null=True, blank=True)
    last_boxes_checked = models.PositiveIntegerField(default=0)
    last_pairs_found = models.PositiveIntegerField(default=0)
    scan_requested_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When a scan was last requested and queued (boxes accepted); cleared when it starts, so "
        "requests in between are absorbed by the queued scan.",
    )

    def __str__(self) -> str:
        return f"overlap scans of dataset {self.dataset_id}"


class OverlapCheck(models.Model):
    """An accepted box whose overlaps with every other accepted box of its image were examined (pairs over
    a threshold queued for a reviewer). Written under the image's row lock, so a box accepted concurrently
    is either seen by this check or checked after it; deleted when the box's class or state changes (a
    relabel, an undo), so the box is examined again. One of the conditions of a final box."""

    box = models.OneToOneField(
        "annotation.Box", primary_key=True, on_delete=models.CASCADE, related_name="overlap_check"
    )
    checked_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"overlaps of box {self.box_id} checked at {self.checked_at}"
