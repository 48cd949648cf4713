"""``coffer server -dev``: in memory, initialised, unsealed, with a KV v2 mount at secret/."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from harness.server import CofferFactory, ServerProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def banner_value(server: ServerProcess, label: str) -> str:
    found = re.findall(rf"^{label}: (\S+)$", server.stdout_text(), re.MULTILINE)
    assert len(found) == 1, server.stdout_text()
    return found[0]


def test_dev_server_with_chosen_root_token(coffer: CofferFactory) -> None:
    server = coffer.dev_server(root_token="mytoken").start()

    assert banner_value(server, "Root Token") == "mytoken"
    unseal_key = banner_value(server, "Unseal Key")
    assert server.address in server.stdout_text()

    health = server.request("GET", "/v1/sys/health")
    assert health.status == 200, health
    assert (health.json["initialized"], health.json["sealed"]) == (True, False)
    status = server.request("GET", "/v1/sys/seal-status").json
    assert (status["sealed"], status["t"], status["n"], status["storage_type"]) == (
        False,
        1,
        1,
        "inmem",
    )

    mounts = server.request("GET", "/v1/sys/mounts", token="mytoken")
    assert mounts.status == 200, mounts
    secret = mounts.json["data"]["secret/"]
    assert secret["type"] == "kv"
    assert secret["options"] == {"version": "2"}
    assert "sys/" in mounts.json["data"]
    # The Vault header spelling works as well, and other tokens do not.
    vault_header = server.request("GET", "/v1/sys/mounts", headers={"X-Vault-Token": "mytoken"})
    assert vault_header.status == 200, vault_header
    assert server.request("GET", "/v1/sys/mounts", token="mytoken2").status == 403
    assert server.request("GET", "/v1/sys/mounts").status == 403

    # secret/ really is versioned KV.
    server.kv_put("mytoken", "dev/app", {"a": "1"})
    second = server.kv_put("mytoken", "dev/app", {"a": "2"})
    assert second.json["data"]["version"] == 2
    assert server.kv_get("mytoken", "dev/app") == {"a": "2"}
    meta = server.request("GET", "/v1/secret/metadata/dev/app", token="mytoken")
    assert meta.status == 200 and sorted(meta.json["data"]["versions"]) == ["1", "2"], meta

    # The printed unseal key is the real one: seal, then unseal with it.
    assert server.request("PUT", "/v1/sys/seal", token="mytoken").status in (200, 204)
    assert server.health() == 503
    assert server.request("GET", "/v1/secret/data/dev/app", token="mytoken").status == 503
    unsealed = server.request("PUT", "/v1/sys/unseal", {"key": unseal_key})
    assert unsealed.status == 200 and unsealed.json["sealed"] is False, unsealed
    assert server.kv_get("mytoken", "dev/app") == {"a": "2"}
    assert server.stop() == 0


def test_dev_server_generates_a_root_token(coffer: CofferFactory) -> None:
    server = coffer.dev_server().start()
    token = banner_value(server, "Root Token")
    assert token.startswith("hvs.") and len(token) > 10
    assert server.request("GET", "/v1/sys/mounts", token=token).status == 200
    assert server.request("GET", "/v1/sys/mounts", token="mytoken").status == 403
    assert server.stop() == 0
