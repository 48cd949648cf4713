"""A DR failover made the operator's way, and the performance role moving with it.

Three real single-node clusters: a primary, its performance secondary and its
DR secondary. The DR operation token is generated on the DR secondary with the
real CLI (``coffer operator generate-root -dr-token``, one process per step)
from a quorum of the primary's unseal keys and decoded locally; the primary is
killed and the DR secondary promoted with that token. The promoted cluster
takes over the old primary's performance role: the performance secondary is
repointed with ``update-primary`` and a token from it, keeps its data and its
own tokens (no wipe), and receives the new primary's writes.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.ports import free_port
from harness.process import coffer_command
from tests.integration.conftest import no_proxy_env
from tests.replication.clusters import Site, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.serial]

ADMIN = 'path "*" { capabilities = ["create", "read", "update", "delete", "list", "sudo"] }'


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Site]]:
    base: Path = tmp_path_factory.mktemp("failover")
    started: dict[str, Site] = {}
    try:
        for name in ("primary", "perf", "dr"):
            started[name] = Site(base / name).start()
        primary = started["primary"]
        primary.ok("POST", "sys/policy/admin", {"policy": ADMIN})
        primary.ok("POST", "sys/auth/userpass", {"type": "userpass"})
        primary.ok("POST", "auth/userpass/users/ops", {"password": "pw", "policies": "admin"})
        primary.ok("POST", "secret/data/before", {"data": {"v": "written before the loss"}})
        primary.enable_primary("performance")
        primary.enable_primary("dr")
        started["perf"].become_secondary(
            "performance", primary.secondary_token("performance", "perf1"), primary
        )
        started["dr"].become_secondary("dr", primary.secondary_token("dr", "dr1"), primary)
        # A first login on the perf secondary has its entity made by the primary;
        # later ones (while the primary is lost) find it there.
        wait_until(lambda: _login(started["perf"]), 30, "a first login on the perf secondary")
        yield started
    finally:
        for site in started.values():
            site.close()


def _cli(site: Site, home: Path, *args: str) -> str:
    """``coffer operator generate-root -dr-token ARGS`` against ``site``, no client token."""
    env = {**no_proxy_env(), "COFFER_ADDR": site.node0.api_addr, "HOME": str(home)}
    ran = subprocess.run(
        [*coffer_command(), "operator", "generate-root", "-dr-token", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 0, (args[:1], ran.stdout, ran.stderr)
    return ran.stdout


def _read(site: Site, path: str) -> dict[str, str] | None:
    reply = site.call("GET", path)
    if reply.status != 200:
        return None
    data: dict[str, str] = reply.json["data"]["data"]
    return data


def _login(site: Site) -> str:
    reply = site.call("POST", "auth/userpass/login/ops", {"password": "pw"}, token="")
    assert reply.status == 200, reply.body
    token: str = reply.json["auth"]["client_token"]
    return token


def test_promote_with_a_dr_token_generated_on_the_secondary_through_the_cli(
    sites: dict[str, Site], tmp_path: Path
) -> None:
    primary, dr = sites["primary"], sites["dr"]
    started = json.loads(_cli(dr, tmp_path, "-init", "-format=json"))
    otp, nonce = started["otp"], started["nonce"]
    assert started["required"] == primary.threshold
    final: dict[str, object] = {}
    for key in primary.keys[: primary.threshold]:
        final = json.loads(_cli(dr, tmp_path, f"-nonce={nonce}", "-format=json", key))
    assert final["complete"] is True
    token = _cli(dr, tmp_path, f"-decode={final['encoded_token']}", f"-otp={otp}").strip()
    assert token and token != primary.root_token

    primary.ok("POST", "secret/data/final", {"data": {"v": "acknowledged before the loss"}})

    def dr_caught_up() -> bool:
        theirs, mine = primary.status("dr"), dr.status("dr")
        return bool(mine["merkle_root"]) and mine["merkle_root"] == theirs["merkle_root"]

    wait_until(dr_caught_up, 30, "the DR secondary to catch up")
    primary.node0.kill()

    body = {
        "dr_operation_token": token,
        "primary_cluster_addr": f"127.0.0.1:{free_port()}",
        "performance_primary_cluster_addr": f"127.0.0.1:{free_port()}",
    }
    reply = dr.call("POST", "sys/replication/dr/secondary/promote", body, token="")
    assert reply.status == 200, reply.body
    assert any("performance primary role" in w for w in reply.json["warnings"])
    wait_until(lambda: dr.node0.health() == 200, 30, "the promoted cluster to serve")
    dr.token = primary.root_token  # the primary's tokens came along
    assert _read(dr, "secret/data/final") == {"v": "acknowledged before the loss"}
    assert _read(dr, "secret/data/before") == {"v": "written before the loss"}
    assert dr.status("dr")["mode"] == "primary"
    assert dr.status("performance")["mode"] == "primary"


def test_the_perf_secondary_follows_the_promoted_cluster_without_a_wipe(
    sites: dict[str, Site],
) -> None:
    """Runs after the promotion above."""
    dr, perf = sites["dr"], sites["perf"]
    assert dr.status("performance")["mode"] == "primary", "needs the promotion test first"
    perf.token = wait_until(lambda: _login(perf), 30, "a login on the perf secondary")
    local_token = perf.token  # a token of the perf secondary's own
    # The id the old primary knew is issued again by the cluster that took its role.
    token = dr.secondary_token("performance", "perf1")
    reply = perf.call(
        "POST", "sys/replication/performance/secondary/update-primary", {"token": token}
    )
    assert reply.status == 200, reply.body
    dr.ok("POST", "secret/data/after-failover", {"data": {"v": "from the new primary"}})

    wait_until(
        lambda: _read(perf, "secret/data/after-failover") == {"v": "from the new primary"},
        60,
        "the new primary's write on the perf secondary",
    )
    # Its own token still works: nothing was wiped.
    looked_up = perf.ok("GET", "auth/token/lookup-self").json["data"]
    assert looked_up["id"] == local_token
    assert _read(perf, "secret/data/before") == {"v": "written before the loss"}
    assert perf.status("performance")["state"] == "stream-wals"
    known = dr.status("performance")["known_secondaries"]
    assert known == ["perf1"]
    # An id that was never the old primary's is still refused twice.
    dr.secondary_token("performance", "perf2")
    again = dr.call("POST", "sys/replication/performance/primary/secondary-token", {"id": "perf2"})
    assert again.status == 400
