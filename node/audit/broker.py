"""Every entry to every enabled device; refused when none of them recorded it.

Fail closed, as the reference: with devices enabled, a request is served
only if at least one device recorded it. Devices write concurrently; each
failure is logged (the device path and the error's type, never the line) and
the device stays enabled, so its next write tries again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from node.audit.device import AuditDevice
from node.audit.entry import AuditInput
from node.logical.response import Response
from sdk.errors import CofferError

__all__ = ["AuditBroker", "AuditFailedError"]

log = logging.getLogger("coffer.audit")


class AuditFailedError(CofferError):
    """No enabled audit device could record the request (or its response)."""

    status = 500

    def __init__(self) -> None:
        super().__init__("internal error: no enabled audit device could record the request")


class AuditBroker:
    def __init__(self) -> None:
        self.devices: dict[str, AuditDevice] = {}

    @property
    def enabled(self) -> bool:
        return bool(self.devices)

    async def log_request(self, audit: AuditInput, error: str = "") -> None:
        await self._all(lambda device: device.log_request(audit, error))

    async def log_response(
        self, audit: AuditInput, response: Response | None, error: str = ""
    ) -> None:
        await self._all(lambda device: device.log_response(audit, response, error))

    def reopen(self) -> None:
        for device in self.devices.values():
            device.sink.reopen()

    async def _all(self, write: Callable[[AuditDevice], Awaitable[None]]) -> None:
        devices = list(self.devices.values())
        if not devices:
            return
        results = await asyncio.gather(*(write(d) for d in devices), return_exceptions=True)
        recorded = 0
        for device, result in zip(devices, results, strict=True):
            if isinstance(result, BaseException):
                if not isinstance(result, Exception):
                    raise result  # cancellation and the like go on up
                log.error(
                    "audit device failed to record an entry",
                    extra={
                        "event": "audit.device_failed",
                        "path": device.path,
                        "error": type(result).__name__,
                    },
                )
            else:
                recorded += 1
        if not recorded:
            raise AuditFailedError()
