"""``sys/metrics``: Prometheus text and the reference's JSON shape."""

from __future__ import annotations

import pytest
from aiohttp.test_utils import TestClient
from prometheus_client.parser import text_string_to_metric_families

from api.app import create_app
from node.core.core import Core, CoreSettings
from node.physical.inmem import InmemBackend
from tests.api.helpers import assert_error, call
from tests.conftest import DevServer
from tests.listener_server import ListenerTestServer

METRICS = "/v1/sys/metrics"


async def _prometheus(dev: DevServer) -> dict[tuple[str, str], float]:
    """``coffer_http_requests_total`` samples by (method, code)."""
    reply = await call(
        dev.client, "GET", METRICS, params={"format": "prometheus"}, headers=dev.auth
    )
    assert reply.status == 200, str(reply)
    assert reply.headers["Content-Type"].startswith("text/plain")
    assert "version=" in reply.headers["Content-Type"]
    assert reply.headers["Cache-Control"] == "no-store"
    counts: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(reply.raw.decode()):
        for sample in family.samples:
            if sample.name == "coffer_http_requests_total":
                counts[(sample.labels["method"], sample.labels["code"])] = sample.value
    return counts


async def test_prometheus_exposition_counts_requests(dev: DevServer) -> None:
    before = await _prometheus(dev)

    for _ in range(5):
        assert (await call(dev.client, "GET", "/v1/sys/seal-status")).status == 200
    for _ in range(3):
        assert (await call(dev.client, "GET", "/v1/sys/key-status")).status == 403
    for _ in range(2):
        reply = await call(
            dev.client, "PUT", "/v1/secret/data/m", json_body={"data": {}}, headers=dev.auth
        )
        assert reply.status == 200
    assert (await call(dev.client, "GET", "/v1/nope", headers=dev.auth)).status == 404

    after = await _prometheus(dev)
    # the first scrape itself is a GET 200 counted once it has been answered
    assert after[("GET", "200")] == before.get(("GET", "200"), 0) + 5 + 1
    assert after[("GET", "403")] == before.get(("GET", "403"), 0) + 3
    assert after[("PUT", "200")] == before.get(("PUT", "200"), 0) + 2
    assert after[("GET", "404")] == before.get(("GET", "404"), 0) + 1


async def test_prometheus_text_has_help_and_type_lines(dev: DevServer) -> None:
    await call(dev.client, "GET", "/v1/sys/health")

    reply = await call(
        dev.client, "GET", METRICS, params={"format": "prometheus"}, headers=dev.auth
    )

    text = reply.raw.decode()
    assert "# HELP coffer_http_requests_total" in text
    assert "# TYPE coffer_http_requests_total counter" in text
    assert "coffer_core_unsealed 1.0" in text


async def test_json_format_by_default(dev: DevServer) -> None:
    await call(dev.client, "GET", "/v1/sys/health")

    reply = await call(dev.client, "GET", METRICS, headers=dev.auth)

    assert reply.status == 200, str(reply)
    assert reply.headers["Content-Type"].startswith("application/json")
    body = reply.body
    assert isinstance(body["Gauges"], list)
    assert isinstance(body["Counters"], list)
    assert "Timestamp" in body
    counters = [c for c in body["Counters"] if c["Name"] == "coffer_http_requests_total"]
    assert any(
        c["Labels"] == {"method": "GET", "code": "200"} and c["Value"] >= 1 for c in counters
    )
    gauges = {g["Name"]: g["Value"] for g in body["Gauges"]}
    assert gauges["coffer_core_unsealed"] == 1.0
    for item in body["Gauges"] + body["Counters"]:
        assert set(item) == {"Name", "Labels", "Value"}


