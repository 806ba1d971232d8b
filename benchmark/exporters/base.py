"""What every exporter shares: the records a label source streams, the output tree that checksums each
written file, the per-image merge of images with their boxes and labels, and the manifest. No framework here:
the Django side supplies a `LabelSource`, tests an in-memory one.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Protocol

from .archive import COPY_CHUNK, ArchiveSink, archive_kind
from .file_names import FileNames, OriginalNames
from .listing import Spool, file_line, image_line

SPLIT_NAMES = ("train", "val", "test")
ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz")
Progress = Callable[[int], None]  # called with the number of images written so far


@dataclass(frozen=True, slots=True)
class ExportImage:
    id: int
    file_name: str  # name in the export: the zero-padded id and the stored file's extension
    width: int
    height: int
    split: str
    original_name: str = ""  # the name it was uploaded with (empty: not known)

    @property
    def stem(self) -> str:
        return self.file_name.rsplit(".", 1)[0]


VIEWPOINTS = ("frontal", "rear", "left", "right", "unspecified")  # PASCAL VOC's poses


@dataclass(frozen=True, slots=True)
class ExportBox:
    """An accepted box in continuous pixel coordinates (x2 > x1, y2 > y1), with its VOC attributes
    (PASCAL VOC §3.3): ``difficult`` boxes are left out of scoring, ``truncated`` None means "not said"
    (the exporters then take a box touching the border as truncated). ``fine`` names the fine class a
    box had before basic-level merging ("dalmatian" for a box exported as "dog")."""

    id: int
    image_id: int
    category_id: int
    x1: float
    y1: float
    x2: float
    y2: float
    difficult: bool = False
    truncated: bool | None = None
    occluded: bool = False
    viewpoint: str = "unspecified"
    fine: str = ""
    # Where the box came from (`annotation.BoxProvenance`): "worker", or "model+verified" for a model's
    # proposal the crowd accepted. Only accepted boxes are exported, so never an unverified "model".
    provenance: str = "worker"


@dataclass(frozen=True, slots=True)
class ExportLabel:
    """An image-level verdict: ``positive`` True is a verified positive, False a verified negative."""

    image_id: int
    category_id: int
    positive: bool


@dataclass(frozen=True)
class ExportCategory:
    id: int  # the concept's id: stable when classes are added
    wnid: str
    name: str
    supercategory: str = ""

    @property
    def slug(self) -> str:
        return "_".join(self.name.split()).replace("/", "_") or self.wnid


class LabelSource(Protocol):
    """Streams one dataset's labels, images ordered by id, boxes and labels by (image id, ...)."""

    dataset_name: str
    dataset_version: str

    def categories(self) -> Sequence[ExportCategory]: ...

    def splits(self) -> Sequence[str]: ...

    def images(self, split: str) -> Iterator[ExportImage]: ...

    def boxes(self, split: str) -> Iterator[ExportBox]: ...

    def labels(self, split: str) -> Iterator[ExportLabel]: ...

    def blacklist(self, split: str) -> Iterator[tuple[int, int]]:
        """(image id, category id) pairs too ambiguous to localize, ordered by image id."""
        ...

    def provenance(self, split: str) -> Iterator[dict[str, Any]]: ...

    def open_image(self, image: ExportImage) -> IO[bytes]: ...

    def completeness(self) -> dict[str, Any] | None:
        """What the export leaves out and what is not final yet (`benchmark.completeness`), for the
        manifest; None when the source does not say."""
        ...


@dataclass
class ExportOptions:
    split: str = "all"  # train, val, test or all
    include_images: bool = True
    provenance: bool = False
    # Splits written without labels (images and ids only). Test is withheld unless writing the hidden truth.
    withheld: frozenset[str] = frozenset({"test"})
    progress: Progress | None = None
    # What the images are called inside the export: "id" (every format) or "original" (COCO only: the upload
    # names, made unique, `file_names.py`).
    file_names: FileNames = "id"


class HashingWriter:
    """A text sink that hashes and counts what it writes; callers batch lines so this is called rarely."""

    def __init__(self, raw: IO[bytes]):
        self._raw = raw
        self._hash = hashlib.sha256()
        self.size = 0

    def write(self, text: str) -> None:
        data = text.encode()
        self._hash.update(data)
        self._raw.write(data)
        self.size += len(data)

    def write_bytes(self, data: bytes) -> None:
        self._hash.update(data)
        self._raw.write(data)
        self.size += len(data)

    def digest(self) -> str:
        return self._hash.hexdigest()


