"""Which datasets an organizer may see (`annotation.scoping`, shared by every app's organizer endpoints)."""

from __future__ import annotations

from annotation.scoping import organizer_dataset, organizer_datasets

__all__ = ["organizer_dataset", "organizer_datasets"]
