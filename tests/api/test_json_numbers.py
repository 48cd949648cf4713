"""Numbers in bodies: what is accepted is stored and read back exactly."""

from __future__ import annotations

from tests.api.helpers import assert_error, call
from tests.conftest import DevServer


async def test_overflowing_number_is_a_400_and_nothing_is_stored(dev: DevServer) -> None:
    reply = await call(
        dev.client, "PUT", "/v1/secret/data/n", data='{"data": {"x": 1e400}}', headers=dev.auth
    )
    assert_error(reply, 400)
    assert "out of range" in reply.body["errors"][0]
    missing = await call(dev.client, "GET", "/v1/secret/data/n", headers=dev.auth)
    assert missing.status == 404


async def test_large_integers_and_unicode_round_trip(dev: DevServer) -> None:
    value = {"big": 2**70, "small": -(2**63), "float": 0.1, "text": "é ✓ \u0000"}
    written = await call(
        dev.client, "PUT", "/v1/secret/data/n", json_body={"data": value}, headers=dev.auth
    )
    assert written.status == 200
    read = await call(dev.client, "GET", "/v1/secret/data/n", headers=dev.auth)
    assert read.body["data"]["data"] == value
