"""The active role needs the leader lease (node/cluster/role.py, consensus/DESIGN.md)."""

from __future__ import annotations

import pytest

from node.cluster.role import HAState, derive_role
from node.core.health import NodeRole


@pytest.mark.parametrize(
    ("is_leader", "has_lease", "expected"),
    [
        (True, True, (True, False)),
        (True, False, (False, False)),  # cut off: neither active nor serving local reads
        (False, False, (False, True)),
    ],
)
def test_a_leader_is_active_only_while_it_holds_its_lease(
    is_leader: bool, has_lease: bool, expected: tuple[bool, bool]
) -> None:
    role = derive_role(
        sealed=False,
        is_leader=is_leader,
        voter=True,
        performance_standbys=True,
        has_lease=has_lease,
    )
    assert role == expected


def test_a_leader_without_its_lease_reports_a_plain_standby() -> None:
    active, perf = derive_role(
        sealed=False, is_leader=True, voter=True, performance_standbys=True, has_lease=False
    )
    role = HAState(ha_enabled=True, sealed=False, active=active, performance_standby=perf)
    node_role = NodeRole.of(role, initialized=True)
    assert node_role.standby and not node_role.performance_standby