async def test_json_counters_increase(dev: DevServer) -> None:
    def total(body: dict[str, list[dict[str, object]]]) -> float:
        return sum(
            float(c["Value"])  # type: ignore[arg-type]
            for c in body["Counters"]
            if c["Name"] == "coffer_http_requests_total"
        )

    first = (await call(dev.client, "GET", METRICS, headers=dev.auth)).body
    for _ in range(4):
        await call(dev.client, "GET", "/v1/sys/health")
    second = (await call(dev.client, "GET", METRICS, headers=dev.auth)).body

    assert total(second) == total(first) + 4 + 1


@pytest.mark.parametrize("fmt", ["json", "text", "PROMETHEUS", "prometheus2", " "])
async def test_bad_format_is_400(dev: DevServer, fmt: str) -> None:
    reply = await call(dev.client, "GET", METRICS, params={"format": fmt}, headers=dev.auth)

    assert_error(reply, 400, "format")


@pytest.mark.parametrize("params", [None, {"format": "prometheus"}])
@pytest.mark.parametrize("headers", [{}, {"X-Vault-Token": "hvs.bad"}])
async def test_metrics_need_a_token(
    dev: DevServer, params: dict[str, str] | None, headers: dict[str, str]
) -> None:
    reply = await call(dev.client, "GET", METRICS, params=params, headers=headers)

    assert_error(reply, 403)


async def test_unauthenticated_metrics_access_setting() -> None:
    core = Core(InmemBackend(), CoreSettings(unauthenticated_metrics=True))
    client = TestClient(ListenerTestServer(create_app(core, max_request_size=1024 * 1024)))
    await client.start_server()
    try:
        await core.dev_bootstrap()
        reply = await call(client, "GET", METRICS, params={"format": "prometheus"})
        assert reply.status == 200, str(reply)
        assert b"coffer_http_requests_total" in reply.raw
    finally:
        await client.close()


async def test_metrics_while_sealed_are_503(dev: DevServer) -> None:
    await call(dev.client, "PUT", "/v1/sys/seal", headers=dev.auth)

    reply = await call(
        dev.client, "GET", METRICS, params={"format": "prometheus"}, headers=dev.auth
    )

    assert_error(reply, 503)


async def test_unknown_methods_share_one_metric_series(dev: DevServer) -> None:
    for n in range(20):
        reply = await call(dev.client, f"FOO{n}", "/v1/secret/data/x", headers=dev.auth)
        assert reply.status == 405

    counts = await _prometheus(dev)

    assert not [method for method, _ in counts if method.startswith("FOO")]
    assert counts[("OTHER", "405")] == 20


async def _cache_samples(dev: DevServer) -> dict[str, float]:
    reply = await call(
        dev.client, "GET", METRICS, params={"format": "prometheus"}, headers=dev.auth
    )
    assert reply.status == 200, str(reply)
    return {
        sample.name: sample.value
        for family in text_string_to_metric_families(reply.raw.decode())
        for sample in family.samples
        if sample.name.startswith("coffer_cache_")
    }


async def test_the_read_cache_is_exported(dev: DevServer) -> None:
    path = "/v1/secret/data/cached"
    assert (
        await call(dev.client, "PUT", path, json_body={"data": {"a": "1"}}, headers=dev.auth)
    ).status == 200
    assert (await call(dev.client, "GET", path, headers=dev.auth)).status == 200
    other = {"data": {"b": "2"}}
    before = await _cache_samples(dev)
    for _ in range(3):
        # A write elsewhere between reads: with nothing stored changed, the KV store
        # and the token store would answer from their own memos, not the cache.
        put = await call(
            dev.client, "PUT", "/v1/secret/data/other", json_body=other, headers=dev.auth
        )
        assert put.status == 200
        assert (await call(dev.client, "GET", path, headers=dev.auth)).status == 200
    after = await _cache_samples(dev)
    # each read finds the key's metadata and its version in the cache
    assert after["coffer_cache_hit_total"] >= before["coffer_cache_hit_total"] + 6
    assert after["coffer_cache_entries"] > 0
    assert "coffer_cache_miss_total" in after
