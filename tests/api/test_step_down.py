"""``sys/step-down`` (issue 14): sudo, root namespace, and what it does with and
without peers to hand leadership to."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from node.core.system.step_down import StepDownUnsupportedError
from node.logical.request import Operation, Request
from tests.api.helpers import dev_call as call
from tests.api.helpers import token_with

if TYPE_CHECKING:
    from tests.conftest import DevServer


async def test_without_ha_it_succeeds_and_changes_nothing(dev: DevServer) -> None:
    for method in ("PUT", "POST"):
        status, answer = await call(dev, method, "sys/step-down")
        assert status == 204, answer
    status, answer = await call(dev, "GET", "sys/health", token=None)
    assert status == 200, answer


async def test_needs_sudo(dev: DevServer) -> None:
    token = await token_with(dev, p='path "sys/step-down" { capabilities = ["update"] }')
    status, answer = await call(dev, "PUT", "sys/step-down", token=token)
    assert status == 403, answer
    sudo = await token_with(dev, s='path "sys/step-down" { capabilities = ["update", "sudo"] }')
    status, answer = await call(dev, "PUT", "sys/step-down", token=sudo)
    assert status == 204, answer
    status, answer = await call(dev, "PUT", "sys/step-down", token=None)
    assert status in (400, 403) and answer["errors"], answer


async def test_root_namespace_only(dev: DevServer) -> None:
    status, answer = await call(dev, "PUT", "sys/namespaces/team", {})
    assert status in (200, 204), answer
    status, answer = await call(
        dev, "PUT", "sys/step-down", headers={"X-Service-Namespace": "team"}
    )
    assert status == 400 and "unavailable in namespaces" in answer["errors"][0], answer


# --- with a cluster: the replica's leadership transfer is what moves the role ----------------


@dataclass(frozen=True)
class _Member:
    node_id: str
    address: str
    leader: bool = False
    voter: bool = True


@dataclass
class _Replica:
    members: list[_Member]
    transfers: int = 0

    def configuration(self) -> list[_Member]:
        return self.members


class _TransferringReplica(_Replica):
    async def transfer_leadership(self) -> None:
        self.transfers += 1


@dataclass
class _Settings:
    node_id: str = "n1"


@dataclass
class _Cluster:
    replica: Any
    active: bool = True
    settings: _Settings = field(default_factory=_Settings)

    def is_active(self) -> bool:
        return self.active


async def _step_down(dev: DevServer, cluster: _Cluster) -> None:
    dev.core.cluster = cluster  # type: ignore[assignment]
    try:
        await dev.core.handle(
            Request(
                operation=Operation.UPDATE, path="sys/step-down", client_token=dev.token, id="t"
            )
        )
    finally:
        dev.core.cluster = None


PEERS = [_Member("n1", "a:1", leader=True), _Member("n2", "a:2"), _Member("n3", "a:3")]


async def test_active_node_with_peers_transfers_leadership(dev: DevServer) -> None:
    replica = _TransferringReplica(list(PEERS))
    await _step_down(dev, _Cluster(replica))
    assert replica.transfers == 1


async def test_lone_voter_or_standby_keeps_things_as_they_are(dev: DevServer) -> None:
    alone = _TransferringReplica(
        [_Member("n1", "a:1", leader=True), _Member("n9", "a:9", voter=False)]
    )
    await _step_down(dev, _Cluster(alone))
    assert alone.transfers == 0
    standby = _TransferringReplica(list(PEERS))
    await _step_down(dev, _Cluster(standby, active=False))
    assert standby.transfers == 0


async def test_storage_without_transfer_says_so(dev: DevServer) -> None:
    with pytest.raises(StepDownUnsupportedError) as raised:
        await _step_down(dev, _Cluster(_Replica(list(PEERS))))
    assert raised.value.status == 501 and raised.value.messages
