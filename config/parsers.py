"""DRF request parsers that refuse what would otherwise reach a view as a 500: JSON nested deeper than
MAX_JSON_DEPTH, numbers no column holds (NaN, Infinity, 1e400, integers beyond 64 bits) in a JSON body, and NUL
characters or lone surrogates in any string of a JSON or multipart body (400, naming the field). JSON is every
operation's body, multipart only a file upload's. Body size is bounded before parsing, by
config/requestcheck.py."""

from __future__ import annotations

from django.conf import settings
from rest_framework import parsers
from rest_framework.exceptions import ParseError
from rest_framework.utils import json

from config.textcheck import (
    BadText,
    NestingTooDeep,
    check_strings,
    check_tree,
    json_constant,
    json_float,
    json_int,
)

# Our deepest real payload (a box submit) nests 4 levels; 32 leaves room and stops a recursion bomb.
MAX_JSON_DEPTH = 32


class JSONParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read() if stream is not None else b""
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            # Numbers the platform cannot hold (NaN, Infinity, 1e400, integers beyond 64 bits) decode to
            # markers that check_tree refuses, naming their field.
            data = json.loads(
                raw.decode(encoding), parse_float=json_float, parse_int=json_int, parse_constant=json_constant
            )
        except RecursionError:
            raise ParseError(f"JSON parse error - nested deeper than {MAX_JSON_DEPTH} levels") from None
        except (ValueError, LookupError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            raise ParseError(f"JSON parse error - {exc}") from None
        try:
            check_tree(data, max_depth=MAX_JSON_DEPTH)
        except (NestingTooDeep, BadText) as exc:
            raise ParseError(str(exc)) from None
        return data


def _check_form(data, files=None) -> None:
    try:
        check_strings((key, value) for key, values in data.lists() for value in values)
        if files is not None:
            check_strings((key, f.name or "") for key, values in files.lists() for f in values)
    except BadText as exc:
        raise ParseError(str(exc)) from None


class MultiPartParser(parsers.MultiPartParser):
    def parse(self, stream, media_type=None, parser_context=None):
        result = super().parse(stream, media_type, parser_context)
        _check_form(result.data, result.files)
        return result
