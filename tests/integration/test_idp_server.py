"""The idp method through a real ``coffer server`` process and the provider emulator.

In-process tests give the core an HTTP client themselves; this one proves the
server wires its own outbound client, so a login reaches the provider.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from harness.server import CofferFactory, ServerProcess
from tests.support.idp_emulator import IdpEmulator

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


async def _request(
    server: ServerProcess, method: str, path: str, body: Any = None, **kw: Any
) -> Any:
    # Blocking HTTP runs in a thread so the emulator on this loop can answer Coffer.
    return await asyncio.to_thread(server.request, method, path, body, **kw)


async def test_idp_login_through_a_real_server(coffer: CofferFactory) -> None:
    emulator = IdpEmulator(api_token="api-token-1")
    origin = await emulator.start()
    try:
        emulator.add_user("alice", "correct horse", groups=["engineering"])
        server = coffer.dev_server(root_token="root-id")
        await asyncio.to_thread(server.start)
        root = {"token": "root-id"}
        reply = await _request(server, "POST", "/v1/sys/auth/idp", {"type": "idp"}, **root)
        assert reply.status == 204, reply
        reply = await _request(
            server,
            "POST",
            "/v1/auth/idp/config",
            {"org_name": "example", "base_url": origin, "api_token": "api-token-1"},
            **root,
        )
        assert reply.status in (200, 204), reply
        reply = await _request(
            server, "POST", "/v1/auth/idp/groups/engineering", {"policies": "eng"}, **root
        )
        assert reply.status in (200, 204), reply

        reply = await _request(
            server, "POST", "/v1/auth/idp/login/alice", {"password": "correct horse"}
        )
        assert reply.status == 200, reply
        auth = reply.json["auth"]
        assert "eng" in auth["policies"]
        assert auth["metadata"]["username"] == "alice"
        assert auth["entity_id"], "the login should be linked to an identity entity"
        assert emulator.seen("groups"), "groups are looked up with the api token"

        reply = await _request(server, "POST", "/v1/auth/idp/login/alice", {"password": "wrong"})
        assert reply.status == 400 and reply.errors
    finally:
        await emulator.close()
