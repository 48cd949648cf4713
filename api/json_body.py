"""Request bodies as JSON, with nesting bounded while parsing (issue 14, item 5).

A depth walk over the parsed value cost seconds on a few megabytes, on the event
loop, before the token was checked. Here a body that opens no more brackets
than :data:`MAX_JSON_DEPTH` (most of them) is parsed as it is, and any other
inside enough arrays that orjson's own nesting limit falls there; input orjson
does not read as the standard library does gets its depth checked the same way
on a transcoded copy before the standard library reads it.
"""

from __future__ import annotations

import contextlib
import gc
import json
import re
from collections.abc import Iterator
from typing import Any

import orjson

from sdk import jsoncodec
from sdk.errors import InvalidRequestError

__all__ = ["MAX_JSON_DEPTH", "TooDeep", "decode_bounded", "decode_json"]


#: Deepest nesting of objects and arrays accepted in a body (the reference's
#: ``max_json_depth`` default); deeper input would exhaust the recursion limit
#: of whatever later walks the value.
MAX_JSON_DEPTH = 500

#: A body is parsed inside this many arrays, so that orjson's own nesting limit
#: (1024) refuses a body nested deeper than :data:`MAX_JSON_DEPTH` while parsing:
#: no walk over the value afterwards, which cost seconds on a few megabytes.
_ORJSON_DEPTH = 1024
_PAD = _ORJSON_DEPTH - MAX_JSON_DEPTH
_OPEN, _CLOSE = b"[" * _PAD, b"]" * _PAD


class TooDeep(InvalidRequestError):
    def __init__(self) -> None:
        super().__init__(f"failed to parse JSON input: nesting deeper than {MAX_JSON_DEPTH} levels")


def decode_json(raw: bytes) -> Any:
    """A body's JSON (``sdk.jsoncodec.loads``: orjson, exact as the standard library)."""
    return jsoncodec.loads(raw)


def _too_deep(value: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def decode_bounded(raw: bytes) -> Any:
    """:func:`decode_json`, refusing nesting deeper than :data:`MAX_JSON_DEPTH` while
    parsing (inside :data:`_PAD` arrays, orjson's limit falls at the right depth).
    A small body (every KV write) is parsed without entering the collector pause's
    context manager, whose generator frames cost more than its parse."""
    if len(raw) < _GC_PAUSE_BYTES:
        return _decode(raw)
    with _gc_paused(len(raw)):
        return _decode(raw)


def _decode(raw: bytes) -> Any:
    try:
        value = _bounded_loads(raw)
    except orjson.JSONDecodeError:
        return _decode_rare(raw)  # what orjson does not read as the standard library does
    if jsoncodec.has_long_digit_run(raw):
        return decode_json(raw)  # integers beyond 64 bits, read exactly
    return value


def _bounded_loads(raw: bytes) -> Any:
    """orjson's reading of ``raw``, bounded in depth. A body that opens at most
    :data:`MAX_JSON_DEPTH` arrays and objects (brackets inside strings counted too)
    cannot nest deeper, so it is read as it is: the padded parse builds and unwraps
    :data:`_PAD` lists, which was a quarter of a KV write's CPU on the active node."""
    if raw.count(b"[") + raw.count(b"{") <= MAX_JSON_DEPTH:
        return orjson.loads(raw)
    return _padded_loads(raw)


def _padded_loads(raw: bytes) -> Any:
    """orjson's reading of ``raw`` inside :data:`_PAD` arrays, unwrapped; ``_TooDeep``
    past the depth limit, ``JSONDecodeError`` for anything else it refuses."""
    try:
        value = orjson.loads(b"".join((_OPEN, raw, _CLOSE)))
    except orjson.JSONDecodeError as exc:
        if str(exc).startswith("depth limit exceeded"):
            raise TooDeep() from None
        raise
    for _ in range(_PAD):
        # A body such as ``1],[2`` parses once padded: each level must hold one item.
        if not isinstance(value, list) or len(value) != 1:
            raise orjson.JSONDecodeError("not one JSON value", "", 0)
        value = value[0]
    return value


#: A ``\uXXXX`` escape of a UTF-16 surrogate: orjson refuses a lone one, the
#: standard library reads it.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _decode_rare(raw: bytes) -> Any:
    """The standard library's reading (BOMs, UTF-16 and UTF-32, lone surrogates, and
    every syntax error). The depth is checked first, by orjson, on the body made
    readable to it (UTF-8 without a BOM, surrogate escapes replaced): the same
    structure, so the same depth, with no walk over a value afterwards."""
    try:
        encoding = json.detect_encoding(raw)
        canonical = raw if encoding == "utf-8" else raw.decode(encoding).encode("utf-8")
        _padded_loads(_SURROGATE_ESCAPE.sub(rb"\\u0020", canonical))
        checked = True
    except (orjson.JSONDecodeError, UnicodeError):
        checked = False  # the standard library refuses it too, in all but odd cases
    try:
        value = decode_json(raw)
    except RecursionError as exc:
        raise TooDeep() from exc
    if not checked and _too_deep(value, MAX_JSON_DEPTH):
        raise TooDeep()
    return value


#: Bodies from this size are parsed with the cyclic garbage collector paused: a
#: parse makes no cycles, yet each collection during it walks the growing value
#: (a third of the time of a wide 1 MiB body).
_GC_PAUSE_BYTES = 64 * 1024


@contextlib.contextmanager
def _gc_paused(size: int) -> Iterator[None]:
    if size < _GC_PAUSE_BYTES or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
