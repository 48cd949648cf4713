"""``sys/generate-root``: a new root token from a quorum of key shares and a one-time password."""

from __future__ import annotations

import base64
import string
from typing import Any

import pytest

from tests.api.conftest import THRESHOLD, Shamir
from tests.api.helpers import Reply, assert_error, call

ATTEMPT = "/v1/sys/generate-root/attempt"
UPDATE = "/v1/sys/generate-root/update"
OTP_LENGTH = 28
STATUS_KEYS = {
    "nonce",
    "started",
    "progress",
    "required",
    "complete",
    "encoded_token",
    "encoded_root_token",
    "pgp_fingerprint",
    "otp",
    "otp_length",
}


def decode_token(encoded: str, otp: str) -> str:
    """What an operator does: base64-decode (re-adding padding) and XOR with the OTP."""
    padded = encoded + "=" * (-len(encoded) % 4)
    raw = base64.b64decode(padded)
    assert len(raw) == len(otp)
    return bytes(a ^ b for a, b in zip(raw, otp.encode(), strict=True)).decode()


async def _start(server: Shamir, body: Any = None) -> Reply:
    return await call(server.client, "PUT", ATTEMPT, json_body={} if body is None else body)


async def _update(server: Shamir, key: str, nonce: str) -> Reply:
    return await call(server.client, "PUT", UPDATE, json_body={"key": key, "nonce": nonce})


async def _status(server: Shamir) -> dict[str, Any]:
    reply = await call(server.client, "GET", ATTEMPT)
    assert reply.status == 200, str(reply)
    body: dict[str, Any] = reply.body
    return body


async def _generate(server: Shamir, keys: list[str], body: Any = None) -> tuple[str, str]:
    """Run the whole flow; returns (encoded token, otp)."""
    started = (await _start(server, body)).body
    otp = started["otp"] or (body or {}).get("otp", "")
    reply = None
    for key in keys:
        reply = await _update(server, key, started["nonce"])
        assert reply.status == 200, str(reply)
    assert reply is not None
    assert reply.body["complete"] is True
    return reply.body["encoded_token"], otp


async def test_status_before_any_attempt(unsealed: Shamir) -> None:
    status = await _status(unsealed)

    assert set(status) >= STATUS_KEYS
    assert status["started"] is False
    assert status["progress"] == 0
    assert status["required"] == THRESHOLD
    assert status["complete"] is False
    assert status["nonce"] == ""
    assert status["encoded_token"] == ""
    assert status["otp_length"] == OTP_LENGTH


async def test_full_otp_flow(unsealed: Shamir) -> None:
    started = await _start(unsealed)

    assert started.status == 200, str(started)
    body = started.body
    assert set(body) >= STATUS_KEYS
    assert body["started"] is True
    assert body["progress"] == 0
    assert body["required"] == THRESHOLD
    assert body["otp_length"] == OTP_LENGTH
    assert len(body["otp"]) == OTP_LENGTH
    assert set(body["otp"]) <= set(string.ascii_letters + string.digits)
    assert body["nonce"]
    otp, nonce = body["otp"], body["nonce"]

    status = await _status(unsealed)
    assert status["started"] is True
    assert status["nonce"] == nonce
    assert status["otp"] == ""  # shown once, at the start

    for progress, key in enumerate(unsealed.keys[1:3], start=1):
        step = await _update(unsealed, key, nonce)
        assert step.status == 200, str(step)
        assert step.body["progress"] == progress
        assert step.body["complete"] is False
        assert step.body["encoded_token"] == ""
        assert step.body["nonce"] == nonce
    assert (await _status(unsealed))["progress"] == 2

    done = await _update(unsealed, unsealed.keys[4], nonce)

    assert done.status == 200, str(done)
    final = done.body
    assert final["complete"] is True
    assert final["encoded_token"]
    assert final["encoded_root_token"] == final["encoded_token"]
    token = decode_token(final["encoded_token"], otp)
    assert token.startswith("hvs.")
    assert token != unsealed.init.root_token
    key_status = await call(
        unsealed.client, "GET", "/v1/sys/key-status", headers={"X-Vault-Token": token}
    )
    assert key_status.status == 200, str(key_status)
    rotated = await call(unsealed.client, "PUT", "/v1/sys/rotate", headers={"X-Vault-Token": token})
    assert rotated.status == 204, str(rotated)
    after = await _status(unsealed)
    assert after["started"] is False
    assert after["progress"] == 0
    assert after["nonce"] == ""


