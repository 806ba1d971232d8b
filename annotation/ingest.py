"""Image ingestion service: validate each file, store the good ones, report the bad ones by name.

Each file is its own unit of work: one bad file never stops or undoes the good ones in the same batch, and a
file is either stored completely (bytes in storage and its row) or not at all.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import BinaryIO

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction

from . import counters
from .imagecheck import CheckedImage, Header, ImageRejected, check_image, hamming_distances
from .imagerefs import image_ref
from .models import Dataset, Image


class DuplicateImage(ImageRejected):
    """The same bytes are already in the dataset: refused, but nothing is wrong with the file."""


@dataclass(frozen=True)
class IngestItem:
    name: str
    data: bytes
    source: str = ""
    size: int | None = None  # the file's full size when `data` holds only its first bytes (see item_read)


def item_read(name: str, stream: BinaryIO, *, size: int | None = None, source: str = "") -> IngestItem:
    """Read one file for ingestion, holding at most the size limit plus one byte in memory: a huge file is
    refused from its size alone instead of being read whole first."""
    data = stream.read(settings.CROWDLABEL["MAX_IMAGE_BYTES"] + 1)
    return IngestItem(name=name, data=data, source=source, size=size)


@dataclass
class IngestReport:
    stored: list[Image] = field(default_factory=list)
    near_duplicates: list[Image] = field(default_factory=list)
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (file name, reason)
    duplicates: int = 0  # how many of the rejected were exact duplicates of stored images

    @property
    def only_duplicates_rejected(self) -> bool:
        return bool(self.rejected) and self.duplicates == len(self.rejected)

    def as_dict(self) -> dict:
        return {
            "stored": [{"id": i.pk, "ref": image_ref(i.pk), "name": i.original_name} for i in self.stored],
            "near_duplicates": [
                {
                    "id": i.pk,
                    "ref": image_ref(i.pk),
                    "name": i.original_name,
                    "near_duplicate_of": i.near_duplicate_of_id,
                }
                for i in self.near_duplicates
            ],
            "rejected": [{"name": name, "reason": reason} for name, reason in self.rejected],
        }


class _HashIndex:
    """The dataset's perceptual hashes, loaded once per batch and grown as files are stored."""

    def __init__(self, dataset: Dataset):
        rows = list(dataset.images.values_list("pk", "phash"))
        self.ids = [pk for pk, _ in rows]
        self.hashes = [h for _, h in rows]

    def nearest(self, phash: str, max_distance: int) -> int | None:
        distances = hamming_distances(phash, self.hashes)
        if distances.size == 0:
            return None
        best = int(distances.argmin())
        return self.ids[best] if distances[best] <= max_distance else None

    def add(self, pk: int, phash: str) -> None:
        self.ids.append(pk)
        self.hashes.append(phash)


def images_ingest(
    *, dataset: Dataset, items: Iterable[IngestItem], progress=None, pixel_budget: int | None = None
) -> IngestReport:
    """Check and store each item. `pixel_budget` bounds the pixels decoded in this call (an upload request):
    files past it are refused by name, to be sent again in another request."""
    limits = settings.CROWDLABEL
    report = IngestReport()
    index = _HashIndex(dataset)
    budget = _PixelBudget(pixel_budget)
    for item in items:
        try:
            _refuse_known_bytes(dataset, item)  # before any decoding: a repeat upload costs one hash
            checked = check_image(
                item.data,
                max_bytes=limits["MAX_IMAGE_BYTES"],
                max_pixels=limits["MAX_IMAGE_PIXELS"],
                size=item.size,
                max_frames=limits["MAX_IMAGE_FRAMES"],
                max_frame_pixels=limits["MAX_FRAME_PIXELS"],
                formats=dataset.image_formats or None,
                before_decode=budget.admit,
            )
            image = _store(dataset, item, checked, index, limits["NEAR_DUPLICATE_DISTANCE"])
        except ImageRejected as exc:
            report.rejected.append((item.name, str(exc)))
            report.duplicates += isinstance(exc, DuplicateImage)
        else:
            report.stored.append(image)
            if image.near_duplicate_of_id:
                report.near_duplicates.append(image)
        if progress is not None:
            progress(item.name)
    return report


class _PixelBudget:
    """Pixels one call may still decode; None is unbounded."""

    def __init__(self, limit: int | None):
        self.limit = limit
        self.used = 0

    def admit(self, header: Header) -> None:
        if self.limit is not None and self.used + header.pixels > self.limit:
            raise ImageRejected(
                f"this request has decoded {self.used:,} pixels already, and this file's {header.pixels:,} "
                f"would pass the limit of {self.limit:,} per request: upload it in another request"
            )
        self.used += header.pixels


def _within_size(item: IngestItem, max_bytes: int) -> bool:
    return 0 < len(item.data) <= max_bytes and (item.size is None or item.size <= max_bytes)


def _refuse_known_bytes(dataset: Dataset, item: IngestItem) -> None:
    if not _within_size(item, settings.CROWDLABEL["MAX_IMAGE_BYTES"]):
        return  # check_image names the size problem
    sha256 = hashlib.sha256(item.data).hexdigest()
    existing = dataset.images.filter(sha256=sha256).values_list("pk", flat=True).first()
    if existing is not None:
        raise DuplicateImage(f"exact duplicate of image {existing} already in dataset {dataset.name!r}")


def _store(
    dataset: Dataset, item: IngestItem, checked: CheckedImage, index: _HashIndex, max_distance: int
) -> Image:
    image = Image(
        dataset=dataset,
        original_name=item.name[:255],
        width=checked.width,
        height=checked.height,
        sha256=checked.sha256,
        phash=checked.phash,
        source=item.source[:500],
        near_duplicate_of_id=index.nearest(checked.phash, max_distance),
    )
    image.file.save(f"{item.name}.{checked.extension}", ContentFile(checked.data), save=False)
    try:
        with transaction.atomic():
            image.save()
            counters.images_counted(dataset.pk, 1)
    except IntegrityError:
        # A concurrent upload of the same bytes won the race; drop our copy of the file.
        image.file.storage.delete(image.file.name)
        raise DuplicateImage(f"exact duplicate of an image already in dataset {dataset.name!r}") from None
    except Exception:
        image.file.storage.delete(image.file.name)
        raise
    index.add(image.pk, image.phash)
    return image
