"""Assembles the ``sys/`` path table from its areas.

Each area is a ``PathGroup`` in its own module: its ``paths()`` is the
declaration of its rows (fields, operations, help), the one source of
routing, validation, ``?help=1`` and the OpenAPI document. The order below is
the table's order, so it decides which row matches first.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from node.audit.paths import AuditPaths
from node.core.system.cors import CorsPaths
from node.core.system.dr_token import DrTokenPaths
from node.core.system.internal import InternalPaths
from node.core.system.keys import KeyPaths
from node.core.system.leases import LeasePaths
from node.core.system.mounts import MountPaths
from node.core.system.namespaces import NamespacePaths
from node.core.system.policies import CapabilityPaths, PolicyPaths
from node.core.system.raft import RaftPaths
from node.core.system.rekey import RekeyPaths
from node.core.system.replication import ReplicationPaths
from node.core.system.step_down import StepDownPaths
from node.core.system.telemetry import TelemetryPaths
from node.core.system.ui_mounts import UiMountPaths
from node.core.system.wrapping import WrappingPaths
from node.framework import FrameworkBackend, PathGroup
from node.logical.request import Request
from node.logical.response import Response
from node.namespaces.model import ROOT, Namespace
from sdk.errors import InvalidRequestError

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
        groups: list[PathGroup] = [
            KeyPaths(core),
            RekeyPaths(core),
            MountPaths(core, namespace),
            PolicyPaths(core, namespace),
            CapabilityPaths(core, namespace),
            NamespacePaths(core, namespace),
            WrappingPaths(core),
            TelemetryPaths(core),
            InternalPaths(core, namespace),
            UiMountPaths(core, namespace),
            RaftPaths(core),
            CorsPaths(core),
            LeasePaths(core, namespace),
            StepDownPaths(core),
            ReplicationPaths(core),
            AuditPaths(core.audit),
            DrTokenPaths(core),
        ]
        super().__init__([row for group in groups for row in group.paths()])

    async def handle(self, request: Request) -> Response | None:
        if not self.namespace.is_root and _ROOT_ONLY.match(request.path):
            raise InvalidRequestError("operation unavailable in namespaces")
        return await super().handle(request)
