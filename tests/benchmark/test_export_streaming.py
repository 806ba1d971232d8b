"""Exports stream: the listings of files and images live on disk while an export runs, the manifest file is
written from them and equals what an in-memory manifest would hold, archives are packed from the listing, and
an export's memory does not grow with its number of images (a structural check on Python allocations, no
timing)."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import tracemalloc
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmark.exporters import FORMATS, ExportOptions, archive, export, ilsvrc, listing, voc
from benchmark.exporters.base import ExportBox, ExportCategory, ExportImage, ExportLabel
from tests.benchmark.test_exporters import generated_source

CATS = [ExportCategory(10 + k, f"n0{k:07d}", f"class {k}") for k in range(5)]


class LazySource:
    """A label source that makes its rows as they are read: holds nothing per image, like a database cursor."""

    dataset_name = "lazy"
    dataset_version = "v1"

    def __init__(self, n_images: int):
        self.n = n_images

    def categories(self):
        return CATS

    def splits(self):
        return ["train", "val"]

    def _ids(self, split: str) -> range:
        return range(1, self.n + 1) if split == "train" else range(self.n + 1, self.n + 1 + self.n // 10)

    def images(self, split: str) -> Iterator[ExportImage]:
        for pk in self._ids(split):
            yield ExportImage(pk, f"{pk:012d}.jpg", 640, 480, split, f"upload-{pk}.jpg")

    def boxes(self, split: str) -> Iterator[ExportBox]:
        for pk in self._ids(split):
            for k in range(3):
                yield ExportBox(pk * 3 + k, pk, CATS[(pk + k) % 5].id, 10.0 * k, 20.0, 10.0 * k + 50, 90.5)

    def labels(self, split: str) -> Iterator[ExportLabel]:
        for pk in self._ids(split):
            yield ExportLabel(pk, CATS[pk % 5].id, True)

    def blacklist(self, split: str):
        return iter(())

    def provenance(self, split: str):
        return iter(())

    def open_image(self, image):
        return io.BytesIO(b"")

    def completeness(self):
        return None


def _manifest_file(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_streamed_manifest_file_equals_the_inline_manifest_and_every_checksum(tmp_path, fmt):
    manifest = export(generated_source(3), fmt, tmp_path / "out", ExportOptions())
    on_disk = _manifest_file(tmp_path / "out")
    assert manifest["listed"]["inline"] is True
    assert on_disk == manifest, "manifest.json holds exactly what the caller got"
    assert on_disk["listed"]["files"] == len(on_disk["files"]) and on_disk["listed"]["images"] == 60
    for relpath, entry in on_disk["files"].items():
        data = (tmp_path / "out" / relpath).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"] and len(data) == entry["bytes"], relpath
    written = {
        p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*") if p.is_file()
    }
    assert written == set(on_disk["files"]) | {"manifest.json"}, "every file listed once, manifest aside"


def test_past_the_inline_limit_the_listings_stay_in_the_manifest_file_only(tmp_path, monkeypatch):
    full = export(generated_source(4), "yolo", tmp_path / "a", ExportOptions())
    monkeypatch.setattr(listing, "INLINE_LIMIT", 10)
    short = export(generated_source(4), "yolo", tmp_path / "b", ExportOptions())
    assert "files" not in short and "images" not in short, "a job row never holds a million entries"
    assert short["listed"] == {"files": full["listed"]["files"], "images": 60, "inline": False}
    on_disk = _manifest_file(tmp_path / "b")
    assert on_disk["images"] == full["images"], "the file still lists every image"
    assert {k: v["sha256"] for k, v in on_disk["files"].items()} == {
        k: v["sha256"] for k, v in full["files"].items()
    }


# COCO is left out: its header holds the time of the export.
@pytest.mark.parametrize("fmt", ["voc", "yolo", "ilsvrc", "imagefolder"])
def test_archives_packed_from_the_listing_hold_the_directory_exports_bytes(tmp_path, fmt):
    source = generated_source(5)
    export(source, fmt, tmp_path / "dir", ExportOptions(withheld=frozenset()))
    export(source, fmt, tmp_path / "out.zip", ExportOptions(withheld=frozenset()))
    export(source, fmt, tmp_path / "out.tar.gz", ExportOptions(withheld=frozenset()))
    expected = {
        p.relative_to(tmp_path / "dir").as_posix(): p.read_bytes()
        for p in (tmp_path / "dir").rglob("*")
        if p.is_file() and p.name != "manifest.json"
    }
    with zipfile.ZipFile(tmp_path / "out.zip") as zf:
        zipped = {n: zf.read(n) for n in zf.namelist() if not n.endswith("/") and n != "manifest.json"}
        folders = {n.rstrip("/") for n in zf.namelist() if n.endswith("/")}
    with tarfile.open(tmp_path / "out.tar.gz") as tf:
        tarred = {m.name: tf.extractfile(m).read() for m in tf.getmembers() if m.isfile()}
    tarred.pop("manifest.json")
    assert zipped == expected and tarred == expected
    empty = {
        p.relative_to(tmp_path / "dir").as_posix()
        for p in (tmp_path / "dir").rglob("*")
        if p.is_dir() and not any(p.iterdir())
    }
    assert empty <= folders, "empty class folders survive packing"


def test_coco_streamed_equals_a_json_dump_of_the_same_content(tmp_path):
    source = LazySource(300)
    export(source, "coco", tmp_path / "c", ExportOptions(withheld=frozenset()))
    data = json.loads((tmp_path / "c/annotations/instances_train.json").read_text())
    assert [i["id"] for i in data["images"]] == list(range(1, 301))
    reference = [
        {
            "id": b.id,
            "image_id": b.image_id,
            "category_id": b.category_id,
            "bbox": [b.x1, b.y1, b.x2 - b.x1, b.y2 - b.y1],
        }
        for b in source.boxes("train")
    ]
    assert [
        {k: a[k] for k in ("id", "image_id", "category_id", "bbox")} for a in data["annotations"]
    ] == reference


def _peak_kib(fmt: str, n: int, scratch: Path) -> float:
    tracemalloc.start()
    try:
        export(LazySource(n), fmt, scratch / f"{fmt}-{n}", ExportOptions(include_images=False))
        return tracemalloc.get_traced_memory()[1] / 1024
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("fmt", ["coco", "voc", "yolo", "ilsvrc"])
def test_an_exports_python_memory_does_not_grow_with_its_images(tmp_path, fmt, monkeypatch):
    """Ten times the images, not ten times the memory: nothing per image is kept (before the listings went to
    disk, the manifest's image list and file checksums grew with every image). The returned manifest's inline
    listings are turned off (short ones are meant to be inline), and the write batches made smaller than the
    small export, so that both sizes fill them and only what grows per image could tell them apart."""
    monkeypatch.setattr(listing, "INLINE_LIMIT", 0)
    monkeypatch.setattr(listing, "BATCH", 50)
    monkeypatch.setattr(voc, "LIST_FLUSH", 50)
    monkeypatch.setattr(ilsvrc, "LIST_FLUSH", 50)
    small = _peak_kib(fmt, 500, tmp_path)
    large = _peak_kib(fmt, 5000, tmp_path)
    assert large < 1.5 * small + 256, f"{fmt}: peak {small:.0f} KiB at 500 images, {large:.0f} KiB at 5,000"


@pytest.mark.django_db
def test_the_class_list_asks_for_one_row_per_class_not_one_per_box():
    """A default ordering added to SELECT DISTINCT made the class list fetch every final box (3,000,000 rows
    at a million images) to find the classes: no DISTINCT query of it may carry an ORDER BY."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from benchmark.selectors import dataset_class_ids
    from tests import factories

    dataset = factories.DatasetFactory()
    with CaptureQueriesContext(connection) as queries:
        dataset_class_ids(dataset)
    distinct = [q["sql"] for q in queries.captured_queries if "DISTINCT" in q["sql"]]
    assert len(distinct) == 6 and not any("ORDER BY" in sql for sql in distinct), distinct


@pytest.mark.parametrize("fmt", ["voc", "yolo", "ilsvrc", "coco", "imagefolder"])
@pytest.mark.parametrize("suffix", [".zip", ".tar.gz"])
def test_an_archive_takes_each_images_files_straight_in_without_a_file_on_disk(
    tmp_path, monkeypatch, fmt, suffix
):
    """A million per-image files written to disk, read back into the archive and deleted cost a file system
    a million creates: each image's annotation file and bytes go straight into the archive. What the scratch
    directory held (kept here instead of deleted) is only the files written in pieces: lists, the manifest."""
    kept: list[Path] = []
    monkeypatch.setattr(archive.shutil, "rmtree", lambda path, **kw: kept.append(Path(path)))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "scratch"))
    (tmp_path / "scratch").mkdir()
    source = generated_source(7)
    manifest = export(source, fmt, tmp_path / f"out{suffix}", ExportOptions(withheld=frozenset()))
    [scratch] = kept
    on_disk = {p.relative_to(scratch).as_posix() for p in scratch.rglob("*") if p.is_file()}
    stems = {Path(line["file_name"]).stem for line in manifest["images"]}
    per_image = {path for path in manifest["files"] if Path(path).stem in stems}
    assert per_image, "the export wrote per-image files"
    assert not on_disk & per_image
    assert on_disk <= set(manifest["files"]) | {"manifest.json"}
    if suffix == ".zip":  # unzipped, an entry is a file readable by all, as a folder export's files are
        with zipfile.ZipFile(tmp_path / "out.zip") as zf:
            modes = {info.filename: info.external_attr >> 16 for info in zf.infolist() if not info.is_dir()}
        assert modes and all(mode & 0o777 == 0o644 for mode in modes.values()), modes