class OutputTree:
    """A directory being filled, or an archive (`archive.ArchiveSink`) with a scratch directory beside it; lists
    every file written through it with its sha256 and size, in the order written, on disk (`listing.Spool`): a
    million per-image files cost no memory here. Into an archive, a file written whole (`write_text`, `copy`)
    goes straight in; one opened with `open` is written to the scratch directory and added at the end."""

    def __init__(self, root: Path, sink: ArchiveSink | None = None):
        self.root = root
        self.sink = sink
        self.files = Spool()
        self.folders: list[str] = []  # made with make_dir: kept in an archive even when empty
        self.unlisted: list[str] = []  # written here but not in the listing (manifest.json)
        self.scratch = Spool()  # into an archive: the files written to `root`, to add at the end
        # Paths as strings: a file per image costs no Path object (pathlib interns every part of every path,
        # a million file names in the interpreter's table of interned strings).
        self._root = os.fspath(root)
        self._made: set[str] = set()

    @contextmanager
    def open(self, relpath: str) -> Iterator[HashingWriter]:
        path = os.path.join(self._root, relpath)
        folder = os.path.dirname(path)
        if folder not in self._made:
            os.makedirs(folder, exist_ok=True)
            self._made.add(folder)
        # 64 KiB, not more: writers batch their lines already, and ILSVRC keeps a list per class open at once
        # (with 1 MiB buffers, 80 classes held 80 MiB once each list passed 1 MiB).
        with open(path, "wb", buffering=1 << 16) as raw:
            writer = HashingWriter(raw)
            yield writer
        self.files.add(file_line(relpath, writer.digest(), writer.size))
        if self.sink is not None:
            self.scratch.add(relpath)

    @contextmanager
    def open_unlisted(self, relpath: str) -> Iterator[IO[str]]:
        """A text file of the export that the listing does not name (the manifest itself)."""
        with open(self.root / relpath, "w", encoding="utf-8", buffering=1 << 16) as out:
            yield out
        self.unlisted.append(relpath)

    def make_dir(self, relpath: str) -> None:
        """A folder that exists even if nothing is written into it (archives keep it as an entry)."""
        path = os.path.join(self._root, relpath)
        os.makedirs(path, exist_ok=True)
        self._made.add(path)
        self.folders.append(relpath)

    def entries(self) -> Iterator[str]:
        """Every path of the export, folders first, then files in the order written."""
        yield from self.folders
        for line in self.files.lines():
            yield line.split("\t", 1)[0]
        yield from self.unlisted

    def scratch_entries(self) -> Iterator[str]:
        """Into an archive: what is on disk to add at the end (folders, files written in pieces, the
        manifest)."""
        yield from self.folders
        yield from self.scratch.lines()
        yield from self.unlisted

    def write_text(self, relpath: str, text: str) -> None:
        if self.sink is None:
            with self.open(relpath) as out:
                out.write(text)
            return
        data = text.encode()
        self.sink.write(relpath, data)
        self.files.add(file_line(relpath, hashlib.sha256(data).hexdigest(), len(data)))

    def copy(self, relpath: str, source: IO[bytes]) -> None:
        if self.sink is None:
            with self.open(relpath) as out:  # the writer hashes it; open() lists it
                while chunk := source.read(COPY_CHUNK):
                    out.write_bytes(chunk)
            return
        digest, size = self.sink.copy(relpath, source)
        self.files.add(file_line(relpath, digest, size))

    def close(self) -> None:
        self.files.close()
        self.scratch.close()


@dataclass
class ExportCounts:
    """Images per split, and boxes and image-level positives per (class, split), for the manifest."""

    images: Counter[str] = field(default_factory=Counter)
    boxes: Counter[tuple[int, str]] = field(default_factory=Counter)
    positives: Counter[tuple[int, str]] = field(default_factory=Counter)
    provenance: Counter[str] = field(default_factory=Counter)

    def as_dict(self, categories: Sequence[ExportCategory]) -> dict[str, Any]:
        splits = sorted(self.images)
        per_class = {
            c.name: {s: {"boxes": self.boxes[(c.id, s)], "images": self.positives[(c.id, s)]} for s in splits}
            for c in categories
        }
        return {
            "images": dict(sorted(self.images.items())),
            "boxes": {s: sum(n for (_, s2), n in self.boxes.items() if s2 == s) for s in splits},
            "classes": per_class,
        }


