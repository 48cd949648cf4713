"""``sys/rekey-recovery-key/*`` under the PKCS#11 seal (SoftHSM2), in process."""

from __future__ import annotations

from typing import Any

from tests.api.helpers import assert_error, call
from tests.hsm.nodes import HsmNode, init

INIT = "/v1/sys/rekey-recovery-key/init"
UPDATE = "/v1/sys/rekey-recovery-key/update"
VERIFY = "/v1/sys/rekey-recovery-key/verify"


async def _enter(node: HsmNode, path: str, keys: list[str], nonce: str) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for key in keys:
        reply = await call(node.client, "PUT", path, json_body={"key": key, "nonce": nonce})
        assert reply.status == 200, str(reply)
        body = reply.body
    return body


async def _generate_root_progress(node: HsmNode, keys: list[str]) -> int:
    """Enter ``keys`` towards a root token; the progress reached, or -1 when refused."""
    attempt = "/v1/sys/generate-root/attempt"
    started = (await call(node.client, "PUT", attempt, json_body={})).body
    try:
        for key in keys:
            reply = await call(
                node.client,
                "PUT",
                "/v1/sys/generate-root/update",
                json_body={"key": key, "nonce": started["nonce"]},
            )
            if reply.status != 200:
                return -1
            if reply.body["complete"]:
                return len(keys)
        return int(reply.body["progress"])
    finally:
        await call(node.client, "DELETE", attempt)


async def test_recovery_rekey_with_verification(node: HsmNode) -> None:
    old = (await init(node, {"recovery_shares": 3, "recovery_threshold": 2})).body["recovery_keys"]
    started = await call(
        node.client,
        "PUT",
        INIT,
        json_body={"secret_shares": 4, "secret_threshold": 3, "require_verification": True},
    )
    assert started.status == 200, str(started)
    assert started.body["required"] == 2
    done = await _enter(node, UPDATE, old[:2], started.body["nonce"])
    assert done["complete"] is True and len(done["keys"]) == 4
    new = done["keys"]
    # pending: the recovery config is unchanged until verified
    assert (await call(node.client, "GET", "/v1/sys/seal-status")).body["t"] == 2
    verified = await _enter(node, VERIFY, new[1:4], done["verification_nonce"])
    assert verified["complete"] is True

    status = (await call(node.client, "GET", "/v1/sys/seal-status")).body
    assert (status["t"], status["n"], status["recovery_seal"]) == (3, 4, True)
    assert await _generate_root_progress(node, new[:3]) == 3
    assert await _generate_root_progress(node, old[:2] + new[:1]) == -1
    # still unsealed by the HSM, whatever the recovery keys
    await node.core.seal()
    await node.core.unseal_with_stored_key()
    assert node.core.sealed is False


async def test_recovery_rekey_without_verification(node: HsmNode) -> None:
    old = (await init(node, {"recovery_shares": 1, "recovery_threshold": 1})).body["recovery_keys"]
    started = (
        await call(node.client, "PUT", INIT, json_body={"secret_shares": 2, "secret_threshold": 2})
    ).body
    done = await _enter(node, UPDATE, old, started["nonce"])
    assert done["complete"] is True and "verification_nonce" not in done
    assert (await call(node.client, "GET", "/v1/sys/seal-status")).body["n"] == 2
    assert await _generate_root_progress(node, done["keys"]) == 2


async def test_barrier_rekey_is_refused_under_an_hsm(node: HsmNode) -> None:
    await init(node, {"recovery_shares": 1, "recovery_threshold": 1})
    reply = await call(node.client, "PUT", "/v1/sys/rekey/init", json_body={"secret_shares": 1})
    assert_error(reply, 400, "sys/rekey-recovery-key")
