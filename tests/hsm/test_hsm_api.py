"""The HTTP API of a core under the PKCS#11 seal (SoftHSM2), in process.

Init hands out recovery keys and leaves the node unsealed; seal-status shows
the recovery seal; recovery keys authorise generate-root and never unseal.
"""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import pytest

from node.core.auto_unseal import AutoUnsealer
from node.core.core import Core
from node.core.dr_operation import verify_dr_operation_token
from node.physical.inmem import InmemBackend
from node.seal.config import SealTypeMismatchError
from node.seal.generate_root import decode_with_otp
from sdk.errors import CofferError
from tests.api.helpers import assert_error, call
from tests.hsm.nodes import HsmNode, hsm_core, init, seal_status
from tests.hsm.softhsm import SoftHsm


async def test_seal_status_before_init(node: HsmNode) -> None:
    status = await seal_status(node)
    assert (status["type"], status["initialized"], status["sealed"]) == ("pkcs11", False, True)
    assert status["recovery_seal"] is True and (status["t"], status["n"]) == (0, 0)


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (
            {"secret_shares": 5, "secret_threshold": 3, "recovery_shares": 5},
            "parameters secret_shares,secret_threshold not applicable to seal type pkcs11",
        ),
        ({"recovery_shares": 0, "recovery_threshold": 0}, "recovery shares must be at least one"),
        ({"recovery_shares": 3, "recovery_threshold": 4}, "recovery threshold cannot be larger"),
        ({"recovery_shares": 2, "recovery_threshold": 1}, "recovery threshold must be greater"),
    ],
)
async def test_init_parameters_fit_the_seal(
    node: HsmNode, body: dict[str, Any], fragment: str
) -> None:
    assert_error(await init(node, body), 400, fragment)
    assert (await seal_status(node))["initialized"] is False


async def test_init_returns_recovery_keys_and_unseals(node: HsmNode) -> None:
    reply = await init(node, {"recovery_shares": 5, "recovery_threshold": 3})
    assert reply.status == 200, str(reply)
    body = reply.body
    assert body["keys"] == [] and body["keys_base64"] == []
    assert len(body["recovery_keys"]) == 5 and len(set(body["recovery_keys"])) == 5
    for hex_key, b64_key in zip(body["recovery_keys"], body["recovery_keys_base64"], strict=True):
        assert bytes.fromhex(hex_key) == base64.b64decode(b64_key)

    status = await seal_status(node)
    assert status["sealed"] is False and status["initialized"] is True
    assert (status["type"], status["recovery_seal"], status["recovery_seal_type"]) == (
        "pkcs11",
        True,
        "shamir",
    )
    assert (status["t"], status["n"]) == (3, 5)
    token = {"X-Vault-Token": body["root_token"]}
    wrote = await call(node.client, "PUT", "/v1/cubbyhole/x", json_body={"a": "b"}, headers=token)
    assert wrote.status == 204, str(wrote)

    # Recovery keys never unseal, whatever the state.
    refused = await call(
        node.client, "PUT", "/v1/sys/unseal", json_body={"key": body["recovery_keys"][0]}
    )
    assert_error(refused, 400, "recovery keys authorise operations but cannot unseal it")
    await node.core.seal()
    refused = await call(
        node.client, "PUT", "/v1/sys/unseal", json_body={"key": body["recovery_keys"][0]}
    )
    assert_error(refused, 400, "cannot unseal")
    assert (await seal_status(node))["sealed"] is True

    # The HSM unseals it again, and the data is there.
    assert await AutoUnsealer(node.core).attempt() is True
    assert (await seal_status(node))["sealed"] is False
    read = await call(node.client, "GET", "/v1/cubbyhole/x", headers=token)
    assert read.status == 200 and read.body["data"] == {"a": "b"}, str(read)


async def test_generate_root_with_recovery_keys(node: HsmNode) -> None:
    body = (await init(node, {"recovery_shares": 3, "recovery_threshold": 2})).body
    started = await call(node.client, "PUT", "/v1/sys/generate-root/attempt", json_body={})
    assert started.status == 200, str(started)
    assert started.body["required"] == 2
    nonce, otp = started.body["nonce"], started.body["otp"]

    update = "/v1/sys/generate-root/update"
    first = await call(
        node.client, "PUT", update, json_body={"key": body["recovery_keys"][0], "nonce": nonce}
    )
    assert first.status == 200 and first.body["progress"] == 1, str(first)
    done = await call(
        node.client, "PUT", update, json_body={"key": body["recovery_keys"][2], "nonce": nonce}
    )
    assert done.status == 200 and done.body["complete"] is True, str(done)
    raw = base64.b64decode(
        done.body["encoded_token"] + "=" * (-len(done.body["encoded_token"]) % 4)
    )
    token = bytes(a ^ b for a, b in zip(raw, otp.encode(), strict=True)).decode()
    lookup = await call(
        node.client, "GET", "/v1/auth/token/lookup-self", headers={"X-Vault-Token": token}
    )
    assert lookup.status == 200 and lookup.body["data"]["policies"] == ["root"], str(lookup)


