"""Assembles the ``sys/`` path table from its areas."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from node.audit.paths import audit_paths
from node.engines.system.cors import cors_paths
from node.engines.system.internal import internal_paths
from node.engines.system.keys import key_paths
from node.engines.system.leases import lease_paths
from node.engines.system.mounts import mount_paths
from node.engines.system.namespaces import namespace_paths
from node.engines.system.policies import policy_paths
from node.engines.system.raft import raft_paths
from node.engines.system.step_down import step_down_paths
from node.engines.system.telemetry import telemetry_paths
from node.engines.system.ui_mounts import ui_mount_paths
from node.engines.system.wrapping import wrapping_paths
from node.errors import InvalidRequestError
from node.framework import FrameworkBackend
from node.logical.request import Request
from node.logical.response import Response
from node.namespaces.model import ROOT, Namespace

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["SystemBackend"]

#: Cluster-wide operations the reference serves only in the root namespace.
_ROOT_ONLY = re.compile(
    r"^(init|seal|unseal|health|step-down|rekey.*|storage/.*|generate-root/.*|metrics|"
    r"pprof/?.*|raw/?.*|in-flight-req|rotate(/keyring)?|key-status|replication/.*|"
    r"config/cors)$"
)


class SystemBackend(FrameworkBackend):
    type = "system"
    help_text = "System endpoints: seal, keys, mounts and telemetry."

    def __init__(self, core: Core, namespace: Namespace = ROOT) -> None:
        self.namespace = namespace
        super().__init__(
            [
                *key_paths(core),
                *mount_paths(core, namespace),
                *policy_paths(core, namespace),
                *namespace_paths(core, namespace),
                *wrapping_paths(core),
                *telemetry_paths(core),
                *internal_paths(core, namespace),
                *ui_mount_paths(core, namespace),
                *raft_paths(core),
                *cors_paths(core),
                *lease_paths(core, namespace),
                *step_down_paths(core),
                *audit_paths(core.audit),
            ]
        )

    async def handle(self, request: Request) -> Response | None:
        if not self.namespace.is_root and _ROOT_ONLY.match(request.path):
            raise InvalidRequestError("operation unavailable in namespaces")
        return await super().handle(request)