async def test_keys_as_base64_work_too(unsealed: Shamir) -> None:
    encoded, otp = await _generate(unsealed, unsealed.init.keys_base64[2:5])

    token = decode_token(encoded, otp)

    reply = await call(
        unsealed.client, "GET", "/v1/sys/key-status", headers={"X-Vault-Token": token}
    )
    assert reply.status == 200


async def test_operator_chosen_otp(unsealed: Shamir) -> None:
    otp = "A1b2C3d4" * 3 + "zZ9y"
    assert len(otp) == OTP_LENGTH

    started = await _start(unsealed, {"otp": otp})

    assert started.status == 200, str(started)
    assert started.body["otp"] == ""  # not echoed back: the operator already has it
    encoded, _ = await _generate_from(unsealed, started.body["nonce"], unsealed.keys[:3])
    token = decode_token(encoded, otp)
    reply = await call(
        unsealed.client, "GET", "/v1/sys/key-status", headers={"X-Vault-Token": token}
    )
    assert reply.status == 200


async def _generate_from(server: Shamir, nonce: str, keys: list[str]) -> tuple[str, int]:
    reply = None
    for key in keys:
        reply = await _update(server, key, nonce)
        assert reply.status == 200, str(reply)
    assert reply is not None
    return reply.body["encoded_token"], reply.body["progress"]


async def test_two_generations_give_two_tokens(unsealed: Shamir) -> None:
    first = decode_token(*await _generate(unsealed, unsealed.keys[:3]))
    second = decode_token(*await _generate(unsealed, unsealed.keys[2:5]))

    assert first != second
    for token in (first, second):
        reply = await call(
            unsealed.client, "GET", "/v1/sys/key-status", headers={"X-Vault-Token": token}
        )
        assert reply.status == 200


async def test_cancel(unsealed: Shamir) -> None:
    nonce = (await _start(unsealed)).body["nonce"]
    await _update(unsealed, unsealed.keys[0], nonce)

    cancelled = await call(unsealed.client, "DELETE", ATTEMPT)

    assert cancelled.status == 204
    assert cancelled.raw == b""
    status = await _status(unsealed)
    assert status["started"] is False
    assert status["progress"] == 0
    assert_error(await _update(unsealed, unsealed.keys[1], nonce), 400)
    restarted = await _start(unsealed)
    assert restarted.status == 200
    assert restarted.body["nonce"] != nonce


async def test_cancel_without_attempt_is_harmless(unsealed: Shamir) -> None:
    reply = await call(unsealed.client, "DELETE", ATTEMPT)

    assert reply.status == 204


async def test_update_without_attempt_is_400(unsealed: Shamir) -> None:
    reply = await _update(unsealed, unsealed.keys[0], "some-nonce")

    assert_error(reply, 400, "no root generation in progress")