async def test_generate_root_refuses_wrong_recovery_keys(node: HsmNode, softhsm: SoftHsm) -> None:
    await init(node, {"recovery_shares": 3, "recovery_threshold": 2})
    other = hsm_core(InmemBackend(), softhsm, softhsm.init_token())
    foreign = await other.initialize(0, 0, 3, 2)
    await other.close()
    started = (await call(node.client, "PUT", "/v1/sys/generate-root/attempt", json_body={})).body
    update = "/v1/sys/generate-root/update"
    for key in foreign.recovery_keys_hex[:1]:
        await call(node.client, "PUT", update, json_body={"key": key, "nonce": started["nonce"]})
    last = await call(
        node.client,
        "PUT",
        update,
        json_body={"key": foreign.recovery_keys_hex[1], "nonce": started["nonce"]},
    )
    assert_error(last, 400, "invalid recovery key")


async def test_dr_operation_token_from_recovery_keys(node: HsmNode, softhsm: SoftHsm) -> None:
    """Under an HSM seal the DR strategy checks recovery keys, exactly as generate-root."""
    body = (await init(node, {"recovery_shares": 3, "recovery_threshold": 2})).body
    node.core.replication_mode = lambda kind: "secondary" if kind == "dr" else "disabled"
    base = "/v1/sys/replication/dr/secondary/generate-operation-token"
    other = hsm_core(InmemBackend(), softhsm, softhsm.init_token())
    foreign = await other.initialize(0, 0, 3, 2)
    await other.close()

    async def run(keys: list[str]) -> Any:
        started = (await call(node.client, "PUT", f"{base}/attempt", json_body={})).body
        assert started["required"] == 2
        reply = None
        for key in keys:
            reply = await call(
                node.client,
                "PUT",
                f"{base}/update",
                json_body={"key": key, "nonce": started["nonce"]},
            )
        assert reply is not None
        return started["otp"], reply

    _, refused = await run(foreign.recovery_keys_hex[:2])
    assert_error(refused, 400, "invalid recovery key")
    otp, done = await run([body["recovery_keys"][1], body["recovery_keys"][2]])
    assert done.status == 200 and done.body["complete"] is True, str(done)
    token = decode_with_otp(done.body["encoded_token"], otp)
    assert await verify_dr_operation_token(node.core, token, "sys/replication/dr/secondary/promote")


async def test_dev_bootstrap_under_an_hsm(softhsm: SoftHsm) -> None:
    core = hsm_core(InmemBackend(), softhsm, softhsm.init_token())
    output = await core.dev_bootstrap("dev-root")
    assert output.root_token == "dev-root" and len(output.recovery_keys_base64) == 1
    assert output.keys_base64 == []
    assert not core.sealed
    await core.close()


async def test_restart_on_the_same_storage_unseals_and_rewraps_after_a_rotation(
    softhsm: SoftHsm,
) -> None:
    physical, token = InmemBackend(), softhsm.init_token()
    first = hsm_core(physical, softhsm, token, key_label="key-a")
    output = await first.initialize(0, 0, 1, 1)
    await first.seal()
    await first.lifecycle.seal.close()

    # A new key_label and a restart: the old key still opens the stored root key,
    # which is then re-encrypted with the new one.
    second = hsm_core(physical, softhsm, token, key_label="key-b")
    unsealer = AutoUnsealer(second)
    assert await unsealer.attempt() is True and not second.sealed
    entry = await physical.get("core/root-key")
    assert entry is not None and b'"key_id": "key-b"' in entry.value
    assert await second.tokens.lookup(output.root_token) is not None
    await second.close()


async def test_a_shamir_store_under_an_hsm_server_waits_for_a_migration(
    softhsm: SoftHsm,
) -> None:
    """As Vault: the HSM stanza on a Shamir store is a seal migration, finished by operators."""
    physical = InmemBackend()
    shamir = Core(physical)
    await shamir.initialize(1, 1)
    hsm = hsm_core(physical, softhsm, softhsm.init_token())
    given_up: list[CofferError] = []
    await asyncio.wait_for(AutoUnsealer(hsm, on_fatal=given_up.append).run(), 10)
    assert given_up == [] and hsm.sealed
    status = (await hsm.seal_status()).to_json()
    assert (status["migration"], status["type"], status["recovery_seal"]) == (True, "shamir", False)


async def test_an_hsm_store_is_refused_by_a_shamir_server(softhsm: SoftHsm) -> None:
    physical = InmemBackend()
    hsm = hsm_core(physical, softhsm, softhsm.init_token())
    output = await hsm.initialize(0, 0, 1, 1)
    await hsm.close()
    shamir = Core(physical)  # no stanza at all: no migration is configured
    with pytest.raises(SealTypeMismatchError, match="initialized with seal type pkcs11"):
        await shamir.unseal(output.recovery_keys_hex[0])
    assert shamir.sealed