@dataclass(frozen=True)
class ImageRecord:
    """One image with its boxes and image-level labels, as the per-image exporters consume it.
    ``blacklisted`` classes were flagged too ambiguous to localize (ILSVRC §3.3: bunches of bananas, crowds):
    their boxes are left out of the localization truth, their image-level labels stay."""

    image: ExportImage
    boxes: list[ExportBox]
    labels: list[ExportLabel]
    blacklisted: frozenset[int] = frozenset()

    def positive_classes(self) -> set[int]:
        return {b.category_id for b in self.boxes} | {lab.category_id for lab in self.labels if lab.positive}

    def negative_classes(self) -> set[int]:
        boxed = {b.category_id for b in self.boxes}
        return {lab.category_id for lab in self.labels if not lab.positive and lab.category_id not in boxed}


def per_image(
    images: Iterable[ExportImage],
    boxes: Iterable[ExportBox],
    labels: Iterable[ExportLabel],
    blacklist: Iterable[tuple[int, int]] = (),
) -> Iterator[ImageRecord]:
    """Merge the streams ordered by image id into one record per image (a merge join: memory stays at
    one image's rows, whatever the dataset's size). Boxes of a blacklisted (image, class) pair are dropped."""
    box_it, label_it, black_it = iter(boxes), iter(labels), iter(blacklist)
    next_box, next_label, next_black = next(box_it, None), next(label_it, None), next(black_it, None)
    for image in images:
        black: set[int] = set()
        while next_black is not None and next_black[0] <= image.id:
            if next_black[0] == image.id:
                black.add(next_black[1])
            next_black = next(black_it, None)
        own_boxes: list[ExportBox] = []
        while next_box is not None and next_box.image_id <= image.id:
            if next_box.image_id == image.id:
                own_boxes.append(next_box)
            next_box = next(box_it, None)
        own_labels: list[ExportLabel] = []
        while next_label is not None and next_label.image_id <= image.id:
            if next_label.image_id == image.id:
                own_labels.append(next_label)
            next_label = next(label_it, None)
        if black:
            own_boxes = [b for b in own_boxes if b.category_id not in black]
        yield ImageRecord(image, own_boxes, own_labels, frozenset(black))


class ExportContext:
    """What an exporter works with: the source, the options, the output tree and the running counts."""

    def __init__(
        self,
        source: LabelSource,
        options: ExportOptions,
        tree: OutputTree,
        exported_at: datetime | None = None,
    ):
        self.source = source
        self.exported_at = exported_at or utcnow()
        self.options = options
        self.tree = tree
        self.counts = ExportCounts()
        self.categories = list(source.categories())
        self.blacklisted: dict[str, list[tuple[int, int]]] = {}
        # Each image written, for the manifest: id, split, name in the export, name it was uploaded with
        # (on disk while the export runs: `listing.Spool`).
        self.image_list = Spool()
        self.original_names = OriginalNames() if options.file_names == "original" else None
        self._written = 0

    def splits(self) -> list[str]:
        available = list(self.source.splits())
        if self.options.split == "all":
            return available
        if self.options.split not in available:
            raise ValueError(
                f"split {self.options.split!r} is not in this dataset version (has {', '.join(available)})"
            )
        return [self.options.split]

    def labelled(self, split: str) -> bool:
        return split not in self.options.withheld

    def images(self, split: str) -> Iterator[ExportImage]:
        """The split's images as this export names them, counted and listed for the manifest."""
        for image in self.source.images(split):
            self.counts.images[split] += 1
            if self.original_names is not None:
                written = self.original_names.name(image.id, image.original_name, image.file_name)
                image = replace(image, file_name=written)
            self.image_list.add(image_line(image.id, split, image.file_name, image.original_name))
            yield image

    def boxes(self, split: str) -> Iterator[ExportBox]:
        if not self.labelled(split):
            return iter(())
        return iter(self.source.boxes(split))

    def labels(self, split: str) -> Iterator[ExportLabel]:
        if not self.labelled(split):
            return iter(())
        return self._count_labels(split)

    def _count_labels(self, split: str) -> Iterator[ExportLabel]:
        for label in self.source.labels(split):
            if label.positive:
                self.counts.positives[(label.category_id, split)] += 1
            yield label

    def blacklist(self, split: str) -> Iterator[tuple[int, int]]:
        if not self.labelled(split):
            return iter(())
        return self._keep_blacklist(split)

    def _keep_blacklist(self, split: str) -> Iterator[tuple[int, int]]:
        kept = self.blacklisted.setdefault(split, [])
        for pair in self.source.blacklist(split):
            kept.append(pair)
            yield pair

    def records(self, split: str) -> Iterator[ImageRecord]:
        merged = per_image(self.images(split), self.boxes(split), self.labels(split), self.blacklist(split))
        return self._count_boxes(split, merged)

    def box_records(self, split: str) -> Iterator[ImageRecord]:
        """A second pass for formats that write boxes apart from images (COCO): each image with its boxes
        (blacklisted pairs dropped), images not counted again, no labels."""
        merged = per_image(self.source.images(split), self.boxes(split), (), self.blacklist(split))
        return self._count_boxes(split, merged)

    def _count_boxes(self, split: str, records: Iterator[ImageRecord]) -> Iterator[ImageRecord]:
        # Counted after the merge, so the manifest counts the boxes written (not the blacklisted ones).
        boxes, provenance = self.counts.boxes, self.counts.provenance
        for record in records:
            for box in record.boxes:
                boxes[(box.category_id, split)] += 1
                provenance[box.provenance] += 1
            yield record

    def copy_image(self, relpath: str, image: ExportImage) -> None:
        if self.options.include_images:
            with self.source.open_image(image) as data:
                self.tree.copy(relpath, data)

    def image_done(self) -> None:
        self._written += 1
        if self.options.progress is not None and self._written % 1000 == 0:
            self.options.progress(self._written)


