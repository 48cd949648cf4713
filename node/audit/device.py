"""One enabled audit device: its stored configuration, salt, format and sink."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from node.audit.entry import AuditInput, request_entry, response_entry
from node.audit.file_sink import FileSink
from node.audit.formats import render
from node.audit.options import FormatOptions
from node.audit.salt import Salt
from node.audit.sink import Sink
from node.audit.socket_sink import SocketSink
from node.audit.syslog_sink import SyslogSink
from node.framework.fields import parse_duration
from node.logical.response import Response

__all__ = ["AuditDevice", "DeviceConfig"]


@dataclass(frozen=True, slots=True)
class DeviceConfig:
    """A row of the audit table as stored in the barrier (``salt`` never listed)."""

    path: str
    type: str
    description: str = ""
    options: dict[str, str] = field(default_factory=dict)
    local: bool = False
    uuid: str = ""
    salt: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "type": self.type,
            "description": self.description,
            "options": dict(self.options),
            "local": self.local,
            "uuid": self.uuid,
            "salt": self.salt,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> DeviceConfig:
        return cls(
            path=str(raw["path"]),
            type=str(raw["type"]),
            description=str(raw.get("description", "")),
            options={str(k): str(v) for k, v in (raw.get("options") or {}).items()},
            local=bool(raw.get("local", False)),
            uuid=str(raw.get("uuid", "")),
            salt=str(raw["salt"]),
        )

    def describe(self) -> dict[str, Any]:
        """The ``sys/audit`` listing of this device, as the reference shows it."""
        return {
            "type": self.type,
            "description": self.description,
            "options": dict(self.options),
            "local": self.local,
            "path": self.path,
        }


def build_sink(config: DeviceConfig) -> Sink:
    options = config.options
    if config.type == "file":
        return FileSink(options["file_path"], options.get("mode", ""))
    if config.type == "socket":
        timeout = parse_duration(options.get("write_timeout") or "2s", "write_timeout")
        return SocketSink(options["address"], options.get("socket_type") or "tcp", timeout)
    return SyslogSink(
        options.get("facility") or "AUTH",
        options.get("tag") or "coffer",
        options.get("address", ""),
    )


class AuditDevice:
    def __init__(self, config: DeviceConfig) -> None:
        self.config = config
        self.salt = Salt(config.salt)
        self.format = FormatOptions.from_options(config.options)
        self.sink = build_sink(config)

    @property
    def path(self) -> str:
        return self.config.path

    async def log_request(self, audit: AuditInput, error: str) -> None:
        entry = request_entry(audit, self.salt.hmac, self.format, error)
        await self.sink.write(render(entry, self.format.format, self.format.prefix))

    async def log_response(self, audit: AuditInput, response: Response | None, error: str) -> None:
        entry = response_entry(audit, response, self.salt.hmac, self.format, error)
        await self.sink.write(render(entry, self.format.format, self.format.prefix))
