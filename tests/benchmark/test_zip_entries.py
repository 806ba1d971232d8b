"""The export zip's own entry writer (`archive.StreamingZipFile.write_whole`) and its on-disk central directory:
what any zip reader reads back equals what was written, each entry as zipfile's own `writestr` would describe it,
whatever the entry's size (empty, small enough for the small window, larger, incompressible), mixed with entries
zipfile writes itself (a copied stream, a scratch file), and past 65,535 entries (ZIP64's end record)."""

from __future__ import annotations

import io
import os
import random
import stat
import zipfile
import zlib

import pytest

from benchmark.exporters import archive


def _payloads() -> dict[str, bytes]:
    rng = random.Random(7)
    xml = b"<annotation><object><name>dog</name><bndbox><xmin>12</xmin></bndbox></object></annotation>\n"
    return {
        "empty.txt": b"",
        "one.txt": b"x",
        "Annotations/small.xml": xml * 3,
        "at_the_limit.txt": (xml * 100)[: archive.SMALL_ENTRY],
        "past_the_limit.txt": (xml * 100)[: archive.SMALL_ENTRY + 1],
        "large.json": b"".join(b'{"id": %d, "bbox": [1, 2, 3, 4]}\n' % k for k in range(40_000)),
        "random.bin": rng.randbytes(3 * archive.SMALL_ENTRY + 17),
        "names/ünïcode ✓.txt": "ünïcode\n".encode(),
    }


def test_whole_entries_read_back_as_written_beside_zipfiles_own_entries(tmp_path):
    payloads = _payloads()
    scratch = tmp_path / "scratch.txt"
    scratch.write_bytes(b"written in pieces\n" * 1000)
    sink = archive.ZipSink(tmp_path / "out.zip")
    items = list(payloads.items())
    for relpath, data in items[:4]:
        sink.write(relpath, data)
    digest, size = sink.copy("JPEGImages/copied.jpg", io.BytesIO(payloads["random.bin"]))
    for relpath, data in items[4:]:
        sink.write(relpath, data)
    sink.add(scratch, "ImageSets/Main/train.txt")
    sink.close()
    assert size == len(payloads["random.bin"]) and len(digest) == 64

    with zipfile.ZipFile(tmp_path / "out.zip") as zf:
        assert zf.testzip() is None, "every entry's CRC checks"
        read = {info.filename: zf.read(info) for info in zf.infolist()}
        infos = {info.filename: info for info in zf.infolist()}
    assert read == {
        **payloads,
        "JPEGImages/copied.jpg": payloads["random.bin"],
        "ImageSets/Main/train.txt": scratch.read_bytes(),
    }
    # In the order written, each a regular file readable by all, deflated, with the zip's one time.
    assert list(infos)[:5] == [*[r for r, _ in items[:4]], "JPEGImages/copied.jpg"]
    assert {stat.S_IMODE(i.external_attr >> 16) for n, i in infos.items() if n in payloads} == {0o644}
    assert {i.compress_type for n, i in infos.items() if n in payloads} == {zipfile.ZIP_DEFLATED}
    assert len({infos[n].date_time for n in payloads}) == 1


def test_a_whole_entry_is_described_as_zipfiles_writestr_describes_it(tmp_path):
    data = _payloads()["Annotations/small.xml"]
    sink = archive.ZipSink(tmp_path / "ours.zip")
    sink.write("a.xml", data)
    sink.close()
    with zipfile.ZipFile(
        tmp_path / "theirs.zip", "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1
    ) as zf:
        info = zipfile.ZipInfo("a.xml", date_time=(2026, 12, 7, 12, 0, 0))
        info.external_attr = (stat.S_IFREG | 0o644) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        zf.writestr(info, data)
    with zipfile.ZipFile(tmp_path / "ours.zip") as a, zipfile.ZipFile(tmp_path / "theirs.zip") as b:
        ours, theirs = a.getinfo("a.xml"), b.getinfo("a.xml")
        fields = ("CRC", "file_size", "flag_bits", "compress_type", "external_attr", "header_offset", "extra")
        assert {f: getattr(ours, f) for f in fields} == {f: getattr(theirs, f) for f in fields}
        assert a.read("a.xml") == b.read("a.xml") == data
    # The small window compresses a small entry as well as zipfile's 32 KiB one (its data fits in either).
    assert ours.compress_size <= theirs.compress_size + 2
    # The local header is the central directory's twin: a streaming reader (no central directory) agrees.
    raw = (tmp_path / "ours.zip").read_bytes()
    name_len, extra_len = int.from_bytes(raw[26:28], "little"), int.from_bytes(raw[28:30], "little")
    assert int.from_bytes(raw[14:18], "little") == zlib.crc32(data)
    assert int.from_bytes(raw[18:22], "little") == ours.compress_size
    start = 30 + name_len + extra_len
    assert zlib.decompress(raw[start : start + ours.compress_size], -15) == data


