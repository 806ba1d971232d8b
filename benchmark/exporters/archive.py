"""Where an export is written: a directory, or an archive (.zip or .tar.gz). Into an archive, a file written
whole (an image's annotation file, an image's bytes) goes straight in as an entry, in the order written, with no
file of its own on disk: a million per-image files cost a million archive entries, not a million files created,
read back and deleted. Files written in pieces while others are (the split and class lists, which an exporter
keeps open side by side) go to a scratch directory and are added after, with the folders and the manifest.
Neither the tree's listing nor the archive's index is held in memory: the zip's central directory (one record
per file, about 500 bytes each in zipfile's objects, so half a gigabyte at a million per-image files) is kept
on disk until the archive is closed.

An entry written whole is compressed and put in with its header complete, in one pass: zipfile's own `writestr`
writes a header, the data, then seeks back to rewrite the header with the CRC and sizes (each seek flushes
the file's buffer), and makes a deflate stream with a 32 KiB window and its 256 KiB of state for every entry
(about 50 µs before any data, for a VOC annotation of a few hundred bytes). An entry of at most 4 KiB is
deflated with a 4 KiB window, which reaches every byte of it, so it compresses as well for a tenth of the set-up.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import stat
import struct
import tarfile
import tempfile
import time
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from .base import OutputTree


def archive_kind(out: Path) -> str | None:
    name = out.name.lower()
    if name.endswith(".zip"):
        return "zip"
    if name.endswith((".tar.gz", ".tgz")):
        return "gztar"
    return None


# A central directory file header (PKWARE's APPNOTE 4.3.12), as zipfile packs it.
_CENTRAL_SIGNATURE = b"PK\x01\x02"
_CENTRAL_RECORD = struct.Struct("<4s4B4HL2L5H2L")


def central_record(info: zipfile.ZipInfo) -> bytes:
    """An entry's record in the zip's central directory, byte for byte as zipfile's close writes it (the ZIP64
    extra field for sizes or an offset past 4 GiB included); stored and deflated entries only."""
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise ValueError(f"an export zip holds stored or deflated entries, not method {info.compress_type}")
    year, month, day, hour, minute, second = info.date_time
    file_size, compress_size, offset = info.file_size, info.compress_size, info.header_offset
    zip64: list[int] = []
    if file_size > zipfile.ZIP64_LIMIT or compress_size > zipfile.ZIP64_LIMIT:
        zip64 += [file_size, compress_size]
        file_size = compress_size = 0xFFFFFFFF
    if offset > zipfile.ZIP64_LIMIT:
        zip64.append(offset)
        offset = 0xFFFFFFFF
    extra, min_version = info.extra, 0
    if zip64:
        own = zipfile._strip_extra(extra, (1,))  # type: ignore[attr-defined]
        extra = struct.pack("<HH" + "Q" * len(zip64), 1, 8 * len(zip64), *zip64) + own
        min_version = zipfile.ZIP64_VERSION
    filename, flag_bits = info._encodeFilenameFlags()  # type: ignore[attr-defined]
    return (
        _CENTRAL_RECORD.pack(
            _CENTRAL_SIGNATURE,
            max(min_version, info.create_version),
            info.create_system,
            max(min_version, info.extract_version),
            info.reserved,
            flag_bits,
            info.compress_type,
            hour << 11 | minute << 5 | second // 2,
            (year - 1980) << 9 | month << 5 | day,
            info.CRC,
            compress_size,
            file_size,
            len(filename),
            len(extra),
            len(info.comment),
            0,
            info.internal_attr,
            info.external_attr,
            offset,
        )
        + filename
        + extra
        + info.comment
    )


class _SpooledEntries:
    """zipfile's list of entries, kept on disk as their central directory records, encoded as each entry is
    appended (`central_record`). zipfile only appends to it and counts it; `StreamingZipFile` copies the
    records into the zip at its close, and zipfile's own end-of-archive code, which would encode each entry
    again, iterates nothing."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile()
        self._count = 0

    def append(self, info: zipfile.ZipInfo) -> None:
        self._file.write(central_record(info))
        self._count += 1

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[zipfile.ZipInfo]:
        return iter(())

    def copy_to(self, target: IO[bytes]) -> None:
        self._file.flush()
        self._file.seek(0)
        shutil.copyfileobj(self._file, target, COPY_CHUNK)
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

    def write_whole(self, info: zipfile.ZipInfo, data: bytes) -> None:
        """`data` deflated at the zip's level as the entry `info`, its header written once with the CRC and
        sizes (no seek back); what `writestr` stores, without its per-entry costs (module docstring)."""
        level = zlib.Z_DEFAULT_COMPRESSION if self.compresslevel is None else self.compresslevel
        small = len(data) <= SMALL_ENTRY
        deflate = zlib.compressobj(level, zlib.DEFLATED, -12 if small else -15, 4 if small else 8)
        packed = deflate.compress(data) + deflate.flush()
        info.compress_type = zipfile.ZIP_DEFLATED
        info.flag_bits = 0
        info.file_size, info.compress_size, info.CRC = len(data), len(packed), zlib.crc32(data)
        fp = self.fp
        assert fp is not None, "the zip is closed"
        # zipfile's own state, as its `mkdir` uses it (not in the type stubs).
        with self._lock:  # type: ignore[attr-defined]
            if self._writing:  # type: ignore[attr-defined]
                raise ValueError("another entry of the zip is open for writing")
            # Every write of zipfile's leaves the file at `start_dir`, the end of the last entry.
            info.header_offset = self.start_dir
            self._writecheck(info)  # type: ignore[attr-defined]
            self._didModify = True
            header = info.FileHeader()  # with ZIP64's sizes when the entry needs them
            fp.write(header)
            fp.write(packed)
            self.start_dir += len(header) + len(packed)
            self.filelist.append(info)

    def _write_end_record(self) -> None:
        # The central directory goes in first, as encoded entry by entry; zipfile then writes the end records
        # (ZIP64's when the count, offset or size needs them), reading the directory's size from the file.
        self.filelist.copy_to(self.fp)  # type: ignore[attr-defined]
        super()._write_end_record()  # type: ignore[misc]

    def close(self) -> None:
        entries = self.filelist
        try:
            super().close()
        finally:
            if isinstance(entries, _SpooledEntries):
                entries.close()


