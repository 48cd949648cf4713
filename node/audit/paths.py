"""``sys/audit``, ``sys/audit/:path`` and ``sys/audit-hash/:path``, as framework paths.

Listing, enabling and disabling need ``sudo`` (the reference's root paths);
all three exist only in the root namespace, since devices are cluster-wide.
"""

from __future__ import annotations

from node.audit.options import DEVICE_TYPES
from node.audit.table import AuditTable
from node.framework import Field, FieldData, FieldType, Path
from node.logical.request import Operation, Request
from node.logical.response import Response
from node.namespaces.model import ROOT
from sdk.errors import InvalidRequestError

__all__ = ["AuditPaths"]

_ENABLE_FIELDS = {
    "type": Field(FieldType.STRING, f"Device type: {', '.join(DEVICE_TYPES)}."),
    "description": Field(FieldType.STRING, "Human-friendly description.", ""),
    "options": Field(
        FieldType.MAP,
        "Device options: file_path, mode; address, socket_type, write_timeout; facility, tag; "
        "and for every type format, prefix, hmac_accessor, log_raw, elide_list_responses.",
    ),
    "local": Field(FieldType.BOOL, "Not replicated to other clusters.", False),
}


def _root_only(request: Request) -> None:
    if request.namespace_id != ROOT.id:
        raise InvalidRequestError("operation unavailable in namespaces")


class AuditPaths:
    """The audit rows of ``sys/`` (a ``PathGroup``): handlers are methods, as every
    ``sys/`` area declares them."""

    def __init__(self, audit: AuditTable) -> None:
        self._audit = audit

    def paths(self) -> list[Path]:
        return [
            Path(
                "audit",
                {Operation.READ: self._list},
                {},
                "List the enabled audit devices.",
                sudo=True,
            ),
            Path(
                "audit/(?P<path>.+)",
                {Operation.UPDATE: self._enable, Operation.DELETE: self._disable},
                {"path": Field(FieldType.STRING, "Where the device is enabled."), **_ENABLE_FIELDS},
                "Enable or disable an audit device.",
                sudo=True,
            ),
            Path(
                "audit-hash/(?P<path>.+)",
                {Operation.UPDATE: self._hash},
                {
                    "path": Field(FieldType.STRING, "The audit device whose salt to use."),
                    "input": Field(FieldType.STRING, "The value to hash.", required=True),
                },
                "The HMAC a device writes for a value, to find it in the audit log.",
            ),
        ]

    async def _list(self, request: Request, data: FieldData) -> Response:
        _root_only(request)
        devices = {c.path: c.describe() for c in self._audit.configs()}
        return Response(data=devices, top_level_data=True)

    async def _enable(self, request: Request, data: FieldData) -> None:
        _root_only(request)
        if not data.get("type"):
            raise InvalidRequestError("'type' is required")
        await self._audit.enable(
            data.get("path"),
            data.get("type"),
            data.get("description"),
            data.get("options") or {},
            data.get("local"),
        )

    async def _disable(self, request: Request, data: FieldData) -> None:
        _root_only(request)
        await self._audit.disable(data.get("path"))

    async def _hash(self, request: Request, data: FieldData) -> Response:
        _root_only(request)
        # Top level as the reference's documentation shows it, and in ``data`` as clients read it.
        hashed = self._audit.hash(data.get("path"), data.get("input"))
        return Response(data={"hash": hashed}, top_level_data=True)
