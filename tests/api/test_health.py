"""``sys/health`` (status codes chosen by query parameters) and ``sys/leader``."""

from __future__ import annotations

import time
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from node.core.core import Core
from tests.api.conftest import Shamir
from tests.api.helpers import Reply, assert_error, call

HEALTH_KEYS = {"initialized", "sealed", "standby", "version", "server_time_utc"}
CODE_PARAMS = [
    "activecode",
    "standbycode",
    "performancestandbycode",
    "drsecondarycode",
    "sealedcode",
    "uninitcode",
]


async def _health(client: TestClient, method: str = "GET", **params: str) -> Reply:
    return await call(client, method, "/v1/sys/health", params=params or None)


def _check_body(reply: Reply, *, initialized: bool, sealed: bool) -> dict[str, Any]:
    body: dict[str, Any] = reply.body
    assert set(body) >= HEALTH_KEYS, str(reply)
    assert body["initialized"] is initialized
    assert body["sealed"] is sealed
    assert body["standby"] is False
    assert isinstance(body["version"], str)
    assert body["version"]
    assert isinstance(body["server_time_utc"], int)
    assert abs(body["server_time_utc"] - time.time()) < 60
    if sealed:
        assert "cluster_name" not in body
        assert "cluster_id" not in body
    else:
        assert body["cluster_name"]
        assert body["cluster_id"]
    assert "errors" not in body
    return body


# -- default codes per state ---------------------------------------------------------------


async def test_uninitialised_is_501(fresh_client: tuple[Core, TestClient]) -> None:
    _, client = fresh_client

    reply = await _health(client)

    assert reply.status == 501
    _check_body(reply, initialized=False, sealed=True)
    assert reply.headers["Cache-Control"] == "no-store"


async def test_sealed_is_503(shamir: Shamir) -> None:
    reply = await _health(shamir.client)

    assert reply.status == 503
    _check_body(reply, initialized=True, sealed=True)


async def test_active_is_200(unsealed: Shamir) -> None:
    reply = await _health(unsealed.client)

    assert reply.status == 200
    body = _check_body(reply, initialized=True, sealed=False)
    assert body["performance_standby"] is False


async def test_health_needs_no_token(unsealed: Shamir) -> None:
    reply = await call(
        unsealed.client, "GET", "/v1/sys/health", headers={"X-Vault-Token": "hvs.bad"}
    )

    assert reply.status == 200


# -- custom codes ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "status"),
    [
        ({"uninitcode": "200"}, 200),
        ({"uninitcode": "299"}, 299),
        ({"uninitcode": "418"}, 418),
        ({"sealedcode": "200"}, 501),
        ({"activecode": "202"}, 501),
        ({"uninitcode": "204", "sealedcode": "200", "activecode": "202"}, 204),
    ],
)
async def test_custom_codes_uninitialised(
    fresh_client: tuple[Core, TestClient], params: dict[str, str], status: int
) -> None:
    _, client = fresh_client

    reply = await _health(client, **params)

    assert reply.status == status
    if status != 204:
        _check_body(reply, initialized=False, sealed=True)


@pytest.mark.parametrize(
    ("params", "status"),
    [
        ({"sealedcode": "200"}, 200),
        ({"sealedcode": "599"}, 599),
        ({"sealedcode": "429"}, 429),
        ({"uninitcode": "200"}, 503),
        ({"activecode": "202"}, 503),
        ({"standbyok": "true", "perfstandbyok": "true"}, 503),
        ({"sealedcode": "200", "activecode": "500"}, 200),
    ],
)
async def test_custom_codes_sealed(shamir: Shamir, params: dict[str, str], status: int) -> None:
    reply = await _health(shamir.client, **params)

    assert reply.status == status
    _check_body(reply, initialized=True, sealed=True)


@pytest.mark.parametrize(
    ("params", "status"),
    [
        ({"activecode": "202"}, 202),
        ({"activecode": "503"}, 503),
        ({"activecode": "299"}, 299),
        ({"sealedcode": "500"}, 200),
        ({"uninitcode": "500"}, 200),
        ({"standbycode": "500"}, 200),
        ({"performancestandbycode": "500"}, 200),
        ({"drsecondarycode": "500"}, 200),
        ({"standbyok": "true"}, 200),
        ({"standbyok": ""}, 200),
        ({"standbyok": "false"}, 200),
        ({"perfstandbyok": "true"}, 200),
        ({"perfstandbyok": "0"}, 200),
        ({"standbyok": "1", "perfstandbyok": "t", "activecode": "201"}, 201),
    ],
)
async def test_custom_codes_active(unsealed: Shamir, params: dict[str, str], status: int) -> None:
    reply = await _health(unsealed.client, **params)

    assert reply.status == status
    _check_body(reply, initialized=True, sealed=False)


