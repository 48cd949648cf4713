"""DR operation tokens: the generate-operation-token OTP flow, its gate, deletion,
batch DR operation tokens made on the primary, and ``sys/decode-token``.

The cluster's replication mode is set per test through the seam these endpoints
read (``Core.replication_mode``); everything else is real HTTP. Real DR
secondaries: ``tests/replication/test_replication_e2e.py``.
"""

from __future__ import annotations

import string
from typing import Any

import pytest

from node.core.core import Core
from node.core.dr_operation import DR_OPERATION_PATHS, verify_dr_operation_token
from tests.api.conftest import THRESHOLD, Shamir
from tests.api.helpers import Reply, assert_error, call

BASE = "/v1/sys/replication/dr/secondary"
ATTEMPT = f"{BASE}/generate-operation-token/attempt"
UPDATE = f"{BASE}/generate-operation-token/update"
DELETE_TOKEN = f"{BASE}/operation-token/delete"
DECODE = "/v1/sys/decode-token"
PROMOTE = "sys/replication/dr/secondary/promote"
OTP_LENGTH = 28
NOT_SECONDARY = "this cluster is not a DR secondary"


def set_mode(core: Core, dr: str, performance: str = "disabled") -> None:
    core.replication_mode = lambda kind: dr if kind == "dr" else performance


@pytest.fixture
async def secondary(unsealed: Shamir) -> Shamir:
    set_mode(unsealed.core, "secondary")
    return unsealed


async def _start(server: Shamir, body: Any = None, method: str = "PUT") -> Reply:
    return await call(server.client, method, ATTEMPT, json_body={} if body is None else body)


async def _update(server: Shamir, key: str, nonce: str, method: str = "PUT") -> Reply:
    return await call(server.client, method, UPDATE, json_body={"key": key, "nonce": nonce})


async def _status(server: Shamir) -> dict[str, Any]:
    reply = await call(server.client, "GET", ATTEMPT)
    assert reply.status == 200, str(reply)
    body: dict[str, Any] = reply.body
    return body


async def _decode(server: Shamir, encoded: str, otp: str) -> str:
    reply = await call(
        server.client, "PUT", DECODE, json_body={"encoded_token": encoded, "otp": otp}
    )
    assert reply.status == 200, str(reply)
    token: str = reply.data["token"]
    return token


async def _generate(server: Shamir, keys: list[str]) -> str:
    """The whole flow with a server-made OTP; returns the decoded DR operation token."""
    started = (await _start(server)).body
    reply = None
    for key in keys:
        reply = await _update(server, key, started["nonce"])
        assert reply.status == 200, str(reply)
    assert reply is not None and reply.body["complete"] is True, str(reply)
    return await _decode(server, reply.body["encoded_token"], started["otp"])


# --- the gate -------------------------------------------------------------------------------------

ENDPOINTS = [
    ("GET", ATTEMPT, None),
    ("PUT", ATTEMPT, {}),
    ("POST", ATTEMPT, {}),
    ("DELETE", ATTEMPT, None),
    ("PUT", UPDATE, {"key": "00" * 33, "nonce": "n"}),
    ("POST", DELETE_TOKEN, {"dr_operation_token": "hvs." + "a" * 24}),
]


@pytest.mark.parametrize(
    ("dr", "performance"),
    [
        ("disabled", "disabled"),
        ("primary", "disabled"),
        ("disabled", "secondary"),
        ("bootstrapping", "disabled"),
    ],
)
@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
async def test_answered_only_on_a_dr_secondary(
    unsealed: Shamir, dr: str, performance: str, method: str, path: str, body: Any
) -> None:
    set_mode(unsealed.core, dr, performance)

    reply = await call(unsealed.client, method, path, json_body=body)

    assert_error(reply, 400, NOT_SECONDARY)


async def test_the_default_seam_is_not_a_dr_secondary(unsealed: Shamir) -> None:
    assert unsealed.core.replication_mode("dr") == "disabled"
    assert unsealed.core.replication_mode("performance") == "disabled"

    assert_error(await _start(unsealed), 400, NOT_SECONDARY)


async def test_a_refused_start_leaves_nothing_behind(unsealed: Shamir) -> None:
    await _start(unsealed)
    set_mode(unsealed.core, "secondary")

    assert (await _status(unsealed))["started"] is False


# --- the OTP flow ---------------------------------------------------------------------------------


