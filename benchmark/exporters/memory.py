"""An in-memory label source: the exporters' reference input for tests and benchmarks."""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from .base import SPLIT_NAMES, ExportBox, ExportCategory, ExportImage, ExportLabel


@dataclass
class MemorySource:
    dataset_name: str
    categories_: list[ExportCategory]
    images_: list[ExportImage]
    boxes_: list[ExportBox]
    labels_: list[ExportLabel] = field(default_factory=list)
    image_bytes: dict[int, bytes] = field(default_factory=dict)
    blacklist_: list[tuple[int, int]] = field(default_factory=list)  # (image id, category id)
    dataset_version: str = "memory"
    completeness_: dict[str, Any] | None = None

    def categories(self) -> Sequence[ExportCategory]:
        return sorted(self.categories_, key=lambda c: c.id)

    def splits(self) -> Sequence[str]:
        present = {i.split for i in self.images_}
        return [s for s in SPLIT_NAMES if s in present] + sorted(present - set(SPLIT_NAMES))

    def _split_ids(self, split: str) -> set[int]:
        return {i.id for i in self.images_ if i.split == split}

    def images(self, split: str) -> Iterator[ExportImage]:
        return iter(sorted((i for i in self.images_ if i.split == split), key=lambda i: i.id))

    def boxes(self, split: str) -> Iterator[ExportBox]:
        ids = self._split_ids(split)
        return iter(sorted((b for b in self.boxes_ if b.image_id in ids), key=lambda b: (b.image_id, b.id)))

    def labels(self, split: str) -> Iterator[ExportLabel]:
        ids = self._split_ids(split)
        rows = (lab for lab in self.labels_ if lab.image_id in ids)
        return iter(sorted(rows, key=lambda lab: (lab.image_id, lab.category_id)))

    def blacklist(self, split: str) -> Iterator[tuple[int, int]]:
        ids = self._split_ids(split)
        return iter(sorted(pair for pair in self.blacklist_ if pair[0] in ids))

    def provenance(self, split: str) -> Iterator[dict[str, Any]]:
        for label in self.labels(split):
            yield {"image_id": label.image_id, "category_id": label.category_id, "positive": label.positive}

    def completeness(self) -> dict[str, Any] | None:
        return self.completeness_

    def open_image(self, image: ExportImage) -> IO[bytes]:
        return io.BytesIO(self.image_bytes.get(image.id, b""))
