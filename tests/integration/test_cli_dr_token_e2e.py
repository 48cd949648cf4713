"""``coffer operator generate-root -dr-token`` end to end: the real CLI, as a process of its
own, makes a DR operation token from the node's unseal keys and decodes it.

The server is the real app on a real loopback port, but in this process: the node is
made a DR secondary through ``Core.replication_mode``, the seam replication will fill,
which a ``coffer server`` process does not expose (replication itself is not built
yet). Everything between the CLI and the core is the real HTTP path.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from api.app import create_app
from harness.process import coffer_command
from node.core.core import Core, InitOutput
from node.core.dr_operation import DR_OPERATION_PATHS, verify_dr_operation_token
from node.physical.inmem import InmemBackend
from tests.integration.conftest import no_proxy_env
from tests.listener_server import ListenerTestServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

SHARES, THRESHOLD = 3, 2


@dataclass
class Node:
    core: Core
    url: str
    init: InitOutput


@dataclass
class Ran:
    code: int
    stdout: str
    stderr: str


@pytest.fixture
async def node() -> AsyncIterator[Node]:
    core = Core(InmemBackend())
    server = ListenerTestServer(create_app(core, max_request_size=1024 * 1024), host="127.0.0.1")
    await server.start_server()
    try:
        init = await core.initialize(SHARES, THRESHOLD)
        for key in init.keys_hex[:THRESHOLD]:
            await core.unseal(key)
        assert not core.sealed
        yield Node(core, f"http://127.0.0.1:{server.port}", init)
    finally:
        await server.close()
        await core.close()


async def run_cli(node: Node, home: Path, stdin: str, *args: str, token: str = "") -> Ran:
    """``coffer ARGS`` as a child process (the loop keeps serving), with ``stdin``."""
    env = {**no_proxy_env(), "COFFER_ADDR": node.url, "HOME": str(home)}
    if token:
        env["COFFER_TOKEN"] = token
    proc = await asyncio.create_subprocess_exec(
        *coffer_command(),
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin.encode()), 60)
    assert proc.returncode is not None
    return Ran(proc.returncode, out.decode(), err.decode())


async def cli(node: Node, home: Path, *args: str) -> Ran:
    """``coffer operator generate-root ARGS`` with no client token, as an operator would."""
    return await run_cli(node, home, "", "operator", "generate-root", *args)


async def test_dr_token_from_the_unseal_keys_through_the_cli(node: Node, tmp_path: Path) -> None:
    refused = await cli(node, tmp_path, "-dr-token", "-init")
    assert refused.code == 2, refused
    assert "this cluster is not a DR secondary" in refused.stderr

    node.core.replication_mode = lambda kind: "secondary" if kind == "dr" else "disabled"

    started = await cli(node, tmp_path, "-dr-token", "-init", "-format=json")
    assert started.code == 0, started
    status = json.loads(started.stdout)
    otp, nonce = status["otp"], status["nonce"]
    assert len(otp) == status["otp_length"] == 28
    assert status["required"] == THRESHOLD

    shown = await cli(node, tmp_path, "-dr-token", "-status")
    assert shown.code == 0 and nonce in shown.stdout and "0/2" in shown.stdout, shown
    assert otp not in shown.stdout

    first = await cli(node, tmp_path, "-dr-token", node.init.keys_hex[2])  # nonce from status
    assert first.code == 0 and "1/2" in first.stdout, first
    done = await cli(
        node, tmp_path, "-dr-token", f"-nonce={nonce}", "-format=json", node.init.keys_hex[0]
    )
    assert done.code == 0, done
    final = json.loads(done.stdout)
    assert final["complete"] is True

    decoded = await cli(
        node, tmp_path, "-dr-token", f"-decode={final['encoded_token']}", f"-otp={otp}"
    )

    assert decoded.code == 0, decoded
    token = decoded.stdout.strip()
    assert token.startswith("hvs.") and len(token) == 28
    for path in DR_OPERATION_PATHS:
        assert await verify_dr_operation_token(node.core, token, path)
    promote = "sys/replication/dr/secondary/promote"
    assert not await verify_dr_operation_token(node.core, node.init.root_token, promote)


async def test_batch_dr_token_made_as_docs_replication_md_says(node: Node, tmp_path: Path) -> None:
    policy = (
        'path "sys/replication/dr/secondary/promote" { capabilities = ["update"] }\n'
        'path "sys/replication/dr/secondary/update-primary" { capabilities = ["update"] }\n'
    )
    steps = [
        (policy, ["policy", "write", "dr-secondary-promotion", "-"]),
        (
            "",
            [
                "write",
                "auth/token/roles/failover-handler",
                "allowed_policies=dr-secondary-promotion",
                "orphan=true",
                "renewable=false",
                "token_type=batch",
            ],
        ),
    ]
    for stdin, args in steps:
        ran = await run_cli(node, tmp_path, stdin, *args, token=node.init.root_token)
        assert ran.code == 0, ran
    create = ["token", "create", "-role=failover-handler", "-ttl=8h", "-format=json"]
    created = await run_cli(node, tmp_path, "", *create, token=node.init.root_token)
    assert created.code == 0, created
    token = json.loads(created.stdout)["auth"]["client_token"]
    node.core.replication_mode = lambda kind: "secondary" if kind == "dr" else "disabled"

    base = "sys/replication/dr/secondary/"
    assert token.startswith("hvb.")
    assert await verify_dr_operation_token(node.core, token, base + "promote")
    assert await verify_dr_operation_token(node.core, token, base + "update-primary")
    assert not await verify_dr_operation_token(node.core, token, base + "disable")