def test_an_export_that_fails_leaves_no_archive(tmp_path):
    class Failing(LazySource):
        def labels(self, split: str) -> Iterator[ExportLabel]:
            yield from super().labels(split)
            raise RuntimeError("the database went away")

    for suffix in (".zip", ".tar.gz"):
        with pytest.raises(RuntimeError, match="went away"):
            export(Failing(20), "voc", tmp_path / f"out{suffix}", ExportOptions(include_images=False))
        assert not (tmp_path / f"out{suffix}").exists()


def test_ilsvrc_class_lists_do_not_depend_on_where_their_batches_end(tmp_path, monkeypatch):
    """The DET lists are written a batch of images at a time (every image in every class's list): batches of
    3 images write the same bytes as one batch of all of them."""
    source = generated_source(11)
    export(source, "ilsvrc", tmp_path / "one", ExportOptions(include_images=False, withheld=frozenset()))
    monkeypatch.setattr(ilsvrc, "LIST_FLUSH", 3)
    export(source, "ilsvrc", tmp_path / "many", ExportOptions(include_images=False, withheld=frozenset()))
    lists = sorted((tmp_path / "one/ImageSets/DET").iterdir())
    assert len(lists) > 3
    for path in lists:
        assert (tmp_path / "many/ImageSets/DET" / path.name).read_bytes() == path.read_bytes(), path.name
    assert any(" -1\n" in p.read_text() for p in lists) and any(" 1\n" in p.read_text() for p in lists)
