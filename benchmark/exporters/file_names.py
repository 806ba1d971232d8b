"""The names images get inside an export: the zero-padded id (every format's default) or, for COCO on request,
the name the image was uploaded with, made safe and unique across the whole export.

Two uploads may share a name (``IMG_0001.jpg`` from two cameras, ``000012.jpg`` from two folders). The first
image to claim a name (splits in train, val, test order, images by id) keeps it; every later one gets its id
before the extension (``IMG_0001-1234.jpg``), and the manifest lists each image's original and written name,
so the renaming is visible and reversible. Names are compared case-insensitively: unpacked on a
case-insensitive file system, ``a.jpg`` and ``A.JPG`` would overwrite each other.
"""

from __future__ import annotations

from typing import Literal

FileNames = Literal["id", "original"]
FILE_NAMES: tuple[FileNames, ...] = ("id", "original")


def id_name(image_id: int, extension: str) -> str:
    return f"{image_id:012d}.{extension}"


def safe_base_name(original: str) -> str:
    """The last path component of an uploaded name (ingestion may keep a folder or bucket key), without
    control characters; empty when nothing usable is left."""
    base = original.replace("\\", "/").rsplit("/", 1)[-1]
    base = "".join(ch for ch in base if ch.isprintable()).strip()
    return "" if base in ("", ".", "..") else base


class OriginalNames:
    """Hands out the written name of each image in the order the export writes them, remembering the names
    taken. ``renamed`` counts the images that could not keep their original name (taken, or none usable)."""

    def __init__(self) -> None:
        self._taken: set[str] = set()
        self.renamed = 0

    def name(self, image_id: int, original: str, id_based: str) -> str:
        base = safe_base_name(original)
        if not base:  # no usable upload name: the id-based one
            self.renamed += 1
            base = id_based
        elif base.lower() in self._taken:
            self.renamed += 1
        if base.lower() not in self._taken:
            return self._claim(base)
        stem, dot, extension = base.rpartition(".")
        if not stem:  # no extension (or a name like ".jpg"): the id goes at the end
            stem, dot, extension = base, "", ""
        candidate = f"{stem}-{image_id}{dot}{extension}"
        n = 2
        while candidate.lower() in self._taken:  # an upload already named like that: count on
            candidate = f"{stem}-{image_id}-{n}{dot}{extension}"
            n += 1
        return self._claim(candidate)

    def _claim(self, name: str) -> str:
        self._taken.add(name.lower())
        return name
