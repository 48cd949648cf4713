"""``sys/rekey/*`` under the Shamir seal: new unseal keys from a quorum of the old ones."""

from __future__ import annotations

from typing import Any

from tests.api.conftest import THRESHOLD, Shamir
from tests.api.helpers import Reply, assert_error, call, unseal_with

INIT = "/v1/sys/rekey/init"
UPDATE = "/v1/sys/rekey/update"
VERIFY = "/v1/sys/rekey/verify"


async def _put(server: Shamir, path: str, body: dict[str, Any]) -> Reply:
    return await call(server.client, "PUT", path, json_body=body)


async def _enter(server: Shamir, path: str, keys: list[str], nonce: str) -> dict[str, Any]:
    reply: Reply | None = None
    for key in keys:
        reply = await _put(server, path, {"key": key, "nonce": nonce})
        assert reply.status == 200, str(reply)
    assert reply is not None
    body: dict[str, Any] = reply.body
    return body


async def _reseal_and_unseal(server: Shamir, keys: list[str]) -> dict[str, Any]:
    await server.core.seal()
    body: dict[str, Any] = (await unseal_with(server.client, keys)).body
    return body


async def test_status_before_any_rekey(unsealed: Shamir) -> None:
    status = (await call(unsealed.client, "GET", INIT)).body
    assert (status["started"], status["nonce"], status["progress"]) == (False, "", 0)
    assert status["required"] == THRESHOLD and status["verification_required"] is False


async def test_rekey_gives_new_shares_that_unseal_and_old_ones_do_not(unsealed: Shamir) -> None:
    started = await _put(unsealed, INIT, {"secret_shares": 3, "secret_threshold": 2})
    assert started.status == 200, str(started)
    assert (started.body["t"], started.body["n"], started.body["started"]) == (2, 3, True)
    nonce = started.body["nonce"]

    progress = await _put(unsealed, UPDATE, {"key": unsealed.keys[0], "nonce": nonce})
    assert progress.body["progress"] == 1 and "keys" not in progress.body
    done = await _enter(unsealed, UPDATE, unsealed.keys[1:THRESHOLD], nonce)

    assert done["complete"] is True and len(done["keys"]) == 3 and len(done["keys_base64"]) == 3
    assert not set(done["keys"]) & set(unsealed.keys)
    status = (await call(unsealed.client, "GET", "/v1/sys/seal-status")).body
    assert (status["t"], status["n"]) == (2, 3)
    assert (await call(unsealed.client, "GET", INIT)).body["started"] is False

    await unsealed.core.seal()
    old = await _put(unsealed, "/v1/sys/unseal", {"key": unsealed.keys[0]})
    assert old.status == 200
    assert_error(await _put(unsealed, "/v1/sys/unseal", {"key": unsealed.keys[1]}), 400)
    assert (await unseal_with(unsealed.client, done["keys"][1:])).body["sealed"] is False


async def test_require_verification_installs_only_after_the_new_keys_are_proven(
    unsealed: Shamir,
) -> None:
    started = await _put(
        unsealed,
        INIT,
        {"secret_shares": 2, "secret_threshold": 2, "require_verification": True},
    )
    assert started.body["verification_required"] is True
    done = await _enter(unsealed, UPDATE, unsealed.keys[:THRESHOLD], started.body["nonce"])
    assert done["complete"] is True and done["verification_required"] is True
    verify_nonce = done["verification_nonce"]
    assert verify_nonce and verify_nonce != started.body["nonce"]
    new_keys = done["keys"]

    # nothing installed yet: the old keys still unseal
    assert (await _reseal_and_unseal(unsealed, unsealed.keys[:THRESHOLD]))["sealed"] is False

    reply = await call(unsealed.client, "GET", VERIFY)
    assert reply.status == 200, str(reply)
    status = reply.body
    assert (status["nonce"], status["progress"], status["t"]) == (verify_nonce, 0, 2)
    assert_error(await _put(unsealed, VERIFY, {"key": new_keys[0], "nonce": "x"}), 400, "nonce")
    # DELETE restarts the verification under a new nonce
    restarted = (await call(unsealed.client, "DELETE", VERIFY)).body
    assert restarted["nonce"] != verify_nonce and restarted["progress"] == 0

    verified = await _enter(unsealed, VERIFY, new_keys, restarted["nonce"])
    assert verified == {"nonce": restarted["nonce"], "complete": True}
    assert (await _reseal_and_unseal(unsealed, new_keys))["sealed"] is False


async def test_verification_with_wrong_keys_restarts_and_keeps_the_old_keys(
    unsealed: Shamir,
) -> None:
    body = {"secret_shares": 2, "secret_threshold": 2, "require_verification": True}
    started = (await _put(unsealed, INIT, body)).body
    done = await _enter(unsealed, UPDATE, unsealed.keys[:THRESHOLD], started["nonce"])
    nonce = done["verification_nonce"]
    await _put(unsealed, VERIFY, {"key": unsealed.keys[0], "nonce": nonce})
    wrong = await _put(unsealed, VERIFY, {"key": unsealed.keys[1], "nonce": nonce})
    assert_error(wrong, 400, "verification restarted")
    assert (await call(unsealed.client, "GET", VERIFY)).body["progress"] == 0
    assert (await _reseal_and_unseal(unsealed, unsealed.keys[:THRESHOLD]))["sealed"] is False


async def test_wrong_quorum_ends_the_attempt_and_changes_nothing(unsealed: Shamir) -> None:
    other = unsealed.keys[0][:-2] + ("00" if unsealed.keys[0][-2:] != "00" else "01")
    started = (await _put(unsealed, INIT, {"secret_shares": 1, "secret_threshold": 1})).body
    await _enter(unsealed, UPDATE, unsealed.keys[:1], started["nonce"])
    await _put(unsealed, UPDATE, {"key": unsealed.keys[1], "nonce": started["nonce"]})
    failed = await _put(unsealed, UPDATE, {"key": other, "nonce": started["nonce"]})
    assert failed.status == 400, str(failed)
    assert (await call(unsealed.client, "GET", INIT)).body["started"] is False
    assert (await _reseal_and_unseal(unsealed, unsealed.keys[2:])).get("sealed") is False


async def test_refusals(unsealed: Shamir) -> None:
    assert_error(await _put(unsealed, INIT, {"secret_shares": 2, "secret_threshold": 3}), 400)
    assert_error(
        await _put(
            unsealed, INIT, {"secret_shares": 3, "secret_threshold": 2, "pgp_keys": ["abc"]}
        ),
        400,
        "pgp_keys",
    )
    assert_error(await _put(unsealed, UPDATE, {"key": unsealed.keys[0], "nonce": "n"}), 400)
    started = (await _put(unsealed, INIT, {"secret_shares": 3, "secret_threshold": 2})).body
    assert_error(await _put(unsealed, INIT, {"secret_shares": 3, "secret_threshold": 2}), 400)
    assert_error(
        await _put(unsealed, UPDATE, {"key": unsealed.keys[0], "nonce": "wrong"}), 400, "nonce"
    )
    assert_error(await call(unsealed.client, "GET", VERIFY), 400, "no rekey verification")
    assert (await call(unsealed.client, "DELETE", INIT)).status == 204
    assert (await call(unsealed.client, "GET", INIT)).body["nonce"] != started["nonce"]
    assert_error(
        await _put(unsealed, "/v1/sys/rekey-recovery-key/init", {"secret_shares": 1}),
        400,
        "sys/rekey",
    )
