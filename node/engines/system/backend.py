"""Assembles the ``sys/`` path table from its areas."""

from __future__ import annotations

from typing import TYPE_CHECKING

from node.engines.system.internal import internal_paths
from node.engines.system.keys import key_paths
from node.engines.system.mounts import mount_paths
from node.engines.system.policies import policy_paths
from node.engines.system.telemetry import telemetry_paths
from node.engines.system.ui_mounts import ui_mount_paths
from node.engines.system.wrapping import wrapping_paths
from node.framework import FrameworkBackend

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["SystemBackend"]


class SystemBackend(FrameworkBackend):
    type = "system"
    help_text = "System endpoints: seal, keys, mounts and telemetry."

    def __init__(self, core: Core) -> None:
        super().__init__(
            [
                *key_paths(core),
                *mount_paths(core),
                *policy_paths(core),
                *wrapping_paths(core),
                *telemetry_paths(core),
                *internal_paths(core),
                *ui_mount_paths(core),
            ]
        )