async def test_full_flow_with_a_server_generated_otp(secondary: Shamir) -> None:
    before = await _status(secondary)
    assert before["started"] is False
    assert before["required"] == THRESHOLD
    assert before["otp_length"] == OTP_LENGTH
    assert before["nonce"] == "" and before["encoded_token"] == ""

    started = await _start(secondary)

    assert started.status == 200, str(started)
    body = started.body
    assert body["started"] is True and body["progress"] == 0 and body["required"] == THRESHOLD
    assert len(body["otp"]) == OTP_LENGTH == body["otp_length"]
    assert set(body["otp"]) <= set(string.ascii_letters + string.digits)
    otp, nonce = body["otp"], body["nonce"]
    status = await _status(secondary)
    assert status["otp"] == ""  # never shown again
    assert otp not in str(status)
    assert status["nonce"] == nonce and status["started"] is True

    for progress, key in enumerate(secondary.keys[1:3], start=1):
        step = await _update(secondary, key, nonce)
        assert step.status == 200, str(step)
        assert (step.body["progress"], step.body["complete"]) == (progress, False)
        assert step.body["encoded_token"] == "" and step.body["otp"] == ""
    done = await _update(secondary, secondary.keys[4], nonce)

    assert done.status == 200, str(done)
    assert done.body["complete"] is True
    token = await _decode(secondary, done.body["encoded_token"], otp)
    assert token.startswith("hvs.") and len(token) == OTP_LENGTH
    for path in DR_OPERATION_PATHS:
        assert await verify_dr_operation_token(secondary.core, token, path), path
    after = await _status(secondary)
    assert (after["started"], after["progress"], after["nonce"]) == (False, 0, "")


async def test_operator_chosen_otp_and_post(secondary: Shamir) -> None:
    otp = "Zy9" * 9 + "x"
    assert len(otp) == OTP_LENGTH
    started = await _start(secondary, {"otp": otp}, method="POST")
    assert started.status == 200, str(started)
    assert started.body["otp"] == ""
    reply = None
    for key in secondary.init.keys_base64[:THRESHOLD]:
        reply = await _update(secondary, key, started.body["nonce"], method="POST")
    assert reply is not None and reply.body["complete"] is True, str(reply)

    token = await _decode(secondary, reply.body["encoded_token"], otp)

    assert await verify_dr_operation_token(secondary.core, token, PROMOTE)


async def test_the_token_authorises_dr_operations_only(secondary: Shamir) -> None:
    token = await _generate(secondary, secondary.keys[:THRESHOLD])

    assert not await verify_dr_operation_token(secondary.core, token, "sys/mounts")
    assert not await verify_dr_operation_token(secondary.core, token, "secret/data/x")
    as_client = await call(
        secondary.client, "GET", "/v1/sys/key-status", headers={"X-Vault-Token": token}
    )
    assert_error(as_client, 403)
    wrong = token[:-1] + ("a" if token[-1] != "a" else "b")
    assert not await verify_dr_operation_token(secondary.core, wrong, PROMOTE)


async def test_two_generations_give_two_tokens_both_valid(secondary: Shamir) -> None:
    first = await _generate(secondary, secondary.keys[:3])
    second = await _generate(secondary, secondary.keys[2:5])

    assert first != second
    for token in (first, second):
        assert await verify_dr_operation_token(secondary.core, token, PROMOTE)


async def test_needs_no_client_token(secondary: Shamir) -> None:
    reply = await call(secondary.client, "GET", ATTEMPT, headers={"X-Vault-Token": "hvs.bad"})

    assert reply.status == 200, str(reply)


async def test_cancel(secondary: Shamir) -> None:
    nonce = (await _start(secondary)).body["nonce"]
    await _update(secondary, secondary.keys[0], nonce)

    cancelled = await call(secondary.client, "DELETE", ATTEMPT)

    assert cancelled.status == 204
    assert (await _status(secondary))["started"] is False
    assert_error(await _update(secondary, secondary.keys[1], nonce), 400, "no DR operation")


# --- validation, as generate-root's ---------------------------------------------------------------


async def test_update_without_attempt_is_400(secondary: Shamir) -> None:
    reply = await _update(secondary, secondary.keys[0], "some-nonce")

    assert_error(reply, 400, "no DR operation token generation in progress")


async def test_wrong_nonce_is_400(secondary: Shamir) -> None:
    await _start(secondary)

    reply = await _update(secondary, secondary.keys[0], "not-the-nonce")

    assert_error(reply, 400, "incorrect nonce")
    assert (await _status(secondary))["progress"] == 0


async def test_duplicate_key_is_400(secondary: Shamir) -> None:
    nonce = (await _start(secondary)).body["nonce"]
    await _update(secondary, secondary.keys[0], nonce)

    reply = await _update(secondary, secondary.keys[0], nonce)

    assert_error(reply, 400, "already been provided")
    assert (await _status(secondary))["progress"] == 1


