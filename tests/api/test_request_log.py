"""The per-request log line: at ``debug`` (a 5xx at ``warning``), never built when off.

Also the request id (a random UUID per request) and the cached metric children
the edge counts requests with.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from api import edge
from tests.api.helpers import assert_envelope, call
from tests.conftest import DevServer

HTTP_LOGGER = "coffer.http"
FIELDS = {"event", "method", "path", "status", "duration_ms", "request_id", "remote"}


def _requests(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if getattr(r, "event", None) == "http.request"]


async def test_requests_are_not_logged_at_info(
    dev: DevServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=HTTP_LOGGER)
    assert (await call(dev.client, "GET", "/v1/sys/health")).status == 200
    reply = await call(dev.client, "GET", "/v1/secret/data/missing", headers=dev.auth)
    assert reply.status == 404
    assert _requests(caplog) == []


async def test_debug_logs_each_request_with_its_fields(
    dev: DevServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=HTTP_LOGGER)
    put = await call(
        dev.client,
        "PUT",
        "/v1/secret/data/logged",
        json_body={"data": {"a": "b"}},
        headers=dev.auth,
    )
    get = await call(dev.client, "GET", "/v1/secret/data/logged", headers=dev.auth)
    assert (put.status, get.status) == (200, 200)

    records = _requests(caplog)
    assert [(r.method, r.path, r.status) for r in records] == [  # type: ignore[attr-defined]
        ("PUT", "/v1/secret/data/logged", 200),
        ("GET", "/v1/secret/data/logged", 200),
    ]
    for record, reply in zip(records, (put, get), strict=True):
        assert record.levelno == logging.DEBUG
        assert record.getMessage() == "request"
        assert set(vars(record)) >= FIELDS
        fields: dict[str, Any] = vars(record)
        assert fields["request_id"] == reply.headers["X-Request-Id"]
        assert isinstance(fields["duration_ms"], float) and fields["duration_ms"] >= 0
        assert fields["remote"] == "127.0.0.1"


async def test_server_errors_are_logged_at_warning_without_debug(
    fresh_client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """An uninitialised (so sealed) core answers 503: the line is written at info;
    its health probes (501 here) are not, or every load-balancer check would be."""
    _, client = fresh_client
    caplog.set_level(logging.INFO, logger=HTTP_LOGGER)
    reply = await call(client, "GET", "/v1/secret/data/x", headers={"X-Vault-Token": "t"})
    assert reply.status == 503
    assert (await call(client, "GET", "/v1/sys/health")).status >= 500
    [record] = _requests(caplog)
    assert record.levelno == logging.WARNING
    assert (record.method, record.status) == ("GET", 503)  # type: ignore[attr-defined]


async def test_unhandled_errors_are_still_logged(
    dev: DevServer, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(request: Any) -> Any:
        raise RuntimeError("secret detail that must not reach the client")

    monkeypatch.setattr(dev.core, "handle", broken)
    caplog.set_level(logging.INFO, logger=HTTP_LOGGER)
    reply = await call(dev.client, "GET", "/v1/secret/data/x", headers=dev.auth)
    assert reply.status == 500
    assert b"secret detail" not in reply.raw
    internal = [r for r in caplog.records if getattr(r, "event", None) == "http.internal_error"]
    assert [r.levelno for r in internal] == [logging.ERROR]
    assert [(r.levelno, r.status) for r in _requests(caplog)] == [  # type: ignore[attr-defined]
        (logging.WARNING, 500)
    ]


async def test_a_disabled_request_log_builds_nothing(
    dev: DevServer, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr(edge.log, "log", lambda *a, **k: calls.append(a))
    caplog.set_level(logging.INFO, logger=HTTP_LOGGER)
    assert (await call(dev.client, "GET", "/v1/sys/health")).status == 200
    assert calls == []
    caplog.set_level(logging.DEBUG, logger=HTTP_LOGGER)
    assert (await call(dev.client, "GET", "/v1/sys/health")).status == 200
    assert [a[0] for a in calls] == [logging.DEBUG]


async def test_each_request_gets_its_own_random_uuid(dev: DevServer) -> None:
    ids = []
    for _ in range(5):
        reply = await call(dev.client, "GET", "/v1/sys/mounts", headers=dev.auth)
        body = assert_envelope(reply)  # also: the body's request_id is the header's
        ids.append(body["request_id"])
    assert len(set(ids)) == len(ids)
    for text in ids:
        parsed = uuid.UUID(text)
        assert str(parsed) == text  # canonical lower-case 8-4-4-4-12 form
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122


def test_new_request_id_sets_version_and_variant_bits() -> None:
    for _ in range(200):
        parsed = uuid.UUID(edge.new_request_id())
        assert (parsed.version, parsed.variant) == (4, uuid.RFC_4122)


async def test_request_counts_and_timings_reach_the_registry(dev: DevServer) -> None:
    metrics = dev.core.metrics
    for _ in range(3):
        metrics.count_request("GET", 418)
    metrics.observe_operation("read", 0.25)
    metrics.observe_operation("read", 0.5)

    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(metrics.prometheus_text().decode())
        for sample in family.samples
    }
    assert samples[("coffer_http_requests_total", (("code", "418"), ("method", "GET")))] == 3
    assert samples[("coffer_request_duration_seconds_count", (("operation", "read"),))] == 2
    assert samples[("coffer_request_duration_seconds_sum", (("operation", "read"),))] == 0.75
    # ``le`` is inclusive, as prometheus_client's own histograms count it.
    le = {
        labels[0][1]: value
        for (name, labels), value in samples.items()
        if name == "coffer_request_duration_seconds_bucket"
    }
    assert (le["0.1"], le["0.25"], le["0.5"], le["1.0"], le["+Inf"]) == (0, 1, 2, 2, 2)


async def test_pipeline_times_each_operation(dev: DevServer) -> None:
    def count(operation: str) -> float:
        for family in text_string_to_metric_families(dev.core.metrics.prometheus_text().decode()):
            for sample in family.samples:
                if (
                    sample.name == "coffer_request_duration_seconds_count"
                    and sample.labels["operation"] == operation
                ):
                    return sample.value
        return 0.0

    before_create, before_read = count("create"), count("read")
    reply = await call(
        dev.client, "PUT", "/v1/secret/data/timed", json_body={"data": {}}, headers=dev.auth
    )
    assert reply.status == 200
    assert (await call(dev.client, "GET", "/v1/secret/data/timed", headers=dev.auth)).status == 200
    assert count("create") == before_create + 1
    assert count("read") == before_read + 1
