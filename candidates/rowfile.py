"""Parse a candidate list: CSV with a header (url, concept, query, source) or JSON Lines with those keys. Pure:
every row comes back either parsed or with the reason it was refused, named by its line."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass

from .addresses import UrlRefused, target_parse

FIELDS = ("url", "concept", "query", "source")
MAX_ROWS = 100_000
MAX_URL = 2000
MAX_QUERY = 500
MAX_SOURCE = 100


class ListRefused(ValueError):
    """The whole file was refused (not CSV/JSONL, no url column, too many rows)."""


@dataclass(frozen=True)
class ListedRow:
    line: int
    url: str
    concept: str
    query: str = ""
    source: str = ""
    error: str = ""  # why the row is refused, empty for a good one


def url_problem(url: str) -> str:
    """Why a URL cannot be a candidate's address (shape only; addresses are checked at download time)."""
    if url.startswith("s3://"):
        bucket, _, key = url[5:].partition("/")
        return "" if bucket and key else "s3 URL needs a bucket and a key (s3://bucket/key)"
    try:
        target_parse(url)
    except UrlRefused as exc:
        return str(exc)
    return ""


def _row(line: int, record: dict, default_source: str) -> ListedRow:
    def text(key: str) -> str:
        value = record.get(key)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise TypeError(key)
        return value.strip()

    try:
        url, concept, query, source = (text(k) for k in FIELDS)
    except TypeError as exc:
        return ListedRow(line, "", "", error=f"field {exc.args[0]!r} must be a string")
    source = source or ("bucket" if url.startswith("s3://") else default_source)
    error = ""
    if not url:
        error = "missing url"
    elif len(url) > MAX_URL:
        error = f"url longer than {MAX_URL} characters"
    elif not concept:
        error = "missing concept (a wnid)"
    elif len(query) > MAX_QUERY:
        error = f"query longer than {MAX_QUERY} characters"
    elif len(source) > MAX_SOURCE:
        error = f"source longer than {MAX_SOURCE} characters"
    else:
        error = url_problem(url)
    return ListedRow(line, url[:MAX_URL], concept[:32], query[:MAX_QUERY], source[:MAX_SOURCE], error)


def rows_parse(name: str, data: bytes, *, default_source: str = "url") -> list[ListedRow]:
    """The rows of a .csv or .jsonl file (by its name), each parsed or refused with its reason; a row that
    repeats an earlier (url, concept, query) is refused naming that line. ListRefused when the file as a whole is."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ListRefused(f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    lower = name.lower()
    if lower.endswith(".csv"):
        rows = _csv_rows(name, text, default_source)
    elif lower.endswith((".jsonl", ".ndjson")):
        rows = _jsonl_rows(text, default_source)
    else:
        raise ListRefused(f"{name}: expected a .csv or .jsonl file")
    if len(rows) > MAX_ROWS:
        raise ListRefused(f"{name}: {len(rows):,} rows, more than {MAX_ROWS:,} per import; split the file")
    seen: dict[tuple[str, str, str], int] = {}
    out = []
    for row in rows:
        key = (row.url, row.concept, row.query)
        if not row.error and key in seen:
            row = ListedRow(
                row.line, row.url, row.concept, row.query, row.source, f"repeats line {seen[key]}"
            )
        elif not row.error:
            seen[key] = row.line
        out.append(row)
    return out


def _csv_rows(name: str, text: str, default_source: str) -> list[ListedRow]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = [h.strip().lower() for h in (reader.fieldnames or [])]
    if "url" not in header or "concept" not in header:
        raise ListRefused(
            f"{name}: the header must name the columns url and concept (and optionally query, source)"
        )
    reader.fieldnames = header
    rows = []
    try:
        for record in reader:
            if not any((v or "").strip() for k, v in record.items() if k is not None):
                continue
            rows.append(_row(reader.line_num, {k: record.get(k) for k in FIELDS}, default_source))
    except csv.Error as exc:
        raise ListRefused(f"{name}: line {reader.line_num}: {exc}") from None
    return rows


def _jsonl_rows(text: str, default_source: str) -> list[ListedRow]:
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            rows.append(ListedRow(number, "", "", error=f"not JSON: {exc.msg}"))
            continue
        if not isinstance(record, dict):
            rows.append(ListedRow(number, "", "", error="not a JSON object"))
            continue
        rows.append(_row(number, record, default_source))
    return rows
