"""``JsonFormatter``: one ASCII JSON line per record, secrets redacted by field name."""

from __future__ import annotations

import dataclasses
import datetime
import json
import logging
import re
import sys
from typing import Any

import pytest

from node.observability.logging import JsonFormatter


def _format(msg: str = "event", level: int = logging.INFO, **extra: Any) -> str:
    record = logging.getLogger("coffer.test").makeRecord(
        "coffer.test", level, __file__, 1, msg, (), None, extra=extra
    )
    return JsonFormatter().format(record)


def _line(**extra: Any) -> dict[str, Any]:
    text = _format(**extra)
    assert "\n" not in text
    doc = json.loads(text)
    assert isinstance(doc, dict)
    return doc


def test_standard_fields_and_extras() -> None:
    doc = _line(event="http.request", status=200, duration_ms=1.5, remote=None)
    assert doc["level"] == "info"
    assert doc["logger"] == "coffer.test"
    assert doc["msg"] == "event"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", doc["time"])
    assert (doc["event"], doc["status"], doc["duration_ms"], doc["remote"]) == (
        "http.request",
        200,
        1.5,
        None,
    )
    # LogRecord's own attributes (args, pathname, thread, ...) stay out.
    assert set(doc) == {
        "time",
        "level",
        "logger",
        "msg",
        "event",
        "status",
        "duration_ms",
        "remote",
    }


def test_time_is_the_records_utc_time() -> None:
    record = logging.makeLogRecord({"msg": "x", "created": 1_700_000_000.25, "msecs": 250.0})
    formatter = JsonFormatter()
    assert json.loads(formatter.format(record))["time"] == "2023-11-14T22:13:20.250Z"
    # The next second is formatted afresh, not taken from the last line's stamp.
    later = logging.makeLogRecord({"msg": "x", "created": 1_700_000_001.5, "msecs": 500.0})
    assert json.loads(formatter.format(later))["time"] == "2023-11-14T22:13:21.500Z"


@pytest.mark.parametrize(
    "name",
    [
        "token",
        "client_token",
        "Token",
        "accessor_TOKEN",
        "unseal_key",
        "secret_id",
        "password",
        "otp",
        "key_share",
        "pin",
        "data",
        "value",
    ],
)
def test_sensitive_names_are_redacted_every_time(name: str) -> None:
    # Twice: the per-name decision is remembered, and must stay a redaction.
    for _ in range(2):
        doc = _line(**{name: "hvs.SECRETVALUE"})
        assert doc[name] == "[redacted]"
        assert "SECRETVALUE" not in json.dumps(doc)


def test_private_attributes_are_left_out() -> None:
    assert "_hidden" not in _line(_hidden=1, shown=2)


def test_unknown_types_are_written_with_str() -> None:
    @dataclasses.dataclass
    class Point:
        x: int

    when = datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    doc = _line(point=Point(1), when=when, items=(1, "a"), raw=b"\x00", ids={7})
    assert doc["point"] == "test_unknown_types_are_written_with_str.<locals>.Point(x=1)"
    assert doc["when"] == str(when)
    assert doc["items"] == [1, "a"]
    assert doc["raw"] == str(b"\x00")
    assert doc["ids"] == "{7}"


def test_integers_beyond_64_bits_are_exact() -> None:
    assert _line(big=2**70)["big"] == 2**70


def test_lines_are_ascii() -> None:
    """Non-ASCII is escaped, so a U+2028 in a path cannot split the line for a reader."""
    path = "/v1/secret/data/caf\u00e9\u2028next"
    text = _format(path=path)
    assert text.isascii()
    assert len(text.splitlines()) == 1
    assert json.loads(text)["path"] == path


def test_exceptions_are_reduced_to_their_type() -> None:
    try:
        raise ValueError("hvs.QUOTEDINPUT")
    except ValueError:
        info = sys.exc_info()
    record = logging.getLogger("coffer.test").makeRecord(
        "coffer.test", logging.ERROR, __file__, 1, "failed", (), info
    )
    text = JsonFormatter().format(record)
    assert json.loads(text)["exception"] == "ValueError"
    assert "QUOTEDINPUT" not in text
