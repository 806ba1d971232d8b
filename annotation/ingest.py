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
from django.db import IntegrityError, InterfaceError, OperationalError, connection, transaction

from config.dbconnection import connection_lost

from . import counters
from .imagecheck import CheckedImage, Header, ImageRejected, check_image, hamming_distances
from .imagerefs import image_ref
from .models import Dataset, Image


class DuplicateImage(ImageRejected):
    """The same bytes are already in the dataset (as `image_id`): not stored again, but nothing is wrong with
    the file."""

    def __init__(self, message: str, image_id: int):
        super().__init__(message)
        self.image_id = image_id


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
    # Files whose exact bytes the dataset holds already, as (file name sent, that image's id): a repeated upload
    # (a client's retry of a request whose answer it never got) finds what it sent, stored once.
    already_stored: list[tuple[str, int]] = field(default_factory=list)

    @property
    def nothing_new(self) -> bool:
        """Every file was in the dataset already: nothing stored, nothing refused."""
        return bool(self.already_stored) and not self.stored and not self.rejected

    def as_dict(self) -> dict:
        return {
            "stored": [
                {"id": i.pk, "ref": image_ref(i.pk), "name": i.original_name, "already_stored": False}
                for i in self.stored
            ]
            + [
                {"id": pk, "ref": image_ref(pk), "name": name, "already_stored": True}
                for name, pk in self.already_stored
            ],
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
    index = _once_more_if_connection_lost(_HashIndex, _HashIndex, dataset)
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
            image = _once_more_if_connection_lost(
                _store, _store_once, dataset, item, checked, index, limits["NEAR_DUPLICATE_DISTANCE"]
            )
        except DuplicateImage as exc:
            report.already_stored.append((item.name[:255], exc.image_id))
        except ImageRejected as exc:
            report.rejected.append((item.name, str(exc)))
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
        raise DuplicateImage(
            f"exact duplicate of image {existing} already in dataset {dataset.name!r}", existing
        )


def _once_more_if_connection_lost(step, again, *args):
    """`step(*args)`, and `again(*args)` on a fresh connection when the database connection was lost during
    it (a restarted server, a killed backend): each file is stored in a transaction of its own, so the files
    before it are kept and this one was either rolled back or committed (then `again` finds it already
    stored). Without this an upload losing its connection after storing some files was answered 503. Inside
    an outer transaction (which the loss rolled back whole) the error is raised as it was."""
    try:
        return step(*args)
    except (OperationalError, InterfaceError) as exc:
        if connection.in_atomic_block or not connection_lost(exc):
            raise
        connection.close()  # the next query opens a fresh connection
        return again(*args)


def _store_once(
    dataset: Dataset, item: IngestItem, checked: CheckedImage, index: _HashIndex, max_distance: int
) -> Image:
    """Store the file unless its bytes were stored meanwhile (by a concurrent upload, or by this very call
    before its connection was lost after the commit)."""
    existing = dataset.images.filter(sha256=checked.sha256).values_list("pk", flat=True).first()
    if existing is not None:
        raise DuplicateImage(
            f"exact duplicate of image {existing} already in dataset {dataset.name!r}", existing
        )
    return _store(dataset, item, checked, index, max_distance)


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
        existing = dataset.images.filter(sha256=checked.sha256).values_list("pk", flat=True).first()
        if existing is None:
            raise
        raise DuplicateImage(
            f"exact duplicate of image {existing} already in dataset {dataset.name!r}", existing
        ) from None
    except Exception:
        image.file.storage.delete(image.file.name)
        raise
    index.add(image.pk, image.phash)
    return image
