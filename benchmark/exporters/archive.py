"""Where an export is written: a directory, or a scratch directory packed into a .zip or .tar.gz, file by file
in the order the export wrote them. Neither the tree's listing nor the archive's index is held in memory: the
zip's central directory (one record per file, about 500 bytes each in zipfile's objects, so half a gigabyte
at a million per-image files) is kept on disk until the archive is closed.
"""

from __future__ import annotations

import os
import pickle
import shutil
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import OutputTree


def archive_kind(out: Path) -> str | None:
    name = out.name.lower()
    if name.endswith(".zip"):
        return "zip"
    if name.endswith((".tar.gz", ".tgz")):
        return "gztar"
    return None


class _SpooledEntries:
    """zipfile's list of entries, kept on disk: zipfile appends each entry after writing it, counts them
    and, when closing, iterates them once to write the central directory; nothing else is asked of it."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile()
        self._count = 0

    def append(self, info: zipfile.ZipInfo) -> None:
        pickle.dump(info, self._file, protocol=pickle.HIGHEST_PROTOCOL)
        self._count += 1

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[zipfile.ZipInfo]:
        self._file.flush()
        self._file.seek(0)
        for _ in range(self._count):
            yield pickle.load(self._file)
        self._file.seek(0, 2)

    def close(self) -> None:
        self._file.close()


class _Unnamed(dict):
    """zipfile's name -> entry index, left empty: an export writes each path once (its listing says so), and
    the index would hold every entry again."""

    def __setitem__(self, key, value) -> None:
        pass


class StreamingZipFile(zipfile.ZipFile):
    """A zip being written whose memory does not grow with its number of entries (write-only)."""

    def __init__(self, file: Path, *, compression: int, compresslevel: int) -> None:
        super().__init__(file, "w", compression=compression, compresslevel=compresslevel)
        self.filelist = _SpooledEntries()  # type: ignore[assignment]
        self.NameToInfo = _Unnamed()

    def close(self) -> None:
        entries = self.filelist
        try:
            super().close()
        finally:
            if isinstance(entries, _SpooledEntries):
                entries.close()


def pack(tree: OutputTree, out: Path) -> None:
    """Pack a finished export into ``out`` (.zip or .tar.gz), file by file in the order written. Folders made
    empty are kept as entries: a layout may promise a folder per class."""
    kind = archive_kind(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if kind == "zip":
        with StreamingZipFile(out, compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
            for relpath in tree.entries():
                zf.write(tree.root / relpath, relpath)
    elif kind == "gztar":
        with tarfile.open(out, "w:gz", compresslevel=1) as tf:
            for k, relpath in enumerate(tree.entries()):
                tf.add(tree.root / relpath, relpath, recursive=False)
                if k % 10_000 == 0:
                    # tarfile remembers every member only to list them back; we never do.
                    tf.members.clear()  # type: ignore[attr-defined]
    else:
        raise ValueError(f"not an archive name: {out}")


@contextmanager
def output_tree(out: Path) -> Iterator[OutputTree]:
    """A tree to fill: ``out`` itself, or a scratch directory packed into ``out`` when it names an
    archive. A directory that exists must be empty, so an export never mixes with stale files."""
    from .base import OutputTree

    if archive_kind(out) is None:
        if out.exists() and any(out.iterdir()):
            raise ValueError(f"output directory {out} is not empty")
        out.mkdir(parents=True, exist_ok=True)
        tree = OutputTree(out)
        try:
            yield tree
        finally:
            tree.close()
        return
    scratch = Path(tempfile.mkdtemp(prefix="export-", dir=os.environ.get("TMPDIR")))
    tree = OutputTree(scratch)
    try:
        yield tree
        pack(tree, out)
    finally:
        tree.close()
        shutil.rmtree(scratch, ignore_errors=True)