COPY_CHUNK = 1 << 20
# An entry written whole up to this size is deflated with a window of this size (module docstring).
SMALL_ENTRY = 4096
# A copied file (an image) is held in memory up to this size on its way into a tar (whose header needs its size
# first); a larger one spills to a temporary file.
TAR_SPOOL = 8 << 20


def copy_hashed(source: IO[bytes], target: IO[bytes]) -> tuple[str, int]:
    """Copy `source` into `target` in chunks; the sha256 and size of what was copied."""
    digest, size = hashlib.sha256(), 0
    while chunk := source.read(COPY_CHUNK):
        digest.update(chunk)
        target.write(chunk)
        size += len(chunk)
    return digest.hexdigest(), size


class ZipSink:
    """A zip being written entry by entry (deflate level 1: exports are mostly short text and JPEGs). Every
    entry carries the time the zip was begun."""

    LEVEL = 1

    def __init__(self, out: Path) -> None:
        self._zip = StreamingZipFile(out, compression=zipfile.ZIP_DEFLATED, compresslevel=self.LEVEL)
        self._date_time = time.localtime()[:6]

    def _entry(self, relpath: str) -> zipfile.ZipInfo:
        """An entry as a file on disk would make it: a regular file readable by all (zipfile's own default
        for written data is owner-only, 0600, which an unzipped export would keep)."""
        info = zipfile.ZipInfo(relpath, date_time=self._date_time)
        info.compress_type = zipfile.ZIP_DEFLATED
        info._compresslevel = self.LEVEL  # type: ignore[attr-defined]  # zipfile reads it when opening the entry
        info.external_attr = (stat.S_IFREG | 0o644) << 16
        return info

    def write(self, relpath: str, data: bytes) -> None:
        self._zip.write_whole(self._entry(relpath), data)

    def copy(self, relpath: str, source: IO[bytes]) -> tuple[str, int]:
        """Copy `source` in as `relpath`; its sha256 and size."""
        # A plain entry, no ZIP64 record: images are far below 2 GiB (CROWDLABEL_MAX_IMAGE_BYTES); zipfile
        # refuses to write past it rather than write a broken entry.
        with self._zip.open(self._entry(relpath), "w") as entry:
            return copy_hashed(source, entry)

    def add(self, path: Path, relpath: str) -> None:
        """A file or folder of the scratch directory, as `relpath`."""
        self._zip.write(path, relpath)

    def close(self) -> None:
        self._zip.close()


class TarSink:
    """A gzipped tar being written member by member."""

    def __init__(self, out: Path) -> None:
        self._tar = tarfile.open(out, "w:gz", compresslevel=1)
        self._added = 0

    def _member(self, relpath: str, size: int) -> tarfile.TarInfo:
        info = tarfile.TarInfo(relpath)
        info.size, info.mode, info.mtime = size, 0o644, int(time.time())
        return info

    def _forget(self) -> None:
        # tarfile remembers every member only to list them back; we never do.
        self._added += 1
        if self._added % 10_000 == 0:
            self._tar.members.clear()  # type: ignore[attr-defined]

    def write(self, relpath: str, data: bytes) -> None:
        self._tar.addfile(self._member(relpath, len(data)), io.BytesIO(data))
        self._forget()

    def copy(self, relpath: str, source: IO[bytes]) -> tuple[str, int]:
        with tempfile.SpooledTemporaryFile(max_size=TAR_SPOOL) as held:
            digest, size = copy_hashed(source, held)
            held.seek(0)
            self._tar.addfile(self._member(relpath, size), held)
        self._forget()
        return digest, size

    def add(self, path: Path, relpath: str) -> None:
        self._tar.add(path, relpath, recursive=False)
        self._forget()

    def close(self) -> None:
        self._tar.close()


ArchiveSink = ZipSink | TarSink


def archive_sink(out: Path) -> ArchiveSink:
    kind = archive_kind(out)
    if kind == "zip":
        return ZipSink(out)
    if kind == "gztar":
        return TarSink(out)
    raise ValueError(f"not an archive name: {out}")


@contextmanager
def output_tree(out: Path) -> Iterator[OutputTree]:
    """A tree to fill: ``out`` itself, or an archive written as the tree is filled (with a scratch directory for
    the files written in pieces) when it names one. A directory that exists must be empty, so an export never
    mixes with stale files. An archive is complete once this returns; an export that fails leaves none."""
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
    out.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="export-", dir=os.environ.get("TMPDIR")))
    sink = archive_sink(out)
    tree = OutputTree(scratch, sink)
    done = False
    try:
        yield tree
        # Folders made empty are kept as entries: a layout may promise a folder per class.
        for relpath in tree.scratch_entries():
            sink.add(scratch / relpath, relpath)
        done = True
    finally:
        tree.close()
        sink.close()
        shutil.rmtree(scratch, ignore_errors=True)
        if not done:
            out.unlink(missing_ok=True)
