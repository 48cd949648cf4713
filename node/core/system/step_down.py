"""``sys/step-down``: the active node gives up leadership (sudo, root namespace).

As in the reference: a node without HA storage, a standby (the HTTP layer
forwards the request to the active node first) or the only voter of its
cluster has nobody to hand over to, so the request succeeds and changes
nothing. With peers, leadership moves by a Raft transfer, which the raft
storage must offer as ``transfer_leadership()``; storage that does not gets a
clear error rather than an election forced by other means.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from node.cluster.ports import TransfersLeadership
from node.framework import FieldData, Path
from node.logical.request import Operation, Request
from sdk.errors import CofferError

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["StepDownPaths", "StepDownUnsupportedError"]

log = logging.getLogger("coffer.cluster")


class StepDownUnsupportedError(CofferError):
    status = 501

    def __init__(self) -> None:
        super().__init__(
            "step-down needs a Raft leadership transfer, which this node's raft storage "
            "does not offer"
        )


class StepDownPaths:
    def __init__(self, core: Core) -> None:
        self._core = core

    def paths(self) -> list[Path]:
        return [
            Path(
                "step-down",
                {Operation.UPDATE: self._step_down},
                {},
                "Make the active node give up leadership.",
                sudo=True,
            )
        ]

    async def _step_down(self, request: Request, data: FieldData) -> None:
        cluster = self._core.cluster
        if cluster is None or not cluster.is_active():
            return
        replica = cluster.replica
        if replica is None:
            return
        me = cluster.settings.node_id
        peers = [m for m in replica.configuration() if m.voter and m.node_id != me]
        if not peers:
            return
        if not isinstance(replica, TransfersLeadership):
            raise StepDownUnsupportedError()
        log.info("stepping down", extra={"event": "cluster.step_down"})
        await replica.transfer_leadership()
