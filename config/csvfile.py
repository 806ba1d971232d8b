"""Every CSV the platform writes goes through this writer, which neutralizes spreadsheet formulas (OWASP's "CSV
Injection" rule): a text cell that starts with =, +, -, @, a tab or a carriage return gets a leading ' so a
spreadsheet shows it as text instead of running it. Numbers are written as they are."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from typing import IO

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutralize(value: object) -> object:
    """The cell as a spreadsheet may safely open it: text that could start a formula, prefixed with '."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


class DictWriter:
    """`csv.DictWriter` whose cells (and header) are neutralized; quoting is the csv module's."""

    def __init__(self, out: IO[str], fieldnames: Iterable[str]):
        self.fieldnames = list(fieldnames)
        self._writer = csv.DictWriter(out, fieldnames=self.fieldnames)

    def writeheader(self) -> None:
        self._writer.writerow({name: neutralize(name) for name in self.fieldnames})

    def writerow(self, row: Mapping[str, object]) -> None:
        self._writer.writerow({key: neutralize(value) for key, value in row.items()})

    def writerows(self, rows: Iterable[Mapping[str, object]]) -> None:
        for row in rows:
            self.writerow(row)


def csv_text(fieldnames: Iterable[str], rows: Iterable[Mapping[str, object]]) -> str:
    out = io.StringIO()
    writer = DictWriter(out, fieldnames)
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()
