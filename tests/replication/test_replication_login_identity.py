"""A login on a performance secondary: its identity is the primary's, its token local.

Entities and aliases are replicated data, so the secondary cannot keep ones it
made itself: the next hash-tree sync from the primary would delete them and
leave the token pointing at nothing. The secondary asks the primary's active
node to find or create them, waits for them to arrive by the stream, and
mints the token itself. Here the entity is on both clusters, a second login
finds the same one, and after a forced sync (the secondary down while the
primary's small WAL ring moves past it) the entity and the token's link to
it are still there. With the primary down, a login whose entity is already
current on the secondary still works; a first login is a 503.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.replication.clusters import RING, Site, replication_pair, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.serial]

ADMIN = 'path "*" { capabilities = ["create", "read", "update", "delete", "list", "sudo"] }'


def _users(primary: Site) -> None:
    primary.ok("POST", "sys/policy/admin", {"policy": ADMIN})
    primary.ok("POST", "sys/auth/userpass", {"type": "userpass"})
    primary.ok("POST", "auth/userpass/users/alice", {"password": "pw", "policies": "admin"})


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[Site, Site]]:
    with replication_pair(tmp_path, "performance", _users) as sites:
        yield sites


def _login(site: Site, user: str = "alice") -> dict[str, Any]:
    reply = site.call("POST", f"auth/userpass/login/{user}", {"password": "pw"}, token="")
    assert reply.status == 200, reply.body
    auth: dict[str, Any] = reply.json["auth"]
    return auth


def _entity(site: Site, entity_id: str, token: str) -> dict[str, Any]:
    reply = site.call("GET", f"identity/entity/id/{entity_id}", token=token)
    assert reply.status == 200, reply.body
    data: dict[str, Any] = reply.json["data"]
    return data


def _syncs(site: Site) -> int:
    return sum('"replication.synced"' in line for line in site.node0.log_text().splitlines())


def test_a_login_on_the_perf_secondary_makes_its_entity_on_the_primary(
    pair: tuple[Site, Site],
) -> None:
    primary, perf = pair
    auth = wait_until(lambda: _login(perf), 30, "the userpass mount on the perf secondary")
    token, entity_id = auth["client_token"], auth["entity_id"]
    assert entity_id

    on_primary = _entity(primary, entity_id, primary.root_token)
    assert on_primary["id"] == entity_id
    [alias] = on_primary["aliases"]
    assert alias["name"] == "alice"
    # it came back by the stream before the login answered
    assert _entity(perf, entity_id, token)["aliases"][0]["id"] == alias["id"]
    assert _login(perf)["entity_id"] == entity_id  # found, not made again
    # the token is the secondary's own
    assert primary.call("GET", "auth/token/lookup-self", token=token).status == 403

    # force a hash-tree sync: the secondary down while the primary's ring moves on
    position = perf.status("performance")["last_remote_wal"]
    syncs_before = _syncs(perf)
    perf.node0.kill()
    for i in range(3 * RING):
        primary.ok("POST", f"secret/data/while-down{i}", {"data": {"v": i}})
    assert primary.status("performance")["last_wal"] > position + RING
    perf.node0.start()
    perf.unseal(perf.node0)

    def synced_and_streaming() -> bool:
        assert _syncs(perf) > syncs_before
        assert perf.status("performance")["state"] == "stream-wals"
        return perf.call("GET", f"secret/data/while-down{3 * RING - 1}", token=token).status == 200

    wait_until(synced_and_streaming, 60, "the restarted perf secondary to sync")

    looked_up = perf.call("GET", "auth/token/lookup-self", token=token)
    assert looked_up.status == 200, looked_up.body
    assert looked_up.json["data"]["entity_id"] == entity_id
    assert _entity(perf, entity_id, token)["aliases"][0]["id"] == alias["id"]
    assert _entity(primary, entity_id, primary.root_token)["id"] == entity_id
    synced = [
        json.loads(line[line.index("{") :])
        for line in perf.node0.log_text().splitlines()
        if '"replication.synced"' in line
    ]
    assert synced[-1]["from_wal"] == position  # a sync, not a fresh bootstrap

    # With the primary away, a login whose entity is here and current goes on; one
    # that needs a new entity is refused as unavailable, not an internal error.
    primary.ok("POST", "auth/userpass/users/bob", {"password": "pw"})
    wait_until(
        lambda: perf.call("GET", "auth/userpass/users/bob", token=token).status == 200,
        30,
        "bob on the perf secondary",
    )
    primary.node0.kill()
    assert _login(perf)["entity_id"] == entity_id
    refused = perf.call("POST", "auth/userpass/login/bob", {"password": "pw"}, token="")
    assert refused.status == 503, refused.body
    assert "cannot reach its primary" in refused.body.decode()
