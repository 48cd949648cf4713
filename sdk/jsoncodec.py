"""JSON for request bodies, responses and stored records: orjson, exact as ``json``.

orjson is several times faster than the standard library (docs/performance.md,
the codec table), but differs from it at the edges. Whatever orjson would read
or write differently goes through the standard library instead, so values and
error messages are the same either way:

- Reading: integers beyond 64 bits (orjson makes them floats), lone surrogates,
  a BOM, UTF-16/32, nesting beyond 1024 and overflowing floats. Numbers that
  overflow a float (``1e400``) are refused, as the reference refuses them: the
  standard library would read them as infinity, which JSON cannot write back.
- Writing: integers beyond 64 bits, lone surrogates and non-string keys.
  Dataclasses and datetimes are refused with ``TypeError`` as ``json`` refuses them.
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

__all__ = ["dumps", "has_long_digit_run", "loads", "stdlib_dumps", "stdlib_loads"]

#: A run of this many digits may be an integer beyond 64 bits, which orjson turns
#: into a float: such input takes the standard library's exact path.
LONG_DIGIT_RUN = 19
#: Every byte to ``0`` if it is an ASCII digit, else to ``x``.
_DIGIT_MARKS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x78 for b in range(256))
_RUN_OF_MARKS = b"0" * LONG_DIGIT_RUN


def has_long_digit_run(raw: bytes) -> bool:
    """Whether ``raw`` holds :data:`LONG_DIGIT_RUN` ASCII digits in a row, as
    ``re.search(rb"[0-9]{19}", raw)`` tells, by one ``translate`` and a substring
    search: the regex tried a match at every offset (~2.6 µs on a KV write's body,
    ~0.4 µs this way), and every body and stored record is asked."""
    return len(raw) >= LONG_DIGIT_RUN and _RUN_OF_MARKS in raw.translate(_DIGIT_MARKS)


_ORJSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid JSON constant {name}")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text} is out of range")
    return value


def loads(raw: bytes | str) -> Any:
    """Parse JSON; ``ValueError`` (or ``RecursionError``) for what is not valid JSON."""
    if not has_long_digit_run(raw if isinstance(raw, bytes) else raw.encode()):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    return stdlib_loads(raw)


def stdlib_loads(raw: bytes | str) -> Any:
    """The standard library's reading, as :func:`loads` falls back to it."""
    return json.loads(raw, parse_constant=_reject_constant, parse_float=_finite_float)


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON; ``TypeError`` for a value JSON cannot hold."""
    try:
        return orjson.dumps(value, option=_ORJSON_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError
        return stdlib_dumps(value)


def stdlib_dumps(value: Any) -> bytes:
    """The standard library's writing, as :func:`dumps` falls back to it."""
    return json.dumps(value, separators=(",", ":")).encode()
