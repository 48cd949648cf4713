"""The audit table: which devices are enabled, kept in the barrier and replicated.

The table (with each device's salt) is one record, ``core/audit``, so a
change is one atomic write that Raft carries to every node; each node opens
its own sinks from it (its own file, its own connection). The active node
changes the table through ``enable``/``disable``; every node, the active one
included, brings its devices in line with the stored table through
``reload`` (at unseal and after a replicated write), which keeps an
unchanged device as it is (its file stays open).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from node.audit.broker import AuditBroker
from node.audit.device import AuditDevice, DeviceConfig
from node.audit.options import check_options
from node.audit.salt import new_salt
from node.audit.trail import NULL_TRAIL, AuditTrail, Trail
from node.barrier.view import BarrierView
from node.logical.request import Request
from node.tokens.entry import TokenEntry
from sdk.errors import InvalidRequestError

__all__ = ["AUDIT_TABLE_KEY", "AuditTable"]

log = logging.getLogger("coffer.audit")

#: The table's barrier key (root namespace: audit devices are cluster-wide).
AUDIT_TABLE_KEY = "core/audit"

IdentityPolicies = Callable[[TokenEntry], Awaitable[list[str]]]


def normalise_path(path: str) -> str:
    clean = path.strip().strip("/")
    if not clean:
        raise InvalidRequestError("a non-empty audit device path is required")
    return clean + "/"


class AuditTable:
    def __init__(self, view: BarrierView, identity_policies: IdentityPolicies) -> None:
        self._view = view
        self._identity_policies = identity_policies
        self.broker = AuditBroker()
        self._lock = asyncio.Lock()

    # -- per request ---------------------------------------------------------------

    def trail(self, request: Request) -> Trail:
        """What the pipeline reports one request to (a no-op with no devices)."""
        if not self.broker.enabled:
            return NULL_TRAIL
        return AuditTrail(self.broker, request, self._identity_policies)

    async def log_refused(self, request: Request, error: Exception) -> None:
        """A request refused before the pipeline (no live token): its two entries."""
        await self.trail(request).failed(error)

    def hash(self, path: str, value: str) -> str:
        device = self.broker.devices.get(normalise_path(path))
        if device is None:
            raise InvalidRequestError(f"unknown audit device {path!r}")
        return device.salt.hmac(value)

    def configs(self) -> list[DeviceConfig]:
        return [device.config for device in self.broker.devices.values()]

    def reopen(self) -> None:
        """SIGHUP: every file device reopens its path on its next write."""
        self.broker.reopen()

    # -- changes (active node) ------------------------------------------------------

    async def enable(
        self, path: str, type_: str, description: str, options: dict[str, Any], local: bool
    ) -> None:
        path = normalise_path(path)
        config = DeviceConfig(
            path=path,
            type=type_,
            description=description,
            options=check_options(type_, options),
            local=local,
            uuid=str(uuid.uuid4()),
            salt=new_salt(),
        )
        async with self._lock:
            stored = await self._stored()
            for other in stored:
                if other.path.startswith(path) or path.startswith(other.path):
                    raise InvalidRequestError(f"path already in use: {other.path}")
            device = AuditDevice(config)
            try:
                await device.sink.check()
            except OSError as exc:
                raise InvalidRequestError(
                    f"sanity check failed; unable to open {config.options.get('file_path')!r} "
                    f"for writing: {exc.strerror or type(exc).__name__}"
                ) from None
            try:
                await self._save([*stored, config])
            except BaseException:
                await _close(device)  # e.g. a standby, whose write goes to the active node
                raise
            self.broker.devices[path] = device
        log.info("audit device enabled", extra={"event": "audit.enabled", "path": path})

    async def disable(self, path: str) -> None:
        path = normalise_path(path)
        async with self._lock:
            stored = await self._stored()
            if all(c.path != path for c in stored):
                return  # as the reference: disabling what is not there succeeds
            await self._save([c for c in stored if c.path != path])
            device = self.broker.devices.pop(path, None)
        if device is not None:
            await device.sink.close()
        log.info("audit device disabled", extra={"event": "audit.disabled", "path": path})

    # -- every node -----------------------------------------------------------------

    async def reload(self) -> None:
        """Make the enabled devices match the stored table (unseal, replicated writes)."""
        async with self._lock:
            wanted = {c.path: c for c in await self._stored()}
            devices = self.broker.devices
            for path in [p for p, d in devices.items() if wanted.get(p) != d.config]:
                await _close(devices.pop(path))
            for path, config in wanted.items():
                if path not in devices:
                    devices[path] = AuditDevice(config)

    async def clear(self) -> None:
        """Seal: close every sink and forget the devices (their salts with them)."""
        devices, self.broker.devices = self.broker.devices, {}
        for device in devices.values():
            await _close(device)

    async def _stored(self) -> list[DeviceConfig]:
        raw = await self._view.get_json(AUDIT_TABLE_KEY)
        return [DeviceConfig.from_json(item) for item in raw or []]

    async def _save(self, configs: list[DeviceConfig]) -> None:
        await self._view.put_json(AUDIT_TABLE_KEY, [c.to_json() for c in configs])


async def _close(device: AuditDevice) -> None:
    with contextlib.suppress(Exception):
        await device.sink.close()