Exporter = Callable[[ExportContext], None]  # writes one format's files for ctx.splits() into ctx.tree


def write_provenance(ctx: ExportContext) -> None:
    """The optional sidecar: one JSON line per label with the evidence behind it (pipeline, votes,
    probability), so users can filter by confidence. Withheld splits get none."""
    for split in ctx.splits():
        if not ctx.labelled(split):
            continue
        with ctx.tree.open(f"provenance/{split}.jsonl") as out:
            batch: list[str] = []
            for row in ctx.source.provenance(split):
                batch.append(json.dumps(row, separators=(",", ":")))
                if len(batch) >= 5000:
                    out.write("\n".join(batch) + "\n")
                    batch.clear()
            if batch:
                out.write("\n".join(batch) + "\n")


def write_blacklist(ctx: ExportContext) -> None:
    """``blacklist/{split}.txt`` in every format: ``image_id category_id wnid`` per pair flagged too ambiguous
    to localize (their boxes are not in the localization truth). Written for labelled splits only."""
    wnid = {c.id: c.wnid for c in ctx.categories}
    for split in ctx.splits():
        if not ctx.labelled(split):
            continue
        pairs = sorted(set(ctx.blacklisted.get(split, ())))
        ctx.tree.write_text(
            f"blacklist/{split}.txt", "".join(f"{i} {c} {wnid.get(c, c)}\n" for i, c in pairs)
        )


def manifest_summary(ctx: ExportContext, format_name: str, exported_at: datetime) -> dict[str, Any]:
    """The manifest without its listings of files and images (`listing` adds those)."""
    manifest = {
        "dataset": ctx.source.dataset_name,
        "dataset_version": ctx.source.dataset_version,
        "format": format_name,
        "split": ctx.options.split,
        "exported_at": exported_at.isoformat(),
        "labels_withheld": sorted(set(ctx.splits()) & set(ctx.options.withheld)),
        "images_included": ctx.options.include_images,
        "counts": ctx.counts.as_dict(ctx.categories),
        # Boxes written, by where they came from: drawn by workers, or a model's proposals the crowd accepted.
        "boxes_by_provenance": dict(sorted(ctx.counts.provenance.items())),
        "blacklisted": {s: len(set(pairs)) for s, pairs in sorted(ctx.blacklisted.items())},
        "file_names": ctx.options.file_names,
        "file_names_renamed": ctx.original_names.renamed if ctx.original_names is not None else 0,
    }
    completeness = ctx.source.completeness()
    if completeness is not None:
        manifest["completeness"] = completeness
    return manifest


def hidden_truth_path(out: Path) -> Path:
    """Where the withheld test labels go: beside the export, never inside it."""
    kind = archive_kind(out)
    name = out.name
    for suffix in (".tar.gz", ".tgz", ".zip"):
        if kind and name.lower().endswith(suffix):
            return out.with_name(name[: -len(suffix)] + "-test-groundtruth" + name[-len(suffix) :])
    return out.with_name(name + "-test-groundtruth")


def utcnow() -> datetime:
    return datetime.now(UTC)


def json_line_batches(rows: Iterable[str], sep: str = ",\n", size: int = 2000) -> Iterator[str]:
    """Join pre-rendered JSON values in batches, so the writer is called once per ``size`` rows."""
    batch: list[str] = []
    first = True
    for row in rows:
        batch.append(row)
        if len(batch) >= size:
            yield ("" if first else sep) + sep.join(batch)
            first = False
            batch.clear()
    if batch:
        yield ("" if first else sep) + sep.join(batch)
