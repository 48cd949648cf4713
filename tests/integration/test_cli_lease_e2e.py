"""``coffer lease ...`` and ``coffer operator step-down`` against a real dev server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.server import ServerProcess
from harness.server import dev_server as module_dev_server
from tests.integration.test_cli_e2e import Cli

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

ROOT = "root"
PASSWORD = "pw-e2e-lease"


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with module_dev_server(tmp_path_factory.mktemp("cli-lease-server"), ROOT) as server:
        yield server


@pytest.fixture
def cli(dev: ServerProcess, tmp_path: Path) -> Cli:
    home = tmp_path / "home"
    home.mkdir()
    return Cli(dev, home)


def _login(dev: ServerProcess, mount: str, user: str) -> str:
    reply = dev.request("POST", f"/v1/auth/{mount}/login/{user}", {"password": PASSWORD})
    assert reply.status == 200, str(reply)
    token: str = reply.json["auth"]["client_token"]
    return token


def _alive(dev: ServerProcess, token: str) -> bool:
    return dev.request("GET", "/v1/auth/token/lookup-self", token=token).status == 200


def test_lease_lookup_revoke_and_revoke_prefix(cli: Cli, dev: ServerProcess) -> None:
    cli.ok("auth", "enable", "-path=leasers", "userpass")
    for user in ("ann", "ben"):
        cli.ok("write", f"auth/leasers/users/{user}", f"password={PASSWORD}", "token_ttl=1h")
    ann, ben = _login(dev, "leasers", "ann"), _login(dev, "leasers", "ben")

    keys = cli.ok("list", "-format=json", "sys/leases/lookup/auth/leasers/login/ann").json()
    assert len(keys) == 1
    lease = f"auth/leasers/login/ann/{keys[0]}"
    looked = cli.ok("lease", "lookup", "-format=json", lease).json()
    assert looked["data"]["id"] == lease and looked["data"]["renewable"] is True
    refused = cli.fails(2, "lease", "renew", lease)
    assert "tokens cannot be renewed" in refused.err

    assert cli.ok("lease", "revoke", lease).out == f"Success! Revoked lease: {lease}\n"
    assert not _alive(dev, ann) and _alive(dev, ben)

    assert cli.fails(2, "lease", "revoke", "-force", "auth/leasers/").err.startswith("Error")
    done = cli.ok("lease", "revoke", "-prefix", "auth/leasers/")
    assert done.out == "Success! Revoked any leases with prefix: auth/leasers/\n"
    assert not _alive(dev, ben)

    cli.ok("write", "auth/leasers/users/carl", f"password={PASSWORD}", "token_ttl=1h")
    token = _login(dev, "leasers", "carl")
    forced = cli.ok("lease", "revoke", "-prefix", "-force", "auth/leasers")
    assert forced.out == "Success! Force revoked any leases with prefix: auth/leasers\n"
    assert not _alive(dev, token)


def test_step_down_of_a_dev_server(cli: Cli, dev: ServerProcess) -> None:
    done = cli.ok("operator", "step-down")
    assert done.out == f"Success! Stepped down: {dev.base_url}\n"
    # a single node takes the active role straight back and keeps serving
    assert dev.request("GET", "/v1/sys/health").status == 200
    refused = cli.fails(2, "operator", "step-down", token="not-a-token")
    assert "Code: 403" in refused.err
