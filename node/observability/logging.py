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


def _is_sensitive(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in _SENSITIVE)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for name, value in vars(record).items():
            if name in _STANDARD or name.startswith("_"):
                continue
            line[name] = "[redacted]" if _is_sensitive(name) else value
        if record.exc_info and record.exc_info[0] is not None:
            # Exception text is reduced to its type: messages can quote input.
            line["exception"] = record.exc_info[0].__name__
        return json.dumps(line, default=str)


def configure_logging(level: str = "info") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(_LEVELS.get(level.lower(), logging.INFO))
    # aiohttp's access log would print raw request lines; we log requests ourselves.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