async def test_wrong_nonce_is_400(unsealed: Shamir) -> None:
    await _start(unsealed)

    reply = await _update(unsealed, unsealed.keys[0], "not-the-nonce")

    assert_error(reply, 400, "nonce")
    assert (await _status(unsealed))["progress"] == 0


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"key": "KEY"}, "nonce"),
        ({"key": "KEY", "nonce": ""}, "nonce"),
        ({"key": "KEY", "nonce": None}, "nonce"),
        ({"nonce": "NONCE"}, "key"),
        ({"nonce": "NONCE", "key": ""}, "key"),
        ({}, ""),
    ],
)
async def test_missing_nonce_or_key_is_400(
    unsealed: Shamir, body: dict[str, Any], fragment: str
) -> None:
    nonce = (await _start(unsealed)).body["nonce"]
    filled = {
        k: (unsealed.keys[0] if v == "KEY" else nonce if v == "NONCE" else v)
        for k, v in body.items()
    }

    reply = await call(unsealed.client, "PUT", UPDATE, json_body=filled)

    assert_error(reply, 400, fragment)
    assert (await _status(unsealed))["progress"] == 0


@pytest.mark.parametrize("key", ["zz", "not base64!", "00", "ab" * 40, ["x"], {"k": 1}, True])
async def test_bad_key_is_400(unsealed: Shamir, key: Any) -> None:
    nonce = (await _start(unsealed)).body["nonce"]

    reply = await call(unsealed.client, "PUT", UPDATE, json_body={"key": key, "nonce": nonce})

    assert_error(reply, 400)
    assert (await _status(unsealed))["progress"] == 0


async def test_duplicate_key_is_400(unsealed: Shamir) -> None:
    nonce = (await _start(unsealed)).body["nonce"]
    await _update(unsealed, unsealed.keys[0], nonce)

    reply = await _update(unsealed, unsealed.keys[0], nonce)

    assert_error(reply, 400, "already been provided")
    status = await _status(unsealed)
    assert status["progress"] == 1
    assert status["started"] is True


async def test_wrong_key_combination_is_400_and_ends_the_attempt(unsealed: Shamir) -> None:
    nonce = (await _start(unsealed)).body["nonce"]
    await _update(unsealed, unsealed.keys[0], nonce)
    await _update(unsealed, unsealed.keys[1], nonce)
    corrupt = bytearray(bytes.fromhex(unsealed.keys[2]))
    corrupt[0] ^= 0x55

    reply = await _update(unsealed, corrupt.hex(), nonce)

    assert_error(reply, 400)
    status = await _status(unsealed)
    assert status["started"] is False
    assert status["encoded_token"] == ""


async def test_attempt_twice_is_400(unsealed: Shamir) -> None:
    first = await _start(unsealed)

    second = await _start(unsealed)

    assert_error(second, 400, "already in progress")
    assert (await _status(unsealed))["nonce"] == first.body["nonce"]


async def test_pgp_key_is_400(unsealed: Shamir) -> None:
    reply = await _start(unsealed, {"pgp_key": "mQENBFXbjPUBCADjNjCUQwfxKL+RR2GA6pv/1K+zJZ8UWIF9S"})

    assert_error(reply, 400, "pgp")
    assert (await _status(unsealed))["started"] is False


@pytest.mark.parametrize(
    "otp", ["short", "x" * (OTP_LENGTH - 1), "x" * (OTP_LENGTH + 1), "é" * OTP_LENGTH, 12345]
)
async def test_otp_of_wrong_length_is_400(unsealed: Shamir, otp: Any) -> None:
    reply = await _start(unsealed, {"otp": otp})

    assert_error(reply, 400, "otp")
    assert (await _status(unsealed))["started"] is False


async def test_generate_root_needs_no_token(unsealed: Shamir) -> None:
    reply = await call(unsealed.client, "GET", ATTEMPT, headers={"X-Vault-Token": "hvs.bad"})

    assert reply.status == 200


async def test_generate_root_is_unavailable_while_sealed(shamir: Shamir) -> None:
    for method, path, body in [
        ("GET", ATTEMPT, None),
        ("PUT", ATTEMPT, {}),
        ("DELETE", ATTEMPT, None),
        ("PUT", UPDATE, {"key": shamir.keys[0], "nonce": "n"}),
    ]:
        reply = await call(shamir.client, method, path, json_body=body)
        assert_error(reply, 503)
