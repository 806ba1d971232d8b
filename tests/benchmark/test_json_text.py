"""The exporters' hand-written JSON: the same text json.dumps writes, for the strings a dataset can hold."""

from __future__ import annotations

import json
import random

import pytest

from benchmark.exporters.coco import _attributes_json
from benchmark.exporters.listing import image_line, json_str

TRICKY = [
    "a.jpg",
    "00001.JPEG",
    'q"uote',
    "back\\slash",
    "tab\tx",
    "new\nline",
    "del\x7f",
    "é.jpg",
    "日本.png",
    "",
]
TRICKY += ["ctrl\x01", "sp ace.png", "~!@#$%^&*()_+{}|:<>?`-=[];',./", "\u2028", "\ud83d\ude00", None]


def random_strings(n: int) -> list[str]:
    rng = random.Random(7)
    return ["".join(chr(rng.randrange(0, 400)) for _ in range(rng.randrange(0, 10))) for _ in range(n)]


@pytest.mark.parametrize("value", TRICKY)
def test_a_string_is_written_as_json_dumps_writes_it(value):
    assert json_str(value) == json.dumps(value)
    name = value or "x.jpg"
    expected = {"id": 12, "split": "val", "file_name": name, "original_name": value}
    assert image_line(12, "val", name, value) == json.dumps(expected, separators=(",", ":"))


def test_random_strings_are_written_as_json_dumps_writes_them():
    for value in random_strings(5000):
        assert json_str(value) == json.dumps(value), repr(value)


def test_box_attributes_are_encoded_once_per_combination_and_keep_bools_apart_from_ints():
    assert _attributes_json(True, False, False, "front", "") == (
        '{"difficult": true, "truncated": false, "occluded": false, "viewpoint": "front"}'
    )
    assert _attributes_json(1, False, False, "front", "").startswith('{"difficult": 1,')
    assert '"fine_label": "dalmatian"' in _attributes_json(False, True, True, "unspecified", "dalmatian")


def test_the_manifest_lists_files_as_json_dumps_writes_them():
    import io

    from benchmark.exporters.listing import Spool, file_line, parse_file_line, write_manifest

    files, images = Spool(), Spool()
    for k, path in enumerate(["a/b.xml", 'q"x.jpg', "日本.png", "back\\slash.txt"]):
        files.add(file_line(path, "ab" * 32, 1000 * k + 7))
    out = io.StringIO()
    write_manifest(out, {"format": "voc"}, files, images)
    entries = (parse_file_line(line) for line in files.lines())
    expected = "".join(
        ("\n  " if k == 0 else ",\n  ") + json.dumps(path) + ": " + json.dumps(entry)
        for k, (path, entry) in enumerate(entries)
    )
    assert expected in out.getvalue()
    assert json.loads(out.getvalue())["files"]["日本.png"] == {"sha256": "ab" * 32, "bytes": 2007}
