"""``sys/rotate`` and ``sys/key-status``: barrier key terms over HTTP."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from tests.api.conftest import Shamir
from tests.api.helpers import assert_envelope, assert_error, call, unseal_with
from tests.conftest import DevServer


async def _key_status(client: Any, auth: dict[str, str]) -> dict[str, Any]:
    reply = await call(client, "GET", "/v1/sys/key-status", headers=auth)
    body: dict[str, Any] = assert_envelope(reply)
    return body


def _parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


async def test_key_status_fields_at_top_level_and_in_data(dev: DevServer) -> None:
    body = await _key_status(dev.client, dev.auth)

    for view in (body, body["data"]):
        assert view["term"] == 1
        assert isinstance(view["encryptions"], int)
        assert view["encryptions"] >= 0
        _parse_time(view["install_time"])
    assert body["term"] == body["data"]["term"]
    assert body["install_time"] == body["data"]["install_time"]


@pytest.mark.parametrize(
    "headers", [{}, {"X-Vault-Token": "hvs.wrong"}, {"Authorization": "Bearer x"}]
)
async def test_rotate_and_key_status_need_a_token(dev: DevServer, headers: dict[str, str]) -> None:
    for method in ("PUT", "POST"):
        for path in ("/v1/sys/rotate", "/v1/sys/rotate/keyring"):
            assert_error(await call(dev.client, method, path, headers=headers), 403)
    assert_error(await call(dev.client, "GET", "/v1/sys/key-status", headers=headers), 403)

    assert (await _key_status(dev.client, dev.auth))["term"] == 1


async def test_rotate_increments_the_term(dev: DevServer) -> None:
    before = await _key_status(dev.client, dev.auth)

    terms = []
    for method, path in [
        ("PUT", "/v1/sys/rotate"),
        ("POST", "/v1/sys/rotate"),
        ("PUT", "/v1/sys/rotate/keyring"),
    ]:
        reply = await call(dev.client, method, path, headers=dev.auth)
        assert reply.status == 204, str(reply)
        terms.append((await _key_status(dev.client, dev.auth))["term"])

    assert terms == [2, 3, 4]
    after = await _key_status(dev.client, dev.auth)
    assert _parse_time(after["install_time"]) >= _parse_time(before["install_time"])


async def test_encryptions_count_writes_under_the_active_term(dev: DevServer) -> None:
    await call(dev.client, "PUT", "/v1/sys/rotate", headers=dev.auth)
    start = (await _key_status(dev.client, dev.auth))["encryptions"]

    for n in range(3):
        reply = await call(
            dev.client, "PUT", f"/v1/secret/data/e{n}", json_body={"data": {"n": n}},
            headers=dev.auth,
        )  # fmt: skip
        assert reply.status == 200

    assert (await _key_status(dev.client, dev.auth))["encryptions"] >= start + 3


async def test_data_written_before_rotation_still_reads(dev: DevServer) -> None:
    client, auth = dev.client, dev.auth
    await call(client, "PUT", "/v1/secret/data/old", json_body={"data": {"v": "1"}}, headers=auth)
    await call(client, "POST", "/v1/sys/mounts/kv1", json_body={"type": "kv"}, headers=auth)
    await call(client, "PUT", "/v1/kv1/flat", json_body={"v": "flat"}, headers=auth)

    for _ in range(3):
        assert (await call(client, "PUT", "/v1/sys/rotate", headers=auth)).status == 204
    await call(client, "PUT", "/v1/secret/data/new", json_body={"data": {"v": "2"}}, headers=auth)

    old = await call(client, "GET", "/v1/secret/data/old", headers=auth)
    new = await call(client, "GET", "/v1/secret/data/new", headers=auth)
    flat = await call(client, "GET", "/v1/kv1/flat", headers=auth)
    assert old.data["data"] == {"v": "1"}
    assert new.data["data"] == {"v": "2"}
    assert flat.data == {"v": "flat"}
    assert (await _key_status(client, auth))["term"] == 4


async def test_rotation_survives_seal_and_unseal(unsealed: Shamir) -> None:
    client, auth = unsealed.client, unsealed.auth
    await call(client, "PUT", "/v1/secret/data/a", json_body={"data": {"v": 1}}, headers=auth)
    await call(client, "PUT", "/v1/sys/rotate", headers=auth)
    await call(client, "PUT", "/v1/secret/data/b", json_body={"data": {"v": 2}}, headers=auth)
    install_time = (await _key_status(client, auth))["install_time"]

    await call(client, "PUT", "/v1/sys/seal", headers=auth)
    await unseal_with(client, unsealed.keys[1:4])

    status = await _key_status(client, auth)
    assert status["term"] == 2
    assert status["install_time"] == install_time
    for name, value in (("a", 1), ("b", 2)):
        reply = await call(client, "GET", f"/v1/secret/data/{name}", headers=auth)
        assert reply.data["data"] == {"v": value}


async def test_key_status_and_rotate_while_sealed_are_503(shamir: Shamir) -> None:
    assert_error(await call(shamir.client, "GET", "/v1/sys/key-status", headers=shamir.auth), 503)
    assert_error(await call(shamir.client, "PUT", "/v1/sys/rotate", headers=shamir.auth), 503)
