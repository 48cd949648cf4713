"""``coffer operator rekey`` end to end: the real CLI against a real server on file storage.

The new shares the CLI prints unseal the server after a restart; the old ones
no longer do.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from harness.process import coffer_command
from harness.server import CofferFactory, ServerProcess
from tests.integration.conftest import no_proxy_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def cli(server: ServerProcess, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**no_proxy_env(), "COFFER_ADDR": server.base_url, "HOME": str(home)}
    return subprocess.run(
        [*coffer_command(), "operator", "rekey", *args],
        input="",
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
        check=False,
    )


def test_rekey_with_verification_through_the_cli(coffer: CofferFactory, tmp_path: Path) -> None:
    server = coffer.file_server().start()
    old = server.init(3, 2)["keys"]
    server.unseal(old[:2])

    started = cli(server, tmp_path, "-init", "-key-shares=2", "-key-threshold=2", "-verify")
    assert started.returncode == 0, started
    assert "Verification Required" in started.stdout and "true" in started.stdout

    first = cli(server, tmp_path, old[0])  # the nonce is read from the status
    assert first.returncode == 0 and "Rekey Progress" in first.stdout, first
    done = cli(server, tmp_path, "-format=json", old[1])
    assert done.returncode == 0, done
    reply = json.loads(done.stdout)
    new, verify_nonce = reply["keys"], reply["verification_nonce"]
    assert len(new) == 2 and verify_nonce

    status = cli(server, tmp_path, "-status", "-verify")
    assert status.returncode == 0 and verify_nonce in status.stdout, status
    assert cli(server, tmp_path, "-verify", new[0]).returncode == 0
    verified = cli(server, tmp_path, "-verify", f"-nonce={verify_nonce}", new[1])
    assert verified.returncode == 0 and "verification complete" in verified.stdout, verified

    server.restart()
    refused = server.request("PUT", "/v1/sys/unseal", {"key": old[0]})
    assert refused.status == 200
    assert server.request("PUT", "/v1/sys/unseal", {"key": old[1]}).status == 400
    server.unseal(new)
    assert server.health() == 200

    wrong_target = cli(server, tmp_path, "-status", "-target=recovery")
    assert wrong_target.returncode == 2 and "sys/rekey" in wrong_target.stderr, wrong_target
