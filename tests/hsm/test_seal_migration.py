"""Seal migration Shamir -> pkcs11 -> Shamir with real servers and a SoftHSM2 token.

As Vault: restart with the new seal configured (a ``seal "pkcs11"`` stanza to
go to the HSM; the same stanza with ``disabled = "true"`` to go back), see
``migration: true`` in seal-status, and unseal with ``migrate: true`` using
the old seal's keys. The old unseal keys become the recovery keys and back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.server import CofferFactory, ServerProcess, file_config
from tests.hsm.softhsm import SoftHsm
from tests.hsm.test_hsm_server import generate_root, hsm_server

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def status(server: ServerProcess) -> dict[str, Any]:
    reply = server.request("GET", "/v1/sys/seal-status")
    assert reply.status == 200, reply
    body: dict[str, Any] = reply.json
    return body


def migrate(server: ServerProcess, keys: list[str]) -> dict[str, Any]:
    refused = server.request("PUT", "/v1/sys/unseal", {"key": keys[0]})
    assert refused.status == 400 and "migrate" in refused.errors[0], refused
    body: dict[str, Any] = {}
    for key in keys:
        reply = server.request("PUT", "/v1/sys/unseal", {"key": key, "migrate": True})
        assert reply.status == 200, reply
        body = reply.json
    return body


def read(server: ServerProcess, token: str) -> Any:
    reply = server.request("GET", "/v1/kv/app", token=token)
    assert reply.status == 200, reply
    return reply.json["data"]


def test_shamir_to_pkcs11_and_back(coffer: CofferFactory, softhsm: SoftHsm, tmp_path: Path) -> None:
    data = tmp_path / "data"
    port = coffer.free_port()
    shamir = coffer.with_config(file_config(f"127.0.0.1:{port}", data), port=port).start()
    init = shamir.init(3, 2)
    keys, root = init["keys"], init["root_token"]
    shamir.unseal(keys[:2])
    mounted = shamir.request("POST", "/v1/sys/mounts/kv", {"type": "kv"}, token=root)
    assert mounted.status == 204, mounted
    assert shamir.request("PUT", "/v1/kv/app", {"a": "b"}, token=root).status == 204
    assert shamir.stop() == 0

    # Shamir -> pkcs11: the HSM stanza in force, the store still Shamir.
    token = softhsm.init_token()
    hsm = hsm_server(coffer, softhsm, token, data).start()
    before = status(hsm)
    assert (before["migration"], before["type"], before["sealed"]) == (True, "shamir", True)
    after = migrate(hsm, keys[1:3])
    assert after["sealed"] is False
    now = status(hsm)
    assert (now["migration"], now["type"], now["recovery_seal"]) == (False, "pkcs11", True)
    assert (now["t"], now["n"]) == (2, 3)
    assert read(hsm, root) == {"a": "b"}
    hsm.restart(wait=False)
    hsm.wait_ready(healthy=True)  # unsealed by the HSM, no key typed
    assert read(hsm, root) == {"a": "b"}
    assert generate_root(hsm, keys[:2])  # the old unseal keys are the recovery keys
    wrapped = hsm.request(
        "POST", "/v1/sys/mounts/sw", {"type": "kv", "seal_wrap": True}, token=root
    )
    assert wrapped.status == 204, wrapped
    assert hsm.request("PUT", "/v1/sw/app", {"w": "x"}, token=root).status == 204
    assert hsm.stop() == 0

    # pkcs11 -> Shamir: the same stanza, disabled.
    back = hsm_server(coffer, softhsm, token, data, disabled="true").start()
    pending = status(back)
    assert (pending["migration"], pending["type"], pending["sealed"]) == (True, "pkcs11", True)
    assert migrate(back, [keys[0], keys[2]])["sealed"] is False
    done = status(back)
    assert (done["migration"], done["type"], done["recovery_seal"]) == (False, "shamir", False)
    assert (done["t"], done["n"]) == (2, 3)
    assert read(back, root) == {"a": "b"}
    # seal-wrapped entries still read while the disabled stanza names the HSM
    sw = back.request("GET", "/v1/sw/app", token=root)
    assert sw.status == 200 and sw.json["data"] == {"w": "x"}, sw
    assert back.stop() == 0

    plain = coffer.with_config(file_config(f"127.0.0.1:{port}", data), port=port).start()
    assert status(plain)["sealed"] is True
    plain.unseal(keys[1:3])
    assert read(plain, root) == {"a": "b"}