async def test_204_and_304_codes_have_no_body(unsealed: Shamir) -> None:
    for code in ("204", "304"):
        reply = await _health(unsealed.client, activecode=code)
        assert reply.status == int(code)
        assert reply.raw == b""


@pytest.mark.parametrize("param", CODE_PARAMS)
async def test_every_code_parameter_is_accepted_in_every_state(
    fresh_client: tuple[Core, TestClient], param: str
) -> None:
    core, client = fresh_client
    expected = {"uninitcode": 299}
    assert (await _health(client, **{param: "299"})).status == expected.get(param, 501)

    output = await core.initialize(1, 1)
    expected = {"sealedcode": 299}
    assert (await _health(client, **{param: "299"})).status == expected.get(param, 503)

    await core.unseal(output.keys_hex[0])
    expected = {"activecode": 299}
    assert (await _health(client, **{param: "299"})).status == expected.get(param, 200)


# -- HEAD ----------------------------------------------------------------------------------


async def test_head_returns_the_status_without_a_body(
    fresh_client: tuple[Core, TestClient],
) -> None:
    core, client = fresh_client

    states = []
    states.append(await _health(client, "HEAD"))
    states.append(await _health(client, "HEAD", uninitcode="299"))
    output = await core.initialize(1, 1)
    states.append(await _health(client, "HEAD"))
    states.append(await _health(client, "HEAD", sealedcode="299"))
    await core.unseal(output.keys_hex[0])
    states.append(await _health(client, "HEAD"))
    states.append(await _health(client, "HEAD", activecode="299"))

    assert [r.status for r in states] == [501, 299, 503, 299, 200, 299]
    for reply in states:
        assert reply.raw == b""
        assert reply.headers["Cache-Control"] == "no-store"
        assert reply.headers.get("X-Request-Id")


# -- bad parameters ------------------------------------------------------------------------

_BAD_PARAMS = [
    {"activecode": "abc"},
    {"activecode": "99999"},
    {"activecode": "600"},
    {"activecode": "99"},
    {"activecode": "100"},
    {"activecode": "101"},
    {"activecode": "0"},
    {"activecode": "-200"},
    {"activecode": "200.0"},
    {"activecode": ""},
    {"activecode": "2OO"},
    {"activecode": "²⁰⁰"},
    {"activecode": "٢٠٠"},
    {"activecode": "9" * 5000},
    {"standbycode": "x"},
    {"performancestandbycode": "1e3"},
    {"drsecondarycode": "700"},
    {"sealedcode": "sealed"},
    {"uninitcode": "0x1F5"},
    {"standbyok": "maybe"},
    {"standbyok": "2"},
    {"perfstandbyok": "yes"},
    {"perfstandbyok": "nope"},
]


@pytest.mark.parametrize("params", _BAD_PARAMS)
async def test_bad_values_are_400_in_every_state(
    fresh_client: tuple[Core, TestClient], params: dict[str, str]
) -> None:
    core, client = fresh_client

    assert_error(await _health(client, **params), 400)
    output = await core.initialize(1, 1)
    assert_error(await _health(client, **params), 400)
    await core.unseal(output.keys_hex[0])
    errors = assert_error(await _health(client, **params), 400)

    name = next(iter(params))
    assert any(name in e for e in errors), errors
    head = await _health(client, "HEAD", **params)
    assert head.status == 400
    assert head.raw == b""


# -- sys/leader ------------------------------------------------------------------------------


async def test_leader_when_unsealed(unsealed: Shamir) -> None:
    reply = await call(unsealed.client, "GET", "/v1/sys/leader")

    assert reply.status == 200, str(reply)
    assert reply.headers["Cache-Control"] == "no-store"
    body = reply.body
    assert body["ha_enabled"] is False
    assert {"is_self", "leader_address", "leader_cluster_address"} <= set(body)


async def test_leader_when_sealed_is_503(shamir: Shamir) -> None:
    reply = await call(shamir.client, "GET", "/v1/sys/leader")

    assert_error(reply, 503)


async def test_leader_when_uninitialised_is_an_error(
    fresh_client: tuple[Core, TestClient],
) -> None:
    _, client = fresh_client

    reply = await call(client, "GET", "/v1/sys/leader")

    assert reply.status in (400, 503)
    assert reply.errors


async def test_leader_after_seal_is_503(unsealed: Shamir) -> None:
    sealed = await call(unsealed.client, "PUT", "/v1/sys/seal", headers=unsealed.auth)
    assert sealed.status == 204

    reply = await call(unsealed.client, "GET", "/v1/sys/leader")

    assert_error(reply, 503, "sealed")
