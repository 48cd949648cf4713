"""Replication end to end: three real single-node clusters on loopback.

A primary with a performance and a DR secondary: writes made on the primary
reach both, each after the secondary's data was wiped and it took the
primary's seal; tokens and local mounts stay off the performance secondary
and reach the DR one; a paths filter takes a mount off the performance
secondary and removing it brings the mount and its data back; a DR secondary
refuses client requests.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.ports import free_port
from tests.replication.clusters import Site, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.serial]

ADMIN = 'path "*" { capabilities = ["create", "read", "update", "delete", "list", "sudo"] }'


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Site]]:
    base: Path = tmp_path_factory.mktemp("replication")
    started: dict[str, Site] = {}
    try:
        for name in ("primary", "perf", "dr"):
            started[name] = Site(base / name).start()
        primary = started["primary"]
        primary.ok("POST", "sys/policy/admin", {"policy": ADMIN})
        primary.ok("POST", "sys/auth/userpass", {"type": "userpass"})
        primary.ok("POST", "auth/userpass/users/ops", {"password": "pw", "policies": "admin"})
        primary.ok("POST", "secret/data/before", {"data": {"v": "written before enable"}})
        # A batch DR operation token made ahead of time (docs/replication.md).
        dr_ops = (
            'path "sys/replication/dr/secondary/promote" { capabilities = ["update"] }\n'
            'path "sys/replication/dr/secondary/update-primary" { capabilities = ["update"] }'
        )
        primary.ok("POST", "sys/policy/dr-ops", {"policy": dr_ops})
        primary.ok(
            "POST",
            "auth/token/roles/failover",
            {
                "allowed_policies": "dr-ops",
                "orphan": True,
                "renewable": False,
                "token_type": "batch",
            },
        )
        created = primary.ok("POST", "auth/token/create/failover", {"ttl": "8h"}).json
        primary.dr_token = created["auth"]["client_token"]
        primary.ok("POST", "sys/mounts/localkv", {"type": "kv", "local": True})
        primary.ok("POST", "localkv/app", {"v": "local to the primary"})
        primary.enable_primary("performance")
        primary.enable_primary("dr")
        started["perf"].become_secondary(
            "performance", primary.secondary_token("performance", "perf1"), primary
        )
        started["dr"].become_secondary("dr", primary.secondary_token("dr", "dr1"), primary)
        yield started
    finally:
        for site in started.values():
            site.close()


def _login(site: Site) -> str:
    reply = site.call("POST", "auth/userpass/login/ops", {"password": "pw"}, token="")
    assert reply.status == 200, reply.body
    token: str = reply.json["auth"]["client_token"]
    return token


def _perf(sites: dict[str, Site]) -> Site:
    perf = sites["perf"]
    if not perf.token:
        perf.token = wait_until(lambda: _login(perf), 30, "a login on the perf secondary")
    return perf


def _read(site: Site, path: str) -> dict[str, str] | None:
    reply = site.call("GET", path)
    if reply.status != 200:
        return None
    data: dict[str, str] = reply.json["data"]["data"]
    return data


def test_writes_before_and_after_enable_reach_the_perf_secondary(sites: dict[str, Site]) -> None:
    primary, perf = sites["primary"], _perf(sites)
    assert _read(perf, "secret/data/before") == {"v": "written before enable"}
    primary.ok("POST", "secret/data/after", {"data": {"v": "streamed"}})
    wait_until(lambda: _read(perf, "secret/data/after") == {"v": "streamed"}, 30, "the stream")
    status = perf.status("performance")
    assert status["mode"] == "secondary"
    assert status["last_remote_wal"] > 0
    assert status["known_primary_cluster_addrs"]
    primary_status = primary.status("performance")
    assert primary_status["known_secondaries"] == ["perf1"]
    assert primary_status["secondaries"][0]["connection_status"] == "connected"


def test_tokens_and_local_mounts_stay_off_the_perf_secondary(sites: dict[str, Site]) -> None:
    primary, perf = sites["primary"], _perf(sites)
    # The primary's root token is not a token there; the secondary's own root token is gone.
    assert perf.call("GET", "auth/token/lookup-self", token=primary.root_token).status == 403
    assert perf.call("GET", "auth/token/lookup-self", token=perf.root_token).status == 403
    mounts = perf.ok("GET", "sys/mounts").json["data"]
    assert "localkv/" not in mounts
    assert "secret/" in mounts


def test_the_dr_secondary_holds_everything_and_serves_no_clients(sites: dict[str, Site]) -> None:
    primary, dr = sites["primary"], sites["dr"]
    primary.ok("POST", "secret/data/for-dr", {"data": {"v": "dr"}})

    def same() -> bool:
        theirs, mine = primary.status("dr"), dr.status("dr")
        return bool(mine["merkle_root"]) and mine["merkle_root"] == theirs["merkle_root"]

    wait_until(same, 30, "the DR secondary to hold what the primary holds")
    # Everything includes tokens: the primary's root token is known there, yet refused.
    reply = dr.call("GET", "secret/data/for-dr", token=primary.root_token)
    assert reply.status == 400
    assert "DR secondary" in reply.errors[0]
    assert dr.node0.health() == 472
    health = dr.node0.request("GET", "/v1/sys/health").json
    assert health["replication_dr_mode"] == "secondary"
    assert primary.node0.request("GET", "/v1/sys/health").json["replication_dr_mode"] == "primary"


def test_a_paths_filter_removes_a_mount_and_removing_it_brings_it_back(
    sites: dict[str, Site],
) -> None:
    primary, perf = sites["primary"], _perf(sites)
    primary.ok("POST", "sys/mounts/team", {"type": "kv", "options": {"version": "2"}})
    primary.ok("POST", "team/data/app", {"data": {"v": "team secret"}})
    wait_until(lambda: _read(perf, "team/data/app") == {"v": "team secret"}, 30, "team/ there")
    primary.ok(
        "POST",
        "sys/replication/performance/primary/paths-filter/perf1",
        {"mode": "deny", "paths": ["team/"]},
    )
    got = primary.ok("GET", "sys/replication/performance/primary/paths-filter/perf1").json
    assert got["data"] == {"mode": "deny", "paths": ["team/"]}
    dynamic = primary.ok("GET", "sys/replication/performance/primary/dynamic-filter/perf1").json
    assert dynamic["data"]["dynamic_filtered_mounts"] == ["team/"]
    # The secondary asks its primary the same question (the mount is gone from it).
    mine = perf.ok("GET", "sys/replication/performance/secondary/dynamic-filter/perf1").json
    assert mine["data"] == dynamic["data"]
    other = perf.call("GET", "sys/replication/performance/secondary/dynamic-filter/perf2")
    assert other.status == 400 and "perf1" in other.body.decode()
    wait_until(lambda: "team/" not in perf.ok("GET", "sys/mounts").json["data"], 30, "team/ gone")
    primary.ok("POST", "secret/data/still", {"data": {"v": "unfiltered"}})
    wait_until(lambda: _read(perf, "secret/data/still") == {"v": "unfiltered"}, 30, "unfiltered")
    primary.ok("DELETE", "sys/replication/performance/primary/paths-filter/perf1")
    wait_until(lambda: _read(perf, "team/data/app") == {"v": "team secret"}, 30, "team/ back")


def test_a_paths_filter_keeps_a_namespace_off_and_the_old_spelling_reads_back(
    sites: dict[str, Site],
) -> None:
    primary, perf = sites["primary"], _perf(sites)
    primary.ok("POST", "sys/namespaces/ns1")
    ns = {"X-Vault-Namespace": "ns1"}
    tok = primary.root_token
    assert (
        primary.node0.request(
            "POST", "/v1/sys/mounts/kv", {"type": "kv"}, token=tok, headers=ns
        ).status
        == 204
    )
    assert (
        primary.node0.request("POST", "/v1/kv/a", {"v": "in ns1"}, token=tok, headers=ns).status
        == 204
    )

    def namespaces_on_perf() -> list[str]:
        reply = perf.call("LIST", "sys/namespaces")
        return list(reply.json["data"]["keys"]) if reply.status == 200 else []

    wait_until(lambda: "ns1/" in namespaces_on_perf(), 30, "ns1 on the perf secondary")
    primary.ok(
        "POST",
        "sys/replication/performance/primary/mount-filter/perf1",
        {"mode": "blacklist", "paths": ["ns1/"]},
    )
    got = primary.ok("GET", "sys/replication/performance/primary/mount-filter/perf1").json["data"]
    assert got == {"mode": "blacklist", "paths": ["ns1/"]}
    dynamic = primary.ok("GET", "sys/replication/performance/primary/dynamic-filter/perf1").json
    assert dynamic["data"] == {
        # every replicated mount inside it, its own sys/ and identity/ too
        "dynamic_filtered_mounts": ["ns1/auth/token/", "ns1/identity/", "ns1/kv/", "ns1/sys/"],
        "dynamic_filtered_namespaces": ["ns1/"],
    }
    wait_until(lambda: "ns1/" not in namespaces_on_perf(), 30, "ns1 gone from the perf secondary")
    primary.ok("DELETE", "sys/replication/performance/primary/mount-filter/perf1")
    wait_until(lambda: "ns1/" in namespaces_on_perf(), 30, "ns1 back on the perf secondary")


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        (
            "sys/replication/performance/primary/paths-filter/perf1",
            {"mode": "x", "paths": ["a/"]},
            "allow or deny",
        ),
        ("sys/replication/performance/primary/paths-filter/perf1", {"mode": "deny"}, "paths"),
        (
            "sys/replication/performance/primary/paths-filter/nobody",
            {"mode": "deny", "paths": ["a/"]},
            "no secondary",
        ),
        (
            "sys/replication/performance/primary/mount-filter/perf1",
            {"mode": "allow", "paths": ["a/"]},
            "whitelist",
        ),
        ("sys/replication/dr/primary/secondary-token", {}, "id"),
        ("sys/replication/dr/primary/secondary-token", {"id": "dr1"}, "already exists"),
        (
            "sys/replication/dr/primary/enable",
            {"primary_cluster_addr": "127.0.0.1:1"},
            "already primary",
        ),
        ("sys/replication/dr/primary/revoke-secondary", {"id": "nobody"}, "no secondary"),
    ],
)
def test_bad_replication_requests_are_clear_400s(
    sites: dict[str, Site], path: str, body: dict[str, object], message: str
) -> None:
    reply = sites["primary"].call("POST", path, body)
    assert reply.status == 400, reply.body
    assert message in " ".join(reply.errors)


def test_a_secondary_enable_with_a_bad_token_changes_nothing(tmp_path: Path) -> None:
    site = Site(tmp_path / "lone").start()
    try:
        for token in ("cofr.%%%", "hvs.notatoken"):
            body = {"token": token, "primary_api_addr": "http://127.0.0.1:1"}
            reply = site.call("POST", "sys/replication/dr/secondary/enable", body)
            assert reply.status == 400, reply.body
        assert site.ok("GET", "sys/replication/status").json["data"]["dr"] == {"mode": "disabled"}
        assert site.call("GET", "auth/token/lookup-self").status == 200  # not wiped
    finally:
        site.close()


def test_a_secondary_that_missed_writes_while_the_primary_restarted_catches_up_by_sync(
    sites: dict[str, Site],
) -> None:
    """The restarted primary's WAL ring starts empty, so the secondary cannot resume
    and syncs: writes and deletes it missed while it was down both arrive."""
    primary, perf = sites["primary"], _perf(sites)
    primary.ok("POST", "secret/data/doomed", {"data": {"v": "to be deleted"}})
    wait_until(lambda: _read(perf, "secret/data/doomed") is not None, 30, "doomed there")
    perf.node0.stop()
    primary.ok("POST", "secret/data/missed", {"data": {"v": "written while down"}})
    primary.ok("DELETE", "secret/metadata/doomed")
    primary.node0.stop()
    primary.node0.start()
    primary.unseal(primary.node0)
    primary.wait_active(primary.node0)
    perf.node0.start()
    perf.unseal(perf.node0)
    wait_until(lambda: perf.node0.health() == 200, 60, "perf secondary active again")
    wait_until(lambda: _read(perf, "secret/data/missed") is not None, 60, "the missed write")
    assert _read(perf, "secret/data/missed") == {"v": "written while down"}
    wait_until(lambda: _read(perf, "secret/data/doomed") is None, 30, "the missed delete")
    assert perf.status("performance")["state"] == "stream-wals"


def test_a_write_on_the_perf_secondary_goes_to_the_primary_and_reads_back_at_once(
    sites: dict[str, Site],
) -> None:
    primary, perf = sites["primary"], _perf(sites)
    reply = perf.call("POST", "secret/data/from-perf", {"data": {"v": "forwarded"}})
    assert reply.status == 200, reply.body
    assert not reply.json.get("warnings"), reply.json
    # Answered only once the write came back through the stream: readable here now.
    assert _read(perf, "secret/data/from-perf") == {"v": "forwarded"}
    assert _read(primary, "secret/data/from-perf") == {"v": "forwarded"}
    # A policy is replicated data too: written on the primary, not here.
    perf.ok("POST", "sys/policy/from-perf", {"policy": 'path "x/*" { capabilities = ["read"] }'})
    assert primary.ok("GET", "sys/policy/from-perf").json["data"]["name"] == "from-perf"


def test_a_local_mount_on_the_perf_secondary_stays_its_own(sites: dict[str, Site]) -> None:
    primary, perf = sites["primary"], _perf(sites)
    perf.ok("POST", "sys/mounts/perflocal", {"type": "kv", "local": True})
    perf.ok("POST", "perflocal/app", {"v": "only on the secondary"})
    assert "perflocal/" not in primary.ok("GET", "sys/mounts").json["data"]
    # A later change to the primary's mount table keeps the secondary's local mount.
    primary.ok("POST", "sys/mounts/later", {"type": "kv"})
    wait_until(lambda: "later/" in perf.ok("GET", "sys/mounts").json["data"], 30, "later/")
    assert "perflocal/" in perf.ok("GET", "sys/mounts").json["data"]
    reply = perf.ok("GET", "perflocal/app")
    assert reply.json["data"] == {"v": "only on the secondary"}
    # Tuning and disabling it stay there too.
    perf.ok("POST", "sys/mounts/perflocal/tune", {"description": "mine"})
    assert perf.ok("GET", "sys/mounts").json["data"]["perflocal/"]["description"] == "mine"
    perf.ok("DELETE", "sys/mounts/perflocal")
    assert "perflocal/" not in perf.ok("GET", "sys/mounts").json["data"]
    assert "later/" in perf.ok("GET", "sys/mounts").json["data"]


def test_a_dr_operation_token_is_made_on_the_dr_secondary_from_the_primarys_keys(
    sites: dict[str, Site],
) -> None:
    """The DR secondary took the primary's seal at enable: a quorum of the primary's
    unseal keys makes an operation token there (no client token needed)."""
    primary, dr = sites["primary"], sites["dr"]
    base = "sys/replication/dr/secondary/generate-operation-token"
    started = dr.call("PUT", f"{base}/attempt", {}, token="")
    assert started.status == 200, started.body
    otp, nonce = started.json["otp"], started.json["nonce"]
    assert started.json["required"] == primary.threshold
    step = None
    for key in primary.keys[: primary.threshold]:
        step = dr.call("PUT", f"{base}/update", {"key": key, "nonce": nonce}, token="")
        assert step.status == 200, step.body
    assert step is not None and step.json["complete"] is True
    decoded = dr.call(
        "PUT",
        "sys/decode-token",
        {"encoded_token": step.json["encoded_token"], "otp": otp},
        token="",
    )
    assert decoded.status == 200, decoded.body
    token = decoded.json["data"]["token"]
    # It authorises DR operations there: deleting itself is one.
    body = {"dr_operation_token": token}
    deleted = dr.call("POST", "sys/replication/dr/secondary/operation-token/delete", body, token="")
    assert deleted.status == 204, deleted.body
    again = dr.call("POST", "sys/replication/dr/secondary/operation-token/delete", body, token="")
    assert again.status == 403


def test_failover_promote_the_dr_secondary_then_the_old_primary_rejoins_as_its_secondary(
    sites: dict[str, Site],
) -> None:
    """Runs late: it changes every role. The primary's node is killed; the DR
    secondary, promoted with a batch DR operation token made on the primary,
    serves the primary's secrets and tokens; the old primary, restarted and
    demoted, follows the new primary without a wipe."""
    primary, dr = sites["primary"], sites["dr"]
    primary.ok("POST", "secret/data/final", {"data": {"v": "acknowledged before the loss"}})

    def dr_caught_up() -> bool:
        theirs, mine = primary.status("dr"), dr.status("dr")
        return bool(mine["merkle_root"]) and mine["merkle_root"] == theirs["merkle_root"]

    wait_until(dr_caught_up, 30, "the DR secondary to catch up")
    primary.node0.kill()

    body = {"dr_operation_token": "not-a-token", "primary_cluster_addr": "127.0.0.1:1"}
    refused = dr.call("POST", "sys/replication/dr/secondary/promote", body, token="")
    assert refused.status == 403
    new_addr = f"127.0.0.1:{free_port()}"
    # A root token is no DR operation token.
    body = {"dr_operation_token": primary.root_token, "primary_cluster_addr": new_addr}
    assert dr.call("POST", "sys/replication/dr/secondary/promote", body, token="").status == 403
    # (the performance role it takes over listens on a port of its own: the old primary,
    # restarted below on this host, keeps its performance address for perf1)
    body = {
        "dr_operation_token": primary.dr_token,
        "primary_cluster_addr": new_addr,
        "performance_primary_cluster_addr": f"127.0.0.1:{free_port()}",
    }
    reply = dr.call("POST", "sys/replication/dr/secondary/promote", body, token="")
    assert reply.status == 200, reply.body
    wait_until(lambda: dr.node0.health() == 200, 30, "the promoted cluster to serve")
    dr.token = primary.root_token  # the primary's tokens came along
    assert _read(dr, "secret/data/final") == {"v": "acknowledged before the loss"}
    assert _read(dr, "secret/data/before") == {"v": "written before enable"}
    assert dr.status("dr")["mode"] == "primary"

    # The old primary comes back still believing it is the primary: demote it.
    primary.node0.start()
    primary.unseal(primary.node0)
    primary.wait_active(primary.node0)
    primary.ok("POST", "sys/replication/dr/primary/demote")
    wait_until(lambda: primary.node0.health() == 472, 30, "the demoted primary to stand by")
    assert primary.status("dr")["mode"] == "secondary"

    token = dr.secondary_token("dr", "old-primary")
    body = {"token": token, "dr_operation_token": primary.dr_token}
    reply = primary.call("POST", "sys/replication/dr/secondary/update-primary", body, token="")
    assert reply.status == 200, reply.body
    dr.ok("POST", "secret/data/after-failover", {"data": {"v": "from the new primary"}})

    def old_primary_follows() -> bool:
        theirs, mine = dr.status("dr"), primary.status("dr")
        return mine["state"] == "stream-wals" and mine["merkle_root"] == theirs["merkle_root"]

    wait_until(old_primary_follows, 60, "the old primary to follow the new one")


def test_a_revoked_secondary_is_cut_off(sites: dict[str, Site]) -> None:
    """After the failover the old primary is a DR secondary, yet still the
    performance primary of perf1 (the sys/replication paths stay open there)."""
    old_primary, perf = sites["primary"], sites["perf"]
    wait_until(lambda: perf.status("performance")["state"] == "stream-wals", 60, "perf1 streaming")
    old_primary.ok("POST", "sys/replication/performance/primary/revoke-secondary", {"id": "perf1"})
    wait_until(lambda: perf.status("performance")["state"] == "idle", 30, "perf1 cut off")
    status = old_primary.status("performance")
    assert status["known_secondaries"] == []
    # (its link may be gone already if it was reconnecting when revoked)
    assert all(s["connection_status"] == "revoked" for s in status["secondaries"])
    perf_status = perf.status("performance")
    assert perf_status["state"] == "idle" or perf_status["connection_state"] != "ready"
