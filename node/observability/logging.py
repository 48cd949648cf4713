"""One JSON line per event; fields that could hold secrets are redacted.

Callers log events with ``extra={"event": ..., ...}``. As a second line of
defence the formatter replaces any extra field whose name suggests key
material with ``[redacted]``, so a careless ``extra`` cannot leak a token.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

import orjson

__all__ = ["JsonFormatter", "configure_logging"]

_SENSITIVE = ("token", "key", "secret", "password", "otp", "share", "pin", "data", "value")
_STANDARD = set(vars(logging.makeLogRecord({})).keys()) | {"message", "asctime"}
_LEVELS = {
    "trace": logging.DEBUG,
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}

#: What to do with a record attribute, by name: skip it, keep it, or redact it.
_SKIP, _KEEP, _REDACT = 0, 1, 2
#: Attribute names are few and fixed in code, so the decision is worked out once
#: per name; the bound only guards against a caller inventing names per event.
_ACTIONS: dict[str, int] = {}
_MAX_ACTIONS = 4096

#: Serialised as ``json.dumps(default=str)`` would: dataclasses and datetimes go
#: through ``str`` instead of orjson's own encoding.
_ORJSON_OPTIONS = (
    orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_NON_STR_KEYS
)


def _is_sensitive(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in _SENSITIVE)


def _action(name: str) -> int:
    action = _ACTIONS.get(name)
    if action is None:
        if name in _STANDARD or name.startswith("_"):
            action = _SKIP
        else:
            action = _REDACT if _is_sensitive(name) else _KEEP
        if len(_ACTIONS) < _MAX_ACTIONS:
            _ACTIONS[name] = action
    return action


class _SecondStamp:
    """``YYYY-mm-ddTHH:MM:SS`` of the last second seen: formatted once per second."""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: tuple[int, str] = (-1, "")

    def of(self, created: float) -> str:
        second, text = self._last  # one tuple, so threads never see half an update
        if int(created) != second:
            second = int(created)
            text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
            self._last = (second, text)
        return text


def _dumps(line: dict[str, Any]) -> str:
    """Compact JSON, ASCII only as ``json.dumps`` writes it.

    orjson writes UTF-8; a line with non-ASCII text (rare: a path, a name) takes
    the standard library, whose ``\\uXXXX`` escapes keep U+2028 and friends
    from splitting the line for readers that split on them.
    """
    try:
        out = orjson.dumps(line, default=str, option=_ORJSON_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError: e.g. an integer beyond 64 bits
        pass
    else:
        if out.isascii():
            return out.decode()
    return json.dumps(line, default=str, separators=(",", ":"))


class JsonFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__()
        self._stamp = _SecondStamp()

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": f"{self._stamp.of(record.created)}.{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for name, value in vars(record).items():
            action = _action(name)
            if action == _KEEP:
                line[name] = value
            elif action == _REDACT:
                line[name] = "[redacted]"
        if record.exc_info and record.exc_info[0] is not None:
            # Exception text is reduced to its type: messages can quote input.
            line["exception"] = record.exc_info[0].__name__
        return _dumps(line)


def configure_logging(level: str = "info") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(_LEVELS.get(level.lower(), logging.INFO))
    # aiohttp's access log would print raw request lines; we log requests ourselves.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
