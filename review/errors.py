"""The review services' errors: a review operation the caller cannot do now (409 with its message, or 400 for a
decision that does not fit the item)."""

from __future__ import annotations


class ReviewError(Exception):
    """A review operation the caller cannot do now; the API answers 409 with the message."""

    code = "conflict"


class NotLeaseHolder(ReviewError):
    code = "not_lease_holder"


class AlreadyDecided(ReviewError):
    code = "already_decided"


class BoxesChanged(ReviewError):
    code = "boxes_changed"


class SubjectGone(ReviewError):
    """The pipeline no longer needs this item (its question or job moved on): the item is dismissed."""

    code = "subject_gone"


class InvalidDecision(ValueError):
    """The decision does not fit the item (wrong kind, missing or useless new class); the API answers 400."""


class KeyReused(ReviewError):
    code = "idempotency_key_reused"