async def test_key_of_another_length_is_400(secondary: Shamir) -> None:
    nonce = (await _start(secondary)).body["nonce"]
    await _update(secondary, secondary.keys[0], nonce)

    reply = await _update(secondary, secondary.keys[1][:-2], nonce)

    assert_error(reply, 400, "length")
    assert (await _status(secondary))["progress"] == 1


@pytest.mark.parametrize("key", ["zz", "not base64!", "", ["x"], {"k": 1}, True])
async def test_bad_key_is_400(secondary: Shamir, key: Any) -> None:
    nonce = (await _start(secondary)).body["nonce"]

    reply = await call(secondary.client, "PUT", UPDATE, json_body={"key": key, "nonce": nonce})

    assert_error(reply, 400)
    assert (await _status(secondary))["progress"] == 0


async def test_wrong_key_combination_is_400_and_mints_nothing(secondary: Shamir) -> None:
    nonce = (await _start(secondary)).body["nonce"]
    await _update(secondary, secondary.keys[0], nonce)
    await _update(secondary, secondary.keys[1], nonce)
    corrupt = bytearray(bytes.fromhex(secondary.keys[2]))
    corrupt[0] ^= 0x55

    reply = await _update(secondary, corrupt.hex(), nonce)

    assert_error(reply, 400)
    assert (await _status(secondary))["started"] is False
    assert await secondary.core.barrier.list("core/dr-operation-token/") == []


async def test_attempt_twice_is_400(secondary: Shamir) -> None:
    first = await _start(secondary)

    assert_error(await _start(secondary), 400, "already in progress")
    assert (await _status(secondary))["nonce"] == first.body["nonce"]


@pytest.mark.parametrize(
    "body",
    [
        {"pgp_key": "mQENBFXbjPUBCADjNjCUQwfxKL"},
        {"otp": "short"},
        {"otp": "x" * (OTP_LENGTH + 1)},
        {"otp": "é" * OTP_LENGTH},
        {"otp": 12345},
    ],
)
async def test_bad_start_is_400(secondary: Shamir, body: dict[str, Any]) -> None:
    assert_error(await _start(secondary, body), 400)
    assert (await _status(secondary))["started"] is False


async def test_one_generation_at_a_time_with_generate_root(secondary: Shamir) -> None:
    dr_nonce = (await _start(secondary)).body["nonce"]

    root_start = await call(secondary.client, "PUT", "/v1/sys/generate-root/attempt", json_body={})
    assert_error(root_start, 400, "DR operation token generation already in progress")
    root_status = await call(secondary.client, "GET", "/v1/sys/generate-root/attempt")
    assert root_status.body["started"] is False
    root_update = await call(
        secondary.client,
        "PUT",
        "/v1/sys/generate-root/update",
        json_body={"key": secondary.keys[0], "nonce": dr_nonce},
    )
    assert_error(root_update, 400, "no root generation in progress")
    await call(secondary.client, "DELETE", "/v1/sys/generate-root/attempt")
    assert (await _status(secondary))["nonce"] == dr_nonce  # another strategy's cancel


async def test_a_promoted_secondary_drops_its_pending_attempt(secondary: Shamir) -> None:
    await _start(secondary)
    set_mode(secondary.core, "primary")  # promoted: the DR attempt can no longer be cancelled

    root_start = await call(secondary.client, "PUT", "/v1/sys/generate-root/attempt", json_body={})

    assert root_start.status == 200, str(root_start)
    set_mode(secondary.core, "secondary")
    assert (await _status(secondary))["started"] is False


async def test_unavailable_while_sealed(shamir: Shamir) -> None:
    set_mode(shamir.core, "secondary")

    assert_error(await call(shamir.client, "GET", ATTEMPT), 503)


# --- operation-token/delete -----------------------------------------------------------------------


async def test_delete_a_generated_token(secondary: Shamir) -> None:
    token = await _generate(secondary, secondary.keys[:THRESHOLD])

    deleted = await call(
        secondary.client, "POST", DELETE_TOKEN, json_body={"dr_operation_token": token}
    )

    assert deleted.status == 204, str(deleted)
    assert not await verify_dr_operation_token(secondary.core, token, PROMOTE)
    again = await call(
        secondary.client, "POST", DELETE_TOKEN, json_body={"dr_operation_token": token}
    )
    errors = assert_error(again, 403, "invalid DR operation token")
    assert token not in str(errors)


@pytest.mark.parametrize("body", [{}, {"dr_operation_token": ""}, {"dr_operation_token": None}])
async def test_delete_without_a_token_is_400(secondary: Shamir, body: dict[str, Any]) -> None:
    assert_error(await call(secondary.client, "POST", DELETE_TOKEN, json_body=body), 400)


