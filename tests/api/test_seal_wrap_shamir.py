"""``seal_wrap`` under the Shamir seal: accepted and a no-op, as in the reference."""

from __future__ import annotations

from node.barrier.seal_wrap import MAGIC
from tests.api.helpers import call
from tests.conftest import DevServer


async def test_seal_wrap_is_accepted_and_stores_plain_barrier_frames(dev: DevServer) -> None:
    headers = {"X-Vault-Token": dev.token}
    body = {"type": "kv", "options": {"version": "1"}, "seal_wrap": True}
    mounted = await call(dev.client, "POST", "/v1/sys/mounts/sw", json_body=body, headers=headers)
    assert mounted.status == 204, str(mounted)
    wrote = await call(dev.client, "PUT", "/v1/sw/app", json_body={"a": "b"}, headers=headers)
    assert wrote.status == 204, str(wrote)
    prefix = dev.core.mounts.find("secret", "sw").storage_prefix
    raw = await dev.core.physical.get(prefix + "app")
    assert raw is not None and not raw.value.startswith(MAGIC)
    read = await call(dev.client, "GET", "/v1/sw/app", headers=headers)
    assert read.body["data"] == {"a": "b"}
    mounts = await call(dev.client, "GET", "/v1/sys/mounts", headers=headers)
    assert mounts.body["sw/"]["seal_wrap"] is True