def test_a_zip_past_65535_entries_gets_zip64s_end_record_and_reads_back(tmp_path):
    n = 70_000
    sink = archive.ZipSink(tmp_path / "many.zip")
    for k in range(n):
        sink.write(f"labels/{k:06d}.txt", b"%d 0.5 0.5 0.1 0.1\n" % (k % 80))
    sink.close()
    with zipfile.ZipFile(tmp_path / "many.zip") as zf:
        infos = zf.infolist()
        assert len(infos) == n
        assert zf.read(infos[-1]) == b"%d 0.5 0.5 0.1 0.1\n" % ((n - 1) % 80)
        assert zf.read(infos[12_345]) == b"%d 0.5 0.5 0.1 0.1\n" % (12_345 % 80)
    assert b"PK\x06\x06" in (tmp_path / "many.zip").read_bytes()[-200:], "a ZIP64 end record"


def test_an_entry_cannot_be_written_whole_while_another_is_open(tmp_path):
    sink = archive.ZipSink(tmp_path / "out.zip")
    with sink._zip.open(sink._entry("open.bin"), "w") as entry:
        entry.write(b"half")
        with pytest.raises(ValueError, match="open for writing"):
            sink.write("other.txt", b"data")
    sink.close()
    with zipfile.ZipFile(tmp_path / "out.zip") as zf:
        assert zf.namelist() == ["open.bin"] and zf.read("open.bin") == b"half"
    assert os.path.getsize(tmp_path / "out.zip") > 0


def _zipfiles_directory(infos: list[zipfile.ZipInfo]) -> bytes:
    """The central directory zipfile's own close writes for these entries (its end records cut off)."""
    buffer = io.BytesIO()
    zf = zipfile.ZipFile(buffer, "w")
    zf.filelist = list(infos)
    zf._write_end_record()
    raw = buffer.getvalue()
    end = raw.find(b"PK\x06\x06") if b"PK\x06\x06" in raw else raw.rfind(b"PK\x05\x06")
    zf.fp = None  # nothing more to write
    return raw[:end]


def test_central_records_are_the_bytes_zipfile_writes_for_them():
    def entry(name, **fields):
        info = zipfile.ZipInfo(name, date_time=(2026, 12, 7, 23, 59, 58))
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = (stat.S_IFREG | 0o644) << 16
        for key, value in fields.items():
            setattr(info, key, value)
        return info

    giant = zipfile.ZIP64_LIMIT + 10
    infos = [
        entry("a.xml", CRC=123, compress_size=200, file_size=400, header_offset=0),
        entry("ünïcode ✓/b.txt", CRC=1, compress_size=1, file_size=1, header_offset=4096),
        entry("past 4 GiB.xml", CRC=5, compress_size=20, file_size=40, header_offset=giant),
        entry("huge.bin", CRC=6, compress_size=giant, file_size=giant + 1, header_offset=giant * 2),
        entry(
            "stored/",
            compress_type=zipfile.ZIP_STORED,
            external_attr=0o40755 << 16 | 0x10,
            header_offset=9,
            CRC=0,
            compress_size=0,
            file_size=0,
        ),
        entry(
            "with extra.txt",
            extra=b"\x0a\x00\x04\x00abcd",
            CRC=7,
            compress_size=3,
            file_size=3,
            header_offset=giant,
        ),
    ]
    assert b"".join(archive.central_record(i) for i in infos) == _zipfiles_directory(infos)
    with pytest.raises(ValueError, match="stored or deflated"):
        archive.central_record(entry("x.bz2", compress_type=zipfile.ZIP_BZIP2))
