"""Seal wrap under the PKCS#11 seal (SoftHSM2): mounts' values wrapped by the HSM.

Shown on the raw storage: a seal-wrapped mount's entries are not barrier
frames, and a barrier opened with the right root key but without the HSM
cannot decrypt them (the keyring itself is HSM-wrapped); the engine's
declared paths (KV v2 ``versions/``) are wrapped on every mount; the rest of
an unwrapped mount is unchanged.
"""

from __future__ import annotations

import pytest

from node.barrier.barrier import KEYRING_PATH, Barrier
from node.barrier.seal_wrap import MAGIC
from node.physical.inmem import InmemBackend
from sdk.errors import StorageError
from tests.api.helpers import assert_error, call
from tests.hsm.nodes import HsmNode, init

SECRET = "s3cr3t-value-for-seal-wrap"


async def _keys(physical: InmemBackend, prefix: str, below: str = "") -> list[str]:
    """Every physical key under ``prefix`` (relative to it)."""
    keys: list[str] = []
    for child in await physical.list(prefix + below):
        if child.endswith("/"):
            keys += await _keys(physical, prefix, below + child)
        else:
            keys.append(below + child)
    return keys


async def _mount(node: HsmNode, token: str, path: str, seal_wrap: bool) -> str:
    body = {"type": "kv", "options": {"version": "2"}, "seal_wrap": seal_wrap}
    reply = await call(
        node.client,
        "POST",
        f"/v1/sys/mounts/{path}",
        json_body=body,
        headers={"X-Vault-Token": token},
    )
    assert reply.status == 204, str(reply)
    wrote = await call(
        node.client,
        "PUT",
        f"/v1/{path}/data/app",
        json_body={"data": {"password": SECRET}},
        headers={"X-Vault-Token": token},
    )
    assert wrote.status == 200, str(wrote)
    return node.core.mounts.find("secret", path).storage_prefix


async def _read(node: HsmNode, token: str, path: str) -> str:
    reply = await call(node.client, "GET", f"/v1/{path}/data/app", headers={"X-Vault-Token": token})
    assert reply.status == 200, str(reply)
    value: str = reply.body["data"]["data"]["password"]
    return value


async def test_a_seal_wrapped_mount_is_wrapped_on_disk(node: HsmNode) -> None:
    token = (await init(node, {"recovery_shares": 1, "recovery_threshold": 1})).body["root_token"]
    wrapped = await _mount(node, token, "wrapped", seal_wrap=True)
    plain = await _mount(node, token, "plain", seal_wrap=False)

    wrapped_keys = await _keys(node.physical, wrapped)
    assert any(k.startswith("metadata/") for k in wrapped_keys)
    for key in wrapped_keys:
        raw = (await node.physical.get(wrapped + key)).value  # type: ignore[union-attr]
        assert raw.startswith(MAGIC), key
        assert SECRET.encode() not in raw

    # The barrier alone (the right root key, no HSM) opens the plain entries only.
    root_key = await node.core.lifecycle.auto_seal.stored_root_key()  # type: ignore[union-attr]
    barrier_only = Barrier(node.physical, disable_cache=True)
    barrier_only.unwrapper = node.core.lifecycle.auto_seal  # only to open the keyring
    await barrier_only.unseal(root_key)
    barrier_only.unwrapper = None
    for key in wrapped_keys:
        with pytest.raises(StorageError, match="seal-wrapped"):
            await barrier_only.get(wrapped + key)

    plain_keys = await _keys(node.physical, plain)
    for key in plain_keys:
        raw = (await node.physical.get(plain + key)).value  # type: ignore[union-attr]
        if key.startswith("versions/"):  # KV v2 declares its versions seal-wrapped
            assert raw.startswith(MAGIC), key
        else:
            assert not raw.startswith(MAGIC), key
            assert await barrier_only.get(plain + key) is not None
    assert any(k.startswith("versions/") for k in plain_keys)

    # The keyring is always seal-wrapped under the HSM seal; a barrier without it cannot unseal.
    keyring = await node.physical.get(KEYRING_PATH)
    assert keyring is not None and keyring.value.startswith(MAGIC)
    with pytest.raises(StorageError, match="seal-wrapped"):
        await Barrier(node.physical).unseal(root_key)

    assert await _read(node, token, "wrapped") == SECRET
    await node.core.seal()
    await node.core.unseal_with_stored_key()
    assert await _read(node, token, "wrapped") == SECRET
    assert await _read(node, token, "plain") == SECRET


async def test_seal_wrap_cannot_change_after_mounting(node: HsmNode) -> None:
    token = (await init(node, {"recovery_shares": 1, "recovery_threshold": 1})).body["root_token"]
    await _mount(node, token, "fixed", seal_wrap=True)
    headers = {"X-Vault-Token": token}
    refused = await call(
        node.client,
        "POST",
        "/v1/sys/mounts/fixed/tune",
        json_body={"seal_wrap": False},
        headers=headers,
    )
    assert_error(refused, 400, "seal_wrap cannot be changed")
    listed = await call(node.client, "GET", "/v1/sys/mounts", headers=headers)
    assert listed.body["fixed/"]["seal_wrap"] is True, str(listed)
