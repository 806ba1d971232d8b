"""The export's per-entry listings (each image's names, each file's checksum) kept on disk while the export
runs, and the manifest written from them as a stream: a million-image export holds one buffer of each in
memory, not a million dictionaries. The manifest returned to the caller (and kept on an export job) carries
the listings inline only while they are short; manifest.json always holds them in full.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from typing import IO, Any

# Past this many entries, the returned manifest leaves a listing to manifest.json (a job row and its API answer
# stay small); the file always has every entry.
INLINE_LIMIT = 10_000
BATCH = 2000  # manifest entries joined per write


class Spool:
    """Lines appended while the export runs, read back in the order written. Kept in an anonymous temporary
    file (gone when closed), so memory is one write buffer whatever the number of lines."""

    def __init__(self) -> None:
        self._file: IO[str] = tempfile.TemporaryFile("w+", encoding="utf-8", buffering=1 << 16)
        self.count = 0

    def add(self, line: str) -> None:
        self._file.write(line + "\n")
        self.count += 1

    def lines(self) -> Iterator[str]:
        self._file.flush()
        self._file.seek(0)
        for line in self._file:
            yield line[:-1]
        self._file.seek(0, 2)  # further lines go after the last

    def close(self) -> None:
        self._file.close()


def file_line(relpath: str, sha256: str, size: int) -> str:
    # A tab cannot appear in the paths exporters write (ids, wnids, class slugs and split names).
    return f"{relpath}\t{sha256}\t{size}"


def _file_fields(line: str) -> tuple[str, str, int]:
    relpath, sha256, size = line.split("\t")
    return relpath, sha256, int(size)


def parse_file_line(line: str) -> tuple[str, dict[str, Any]]:
    relpath, sha256, size = _file_fields(line)
    return relpath, {"sha256": sha256, "bytes": size}


def file_entry_json(line: str) -> str:
    """The manifest's entry of a file line as `json.dumps(relpath) + ": " + json.dumps(entry)` of
    `parse_file_line` writes it, without the dict and two encoder calls per file."""
    relpath, sha256, size = _file_fields(line)
    return f'{json_str(relpath)}: {{"sha256": "{sha256}", "bytes": {size}}}'


def image_line(image_id: int, split: str, file_name: str, original_name: str) -> str:
    return (
        f'{{"id":{image_id},"split":{json_str(split)},"file_name":{json_str(file_name)},'
        f'"original_name":{json_str(original_name)}}}'
    )


def json_str(value: str | None) -> str:
    """`json.dumps(value)` for a string (or None), without the encoder's call for the usual file name: printable
    ASCII with no quote or backslash is written as it is, in quotes, which is what json.dumps writes for it
    (it escapes only those, control characters and, with ensure_ascii, everything past ASCII)."""
    if (
        value is not None
        and value.isascii()
        and value.isprintable()
        and '"' not in value
        and "\\" not in value
    ):
        return f'"{value}"'
    return json.dumps(value)


def inline_listings(summary: dict[str, Any], files: Spool, images: Spool) -> dict[str, Any]:
    """The manifest a caller gets: the summary, with the listings inline while each is at most INLINE_LIMIT
    entries (`listed` says how many there are and whether they are here)."""
    manifest = dict(summary)
    inline = files.count <= INLINE_LIMIT and images.count <= INLINE_LIMIT
    manifest["listed"] = {"files": files.count, "images": images.count, "inline": inline}
    if inline:
        manifest["files"] = dict(parse_file_line(line) for line in files.lines())
        manifest["images"] = [json.loads(line) for line in images.lines()]
    return manifest


def write_manifest(out: IO[str], summary: dict[str, Any], files: Spool, images: Spool) -> None:
    """manifest.json: the summary's keys, then ``files`` (path -> sha256 and bytes, in the order written) and
    ``images`` (one object per image), streamed from the spools in batches."""
    head = json.dumps(
        {**summary, "listed": {"files": files.count, "images": images.count, "inline": True}}, indent=1
    )
    out.write(head[:-2] + ',\n "files": {')
    batch: list[str] = []
    for k, line in enumerate(files.lines()):
        batch.append(("\n  " if k == 0 else ",\n  ") + file_entry_json(line))
        if len(batch) >= BATCH:
            out.write("".join(batch))
            batch.clear()
    out.write("".join(batch) + ("\n }" if files.count else "}") + ',\n "images": [')
    batch.clear()
    for k, line in enumerate(images.lines()):
        batch.append(("\n  " if k == 0 else ",\n  ") + line)
        if len(batch) >= BATCH:
            out.write("".join(batch))
            batch.clear()
    out.write("".join(batch) + ("\n ]" if images.count else "]") + "\n}\n")
