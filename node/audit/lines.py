"""Reading audit lines back: for tests, and for tooling that checks a log.

Strict on purpose: a line is the device's prefix and one JSON object of type
``request`` or ``response`` with the reference's sections, or it is an
``AuditLineError`` (a truncated last line after a crash, garbage, a
foreign line); never any other exception.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sdk import jsoncodec

__all__ = ["AuditLine", "AuditLineError", "parse_line", "parse_log"]


class AuditLineError(ValueError):
    """Not an audit line."""


@dataclass(frozen=True, slots=True)
class AuditLine:
    type: str
    time: str
    auth: dict[str, Any]
    request: dict[str, Any]
    response: dict[str, Any] | None
    error: str
    entry: dict[str, Any]


def parse_line(line: str | bytes, prefix: str = "") -> AuditLine:
    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError:
            raise AuditLineError("not UTF-8") from None
    line = line.removesuffix("\n")
    if not line.startswith(prefix):
        raise AuditLineError("missing the device's prefix")
    try:
        entry = jsoncodec.loads(line[len(prefix) :])
    except (ValueError, RecursionError):
        raise AuditLineError("not one JSON document") from None
    if not isinstance(entry, dict):
        raise AuditLineError("not a JSON object")
    kind = entry.get("type")
    if kind not in ("request", "response"):
        raise AuditLineError("type is neither request nor response")
    when, auth, request = entry.get("time"), entry.get("auth"), entry.get("request")
    response, error = entry.get("response"), entry.get("error", "")
    if not isinstance(when, str) or not when.endswith("Z"):
        raise AuditLineError("time is not an RFC 3339 UTC time")
    if not isinstance(auth, dict) or not isinstance(request, dict):
        raise AuditLineError("auth and request must be objects")
    if not isinstance(request.get("id", ""), str) or not isinstance(request.get("path"), str):
        raise AuditLineError("request has no path")
    if kind == "response" and not isinstance(response, dict):
        raise AuditLineError("a response entry needs a response object")
    if kind == "request" and response is not None:
        raise AuditLineError("a request entry has no response")
    if not isinstance(error, str):
        raise AuditLineError("error must be a string")
    return AuditLine(kind, when, auth, request, response, error, entry)


def parse_log(text: str, prefix: str = "") -> Iterator[AuditLine]:
    """Every line of a log file; the first bad one raises (with its line number).

    Lines end at ``\n`` only: JSON leaves U+0085 and U+2028 unescaped, which
    ``str.splitlines`` would take for line ends.
    """
    if not text:
        return
    for number, line in enumerate(text.removesuffix("\n").split("\n"), start=1):
        try:
            yield parse_line(line, prefix)
        except AuditLineError as exc:
            raise AuditLineError(f"line {number}: {exc}") from None
