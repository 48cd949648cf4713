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
import re
from typing import Any

import orjson

__all__ = ["dumps", "loads", "stdlib_dumps", "stdlib_loads"]

#: A run of this many digits may be an integer beyond 64 bits, which orjson turns
#: into a float: such input takes the standard library's exact path.
_LONG_DIGITS = re.compile(rb"[0-9]{19}")

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
    if not _LONG_DIGITS.search(raw if isinstance(raw, bytes) else raw.encode()):
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
