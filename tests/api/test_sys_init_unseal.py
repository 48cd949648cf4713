"""``sys/init``, ``sys/unseal``, ``sys/seal-status`` and ``sys/seal`` over HTTP."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from api.app import create_app
from node.core.core import Core
from tests.api.conftest import SHARES, THRESHOLD, Shamir
from tests.api.helpers import YieldingBackend, assert_error, call, unseal_with
from tests.conftest import DevServer
from tests.listener_server import ListenerTestServer

SEAL_STATUS_KEYS = {"type", "initialized", "sealed", "t", "n", "progress", "nonce", "version"}


async def _init(client: TestClient, body: Any) -> Any:
    return await call(client, "PUT", "/v1/sys/init", json_body=body)


async def _unseal(client: TestClient, body: Any) -> Any:
    return await call(client, "PUT", "/v1/sys/unseal", json_body=body)


async def _seal_status(client: TestClient) -> dict[str, Any]:
    reply = await call(client, "GET", "/v1/sys/seal-status")
    assert reply.status == 200, str(reply)
    body: dict[str, Any] = reply.body
    return body


def _b64(hex_key: str) -> str:
    return base64.b64encode(bytes.fromhex(hex_key)).decode()


def _corrupt(hex_key: str) -> str:
    """The same share with one value byte flipped (its x coordinate, the last byte, kept)."""
    raw = bytearray(bytes.fromhex(hex_key))
    raw[0] ^= 0xFF
    return raw.hex()


# -- sys/init ---------------------------------------------------------------------------


async def test_init_status_before_and_after(fresh_client: tuple[Core, TestClient]) -> None:
    _, client = fresh_client

    before = await call(client, "GET", "/v1/sys/init")
    assert before.status == 200
    assert before.body == {"initialized": False}

    assert (await _init(client, {"secret_shares": 1, "secret_threshold": 1})).status == 200

    after = await call(client, "GET", "/v1/sys/init")
    assert after.body == {"initialized": True}


@pytest.mark.parametrize(
    ("shares", "threshold"), [(1, 1), (2, 2), (3, 2), (5, 3), (10, 10), (255, 2), (255, 255)]
)
async def test_init_returns_the_shares(
    fresh_client: tuple[Core, TestClient], shares: int, threshold: int
) -> None:
    _, client = fresh_client

    reply = await _init(client, {"secret_shares": shares, "secret_threshold": threshold})

    assert reply.status == 200, str(reply)
    body = reply.body
    assert set(body) >= {"keys", "keys_base64", "root_token"}
    assert len(body["keys"]) == shares
    assert len(body["keys_base64"]) == shares
    assert len(set(body["keys"])) == shares
    for hex_key, b64_key in zip(body["keys"], body["keys_base64"], strict=True):
        assert bytes.fromhex(hex_key) == base64.b64decode(b64_key)
        assert len(bytes.fromhex(hex_key)) == (32 if shares == 1 else 33)
    assert body["root_token"].startswith("hvs.")
    status = await _seal_status(client)
    assert (status["t"], status["n"]) == (threshold, shares)


async def test_server_stays_sealed_after_init(fresh_client: tuple[Core, TestClient]) -> None:
    core, client = fresh_client

    reply = await _init(client, {"secret_shares": 3, "secret_threshold": 2})

    assert reply.status == 200
    assert core.sealed
    status = await _seal_status(client)
    assert status["initialized"] is True
    assert status["sealed"] is True
    assert status["progress"] == 0
    root = {"X-Vault-Token": reply.body["root_token"]}
    assert_error(await call(client, "GET", "/v1/sys/key-status", headers=root), 503)
    health = await call(client, "GET", "/v1/sys/health")
    assert health.status == 503


async def test_init_then_unseal_then_root_token_works(
    fresh_client: tuple[Core, TestClient],
) -> None:
    _, client = fresh_client
    init = (await _init(client, {"secret_shares": 3, "secret_threshold": 2})).body

    status = (await unseal_with(client, init["keys"][1:3])).body

    assert status["sealed"] is False
    reply = await call(
        client, "GET", "/v1/sys/key-status", headers={"X-Vault-Token": init["root_token"]}
    )
    assert reply.status == 200, str(reply)


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({}, "shares must be at least one"),
        ({"secret_shares": 0, "secret_threshold": 0}, "shares must be at least one"),
        ({"secret_shares": -1, "secret_threshold": 1}, "shares must be at least one"),
        ({"secret_shares": 1}, "threshold must be at least one"),
        ({"secret_shares": 3, "secret_threshold": 0}, "threshold must be at least one"),
        ({"secret_shares": 3, "secret_threshold": -2}, "threshold must be at least one"),
        (
            {"secret_shares": 3, "secret_threshold": 1},
            "threshold must be greater than one for multiple shares",
        ),
        ({"secret_shares": 256, "secret_threshold": 3}, "shares must be less than 256"),
        ({"secret_shares": 10**30, "secret_threshold": 3}, "shares must be less than 256"),
        ({"secret_shares": 3, "secret_threshold": 4}, "threshold cannot be larger than"),
        ({"secret_shares": 255, "secret_threshold": 256}, "threshold must be less than 256"),
        ({"secret_shares": "5", "secret_threshold": 3}, "secret_shares"),
        ({"secret_shares": 5, "secret_threshold": "3"}, "secret_threshold"),
        ({"secret_shares": 1.5, "secret_threshold": 1}, "secret_shares"),
        ({"secret_shares": 5.0, "secret_threshold": 3}, "secret_shares"),
        ({"secret_shares": True, "secret_threshold": 1}, "secret_shares"),
        ({"secret_shares": 5, "secret_threshold": False}, "secret_threshold"),
        ({"secret_shares": [5], "secret_threshold": 3}, "secret_shares"),
        ({"secret_shares": {"n": 5}, "secret_threshold": 3}, "secret_shares"),
        ({"secret_shares": 5, "secret_threshold": 3, "pgp_keys": ["key"] * 5}, "pgp"),
        ({"secret_shares": 1, "secret_threshold": 1, "root_token_pgp_key": "key"}, "pgp"),
        ({"secret_shares": 5, "secret_threshold": 3, "recovery_shares": 5}, "recovery_shares"),
        (
            {"secret_shares": 5, "secret_threshold": 3, "recovery_threshold": 3},
            "recovery_threshold",
        ),
        (
            {"secret_shares": 5, "secret_threshold": 3, "recovery_pgp_keys": ["k"]},
            "recovery_pgp_keys",
        ),
        ({"secret_shares": 5, "secret_threshold": 3, "stored_shares": 1}, "stored_shares"),
        ({"secret_shares": 5, "secret_threshold": 3, "stored_shares": "x"}, "stored_shares"),
    ],
)
async def test_init_validation(
    fresh_client: tuple[Core, TestClient], body: dict[str, Any], fragment: str
) -> None:
    core, client = fresh_client

    reply = await _init(client, body)

    assert_error(reply, 400, fragment)
    assert not await core.initialized()
    assert (await call(client, "GET", "/v1/sys/init")).body == {"initialized": False}


async def test_init_twice_is_400(fresh_client: tuple[Core, TestClient]) -> None:
    _, client = fresh_client
    first = await _init(client, {"secret_shares": 1, "secret_threshold": 1})
    assert first.status == 200

    again = await _init(client, {"secret_shares": 1, "secret_threshold": 1})

    assert_error(again, 400, "already initialized")
    assert "root_token" not in again.body


async def test_init_twice_is_400_when_unsealed(dev: DevServer) -> None:
    reply = await _init(dev.client, {"secret_shares": 5, "secret_threshold": 3})

    assert_error(reply, 400, "already initialized")


async def test_empty_pgp_and_recovery_fields_are_ignored(
    fresh_client: tuple[Core, TestClient],
) -> None:
    _, client = fresh_client

    reply = await _init(
        client,
        {
            "secret_shares": 2,
            "secret_threshold": 2,
            "pgp_keys": [],
            "recovery_shares": 0,
            "stored_shares": 0,
        },
    )

    assert reply.status == 200, str(reply)


# -- sys/unseal ---------------------------------------------------------------------------


@pytest.mark.parametrize("body", [{}, {"key": ""}, {"key": None}, {"other": "x"}])
async def test_unseal_without_a_key_is_400(shamir: Shamir, body: dict[str, Any]) -> None:
    reply = await _unseal(shamir.client, body)

    assert_error(
        reply, 400, "'key' must be specified in request body as JSON, or 'reset' set to true"
    )


async def test_unseal_with_an_empty_body_is_400(shamir: Shamir) -> None:
    reply = await call(shamir.client, "PUT", "/v1/sys/unseal")

    assert_error(reply, 400, "'key' must be specified")


@pytest.mark.parametrize(
    "key", ["zz", "not base64!", "@@@@", "abc", "=====", "a" * 67, "é" * 44, "\u0000" * 4]
)
async def test_unseal_with_a_key_that_is_neither_hex_nor_base64_is_400(
    shamir: Shamir, key: str
) -> None:
    reply = await _unseal(shamir.client, {"key": key})

    assert_error(reply, 400, "'key' must be a valid hex or base64 string")
    assert (await _seal_status(shamir.client))["progress"] == 0


@pytest.mark.parametrize(
    ("key", "fragment"),
    [
        ("00", ""),
        ("00" * 15, ""),
        ("00" * 34, ""),
        (base64.b64encode(b"k" * 15).decode(), "shorter than minimum 16 bytes"),
        (base64.b64encode(b"k" * 34).decode(), "longer than maximum 33 bytes"),
    ],
)
async def test_unseal_with_a_key_of_impossible_length_is_400(
    shamir: Shamir, key: str, fragment: str
) -> None:
    reply = await _unseal(shamir.client, {"key": key})

    assert_error(reply, 400, fragment)
    assert (await _seal_status(shamir.client))["progress"] == 0


@pytest.mark.parametrize("key", [1, 1.5, True, ["a"], {"k": "v"}])
async def test_unseal_with_a_non_string_key_is_400(shamir: Shamir, key: Any) -> None:
    reply = await _unseal(shamir.client, {"key": key})

    assert_error(reply, 400, "key")


async def test_unseal_progress_and_nonce(shamir: Shamir) -> None:
    first = (await _unseal(shamir.client, {"key": shamir.keys[0]})).body

    assert first["sealed"] is True
    assert first["progress"] == 1
    assert (first["t"], first["n"]) == (THRESHOLD, SHARES)
    assert first["nonce"]
    second = (await _unseal(shamir.client, {"key": shamir.keys[1]})).body
    assert second["progress"] == 2
    assert second["nonce"] == first["nonce"]
    status = await _seal_status(shamir.client)
    assert (status["progress"], status["nonce"]) == (2, first["nonce"])

    done = (await _unseal(shamir.client, {"key": shamir.keys[2]})).body

    assert done["sealed"] is False
    assert done["progress"] == 0
    assert done["nonce"] == ""
    assert not shamir.core.sealed


async def test_unseal_reset(shamir: Shamir) -> None:
    started = (await _unseal(shamir.client, {"key": shamir.keys[0]})).body
    assert started["progress"] == 1

    reset = await _unseal(shamir.client, {"reset": True})

    assert reset.status == 200, str(reset)
    assert reset.body["progress"] == 0
    assert reset.body["nonce"] == ""
    assert reset.body["sealed"] is True
    again = (await _unseal(shamir.client, {"key": shamir.keys[0]})).body
    assert again["progress"] == 1
    assert again["nonce"] != started["nonce"]


async def test_unseal_reset_wins_over_a_key(shamir: Shamir) -> None:
    await _unseal(shamir.client, {"key": shamir.keys[0]})

    reply = await _unseal(shamir.client, {"reset": True, "key": shamir.keys[1]})

    assert reply.status == 200
    assert reply.body["progress"] == 0


async def test_unseal_reset_false_needs_a_key(shamir: Shamir) -> None:
    reply = await _unseal(shamir.client, {"reset": False})

    assert_error(reply, 400, "'key' must be specified")


@pytest.mark.parametrize("reset", ["true", "yes", 1, 0, [], {}, "1"])
async def test_unseal_reset_must_be_a_boolean(shamir: Shamir, reset: Any) -> None:
    reply = await _unseal(shamir.client, {"reset": reset, "key": shamir.keys[0]})

    assert_error(reply, 400, "reset")
    assert (await _seal_status(shamir.client))["progress"] == 0


async def test_unseal_reset_when_unsealed_is_400(unsealed: Shamir) -> None:
    reply = await _unseal(unsealed.client, {"reset": True})

    assert_error(reply, 400, "unsealed")


async def test_unseal_reset_when_uninitialised_reports_the_status(
    fresh_client: tuple[Core, TestClient],
) -> None:
    _, client = fresh_client

    reply = await _unseal(client, {"reset": True})

    assert reply.status == 200, str(reply)
    assert reply.body["initialized"] is False
    assert reply.body["progress"] == 0


async def test_unseal_duplicate_share_is_400(shamir: Shamir) -> None:
    await _unseal(shamir.client, {"key": shamir.keys[0]})

    again = await _unseal(shamir.client, {"key": shamir.keys[0]})
    as_base64 = await _unseal(shamir.client, {"key": _b64(shamir.keys[0])})

    assert_error(again, 400, "already been provided")
    assert_error(as_base64, 400, "already been provided")
    status = await _seal_status(shamir.client)
    assert status["progress"] == 1
    assert status["sealed"] is True


async def test_wrong_share_combination_is_400_and_resets_progress(shamir: Shamir) -> None:
    await _unseal(shamir.client, {"key": shamir.keys[0]})
    await _unseal(shamir.client, {"key": shamir.keys[1]})

    reply = await _unseal(shamir.client, {"key": _corrupt(shamir.keys[2])})

    assert_error(reply, 400, "unseal")
    status = await _seal_status(shamir.client)
    assert status["sealed"] is True
    assert status["progress"] == 0
    assert status["nonce"] == ""
    assert shamir.core.sealed
    done = await unseal_with(shamir.client, shamir.keys[2:5])
    assert done.body["sealed"] is False


async def test_shares_of_another_server_do_not_unseal(shamir: Shamir) -> None:
    other = Core(shamir.core.physical.__class__())
    foreign = (await other.initialize(SHARES, THRESHOLD)).keys_hex

    for key in foreign[:2]:
        assert (await _unseal(shamir.client, {"key": key})).status == 200
    reply = await _unseal(shamir.client, {"key": foreign[2]})

    assert_error(reply, 400)
    assert shamir.core.sealed


async def test_unseal_uninitialised_is_400(fresh_client: tuple[Core, TestClient]) -> None:
    _, client = fresh_client

    reply = await _unseal(client, {"key": "ab" * 33})

    assert_error(reply, 400, "not initialized")


async def test_unseal_accepts_hex_and_base64_mixed(shamir: Shamir) -> None:
    keys = [shamir.keys[4], _b64(shamir.keys[2]), shamir.keys[0].upper()]

    status = (await unseal_with(shamir.client, keys)).body

    assert status["sealed"] is False


async def test_unseal_with_base64_only(shamir: Shamir) -> None:
    status = (await unseal_with(shamir.client, shamir.init.keys_base64[1:4])).body

    assert status["sealed"] is False


@pytest.mark.parametrize("field", ["KEY", "Key", "kEy"])
async def test_unseal_key_field_is_case_insensitive(shamir: Shamir, field: str) -> None:
    for key in shamir.keys[:THRESHOLD]:
        reply = await _unseal(shamir.client, {field: key})
        assert reply.status == 200, str(reply)

    assert not shamir.core.sealed


async def test_unseal_when_already_unsealed_reports_unsealed(unsealed: Shamir) -> None:
    reply = await _unseal(unsealed.client, {"key": unsealed.keys[4]})

    assert reply.status == 200
    assert reply.body["sealed"] is False


async def test_single_share_unseals_at_once(fresh_client: tuple[Core, TestClient]) -> None:
    _, client = fresh_client
    init = (await _init(client, {"secret_shares": 1, "secret_threshold": 1})).body

    reply = await _unseal(client, {"key": init["keys_base64"][0]})

    assert reply.body["sealed"] is False


# -- sys/seal-status ----------------------------------------------------------------------


async def test_seal_status_uninitialised(fresh_client: tuple[Core, TestClient]) -> None:
    _, client = fresh_client

    status = await _seal_status(client)

    assert set(status) >= SEAL_STATUS_KEYS
    assert status["type"] == "shamir"
    assert status["initialized"] is False
    assert status["sealed"] is True
    assert (status["t"], status["n"], status["progress"]) == (0, 0, 0)
    assert status["nonce"] == ""
    assert isinstance(status["version"], str)
    assert status["version"]
    assert "cluster_name" not in status
    assert "cluster_id" not in status


async def test_seal_status_sealed(shamir: Shamir) -> None:
    status = await _seal_status(shamir.client)

    assert set(status) >= SEAL_STATUS_KEYS
    assert status["type"] == "shamir"
    assert status["initialized"] is True
    assert status["sealed"] is True
    assert (status["t"], status["n"], status["progress"]) == (THRESHOLD, SHARES, 0)
    assert "cluster_name" not in status
    assert "cluster_id" not in status


async def test_seal_status_unsealed(unsealed: Shamir) -> None:
    status = await _seal_status(unsealed.client)

    assert set(status) >= SEAL_STATUS_KEYS | {"cluster_name", "cluster_id"}
    assert status["sealed"] is False
    assert status["initialized"] is True
    assert (status["t"], status["n"], status["progress"]) == (THRESHOLD, SHARES, 0)
    assert status["cluster_name"]
    assert status["cluster_id"]


async def test_seal_status_needs_no_token_and_ignores_a_bad_one(unsealed: Shamir) -> None:
    reply = await call(
        unsealed.client, "GET", "/v1/sys/seal-status", headers={"X-Vault-Token": "bad"}
    )

    assert reply.status == 200
    assert reply.body["sealed"] is False


# -- sys/seal -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers", [{}, {"X-Vault-Token": "hvs.bad"}, {"Authorization": "Bearer nope"}]
)
async def test_seal_needs_a_token(unsealed: Shamir, headers: dict[str, str]) -> None:
    for method in ("PUT", "POST"):
        reply = await call(unsealed.client, method, "/v1/sys/seal", headers=headers)
        assert_error(reply, 403)

    assert not unsealed.core.sealed


async def test_seal_then_everything_is_503(unsealed: Shamir) -> None:
    client, auth = unsealed.client, unsealed.auth
    await call(client, "PUT", "/v1/secret/data/x", json_body={"data": {"a": 1}}, headers=auth)

    sealed = await call(client, "PUT", "/v1/sys/seal", headers=auth)

    assert sealed.status == 204, str(sealed)
    assert sealed.raw == b""
    assert unsealed.core.sealed
    for method, path in [
        ("GET", "/v1/secret/data/x"),
        ("PUT", "/v1/secret/data/x"),
        ("GET", "/v1/sys/key-status"),
        ("PUT", "/v1/sys/seal"),
        ("GET", "/v1/sys/mounts"),
        ("GET", "/v1/sys/leader"),
        ("GET", "/v1/nope"),
    ]:
        reply = await call(client, method, path, json_body={"data": {}}, headers=auth)
        assert_error(reply, 503)
    status = await _seal_status(client)
    assert status["sealed"] is True
    assert "cluster_name" not in status
    assert (await call(client, "GET", "/v1/sys/health")).status == 503


async def test_seal_then_unseal_again_keeps_the_data(unsealed: Shamir) -> None:
    client, auth = unsealed.client, unsealed.auth
    await call(client, "PUT", "/v1/secret/data/x", json_body={"data": {"a": 1}}, headers=auth)
    await call(client, "PUT", "/v1/sys/seal", headers=auth)

    await unseal_with(client, unsealed.keys[2:5])

    reply = await call(client, "GET", "/v1/secret/data/x", headers=auth)
    assert reply.status == 200, str(reply)
    assert reply.data["data"] == {"a": 1}


async def test_seal_with_a_malformed_body_is_400_and_does_not_seal(unsealed: Shamir) -> None:
    reply = await call(unsealed.client, "PUT", "/v1/sys/seal", data="{", headers=unsealed.auth)

    assert_error(reply, 400)
    assert not unsealed.core.sealed


# -- concurrency --------------------------------------------------------------------------


async def test_concurrent_init_initialises_once(fresh_client: tuple[Core, TestClient]) -> None:
    _, client = fresh_client
    body = {"secret_shares": 3, "secret_threshold": 2}

    replies = await asyncio.gather(*(_init(client, body) for _ in range(5)))

    assert sorted(r.status for r in replies) == [200, 400, 400, 400, 400]
    for reply in replies:
        if reply.status == 400:
            assert_error(reply, 400, "already initialized")
    winner = next(r for r in replies if r.status == 200).body
    assert (await unseal_with(client, winner["keys"][:2])).body["sealed"] is False


async def test_concurrent_unseal_shares(shamir: Shamir) -> None:
    replies = await asyncio.gather(*(_unseal(shamir.client, {"key": k}) for k in shamir.keys))

    assert all(r.status == 200 for r in replies), [str(r) for r in replies]
    assert not shamir.core.sealed
    status = await _seal_status(shamir.client)
    assert (status["sealed"], status["progress"]) == (False, 0)


async def test_concurrent_duplicate_share_counts_once(shamir: Shamir) -> None:
    replies = await asyncio.gather(
        *(_unseal(shamir.client, {"key": shamir.keys[0]}) for _ in range(4))
    )

    assert sorted(r.status for r in replies) == [200, 400, 400, 400]
    assert (await _seal_status(shamir.client))["progress"] == 1


async def test_core_never_looks_unsealed_during_init() -> None:
    core = Core(YieldingBackend())
    client = TestClient(ListenerTestServer(create_app(core, max_request_size=1024 * 1024)))
    await client.start_server()
    try:
        init = asyncio.create_task(_init(client, {"secret_shares": 1, "secret_threshold": 1}))
        health: set[int] = set()
        while not init.done():
            health.add((await call(client, "GET", "/v1/sys/health")).status)
        assert init.result().status == 200
        assert 200 not in health, "sys/health reported an active, unsealed node during init"
    finally:
        await client.close()