# --- batch DR operation tokens made on the primary ------------------------------------------------

PROMOTION_POLICY = """
path "sys/replication/dr/secondary/promote" { capabilities = ["update"] }
path "sys/replication/dr/secondary/update-primary" { capabilities = ["update"] }
path "sys/replication/dr/secondary/operation-token/delete" { capabilities = ["update"] }
"""


async def _batch_token(server: Shamir, role: dict[str, Any], policies: list[str]) -> str:
    """What the reference documents on the primary: a policy, a batch role, a token."""
    auth = server.auth
    put = await call(
        server.client,
        "PUT",
        "/v1/sys/policies/acl/dr-secondary-promotion",
        json_body={"policy": PROMOTION_POLICY},
        headers=auth,
    )
    assert put.status in (200, 204), str(put)
    role_reply = await call(
        server.client,
        "POST",
        "/v1/auth/token/roles/failover-handler",
        json_body=role,
        headers=auth,
    )
    assert role_reply.status in (200, 204), str(role_reply)
    created = await call(
        server.client,
        "POST",
        "/v1/auth/token/create/failover-handler",
        json_body={"policies": policies, "ttl": "8h"},
        headers=auth,
    )
    assert created.status == 200, str(created)
    token: str = created.body["auth"]["client_token"]
    return token


FAILOVER_ROLE = {
    "allowed_policies": "dr-secondary-promotion",
    "orphan": True,
    "renewable": False,
    "token_type": "batch",
}


async def test_batch_token_from_the_primary_authorises_what_its_policy_grants(
    unsealed: Shamir,
) -> None:
    token = await _batch_token(unsealed, FAILOVER_ROLE, ["dr-secondary-promotion"])
    assert token.startswith("hvb.")
    set_mode(unsealed.core, "secondary")  # the primary's storage, now seen by a DR secondary
    core = unsealed.core

    assert await verify_dr_operation_token(core, token, PROMOTE)
    assert await verify_dr_operation_token(
        core, token, "sys/replication/dr/secondary/update-primary"
    )
    assert not await verify_dr_operation_token(core, token, "sys/replication/dr/secondary/disable")
    assert not await verify_dr_operation_token(core, token, "sys/mounts")
    tampered = token[:-2] + ("AA" if not token.endswith("AA") else "BB")
    assert not await verify_dr_operation_token(core, tampered, PROMOTE)
    refused = await call(
        unsealed.client, "POST", DELETE_TOKEN, json_body={"dr_operation_token": token}
    )
    assert_error(refused, 400, "cannot be deleted")


async def test_service_tokens_are_not_dr_operation_tokens(unsealed: Shamir) -> None:
    service_role = {**FAILOVER_ROLE, "token_type": "service"}
    service = await _batch_token(unsealed, service_role, ["dr-secondary-promotion"])
    set_mode(unsealed.core, "secondary")

    for token in (service, unsealed.init.root_token, "", "hvb.garbage", "x" * 28):
        assert not await verify_dr_operation_token(unsealed.core, token, PROMOTE), token


async def test_batch_token_without_the_policy_is_refused(unsealed: Shamir) -> None:
    role = {**FAILOVER_ROLE, "allowed_policies": "default"}
    token = await _batch_token(unsealed, role, ["default"])
    set_mode(unsealed.core, "secondary")

    assert not await verify_dr_operation_token(unsealed.core, token, PROMOTE)


# --- sys/decode-token -----------------------------------------------------------------------------


async def test_decode_token_round_trip_without_a_client_token(unsealed: Shamir) -> None:
    from node.seal.generate_root import encode_with_otp

    token, otp = "hvs." + "Q" * 24, "0123456789abcdefghijklmnopqr"
    encoded = encode_with_otp(token, otp)

    assert await _decode(unsealed, encoded, otp) == token
    assert await _decode(unsealed, encoded + "==", otp) == token  # padded too


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({}, "required"),
        ({"encoded_token": "AAAA"}, "required"),
        ({"otp": "x" * 28}, "required"),
        ({"encoded_token": "not*base64!", "otp": "x" * 28}, "base64"),
        ({"encoded_token": "AAAA", "otp": "x" * 28}, "length"),
        ({"encoded_token": "gICA", "otp": "xxx"}, "not text"),
        ({"encoded_token": ["AAAA"], "otp": "xxx"}, ""),
    ],
)
async def test_decode_token_bad_input_is_400(
    unsealed: Shamir, body: dict[str, Any], fragment: str
) -> None:
    reply = await call(unsealed.client, "PUT", DECODE, json_body=body)

    errors = assert_error(reply, 400, fragment)
    assert "x" * 28 not in str(errors)
