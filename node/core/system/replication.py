"""``sys/replication/*``: enable a primary or a secondary, issue and revoke
secondaries, paths filters, and status (``node/replication`` does the work).

Root namespace only (``backend._ROOT_ONLY``). Status is unauthenticated, as
in the reference; issuing a secondary token needs ``sudo``.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING

from node.core.dr_operation import require_dr_operation_token
from node.framework import Field, FieldData, FieldType, Path
from node.logical.request import Operation, Request
from node.logical.response import Response
from node.replication.classify import Kind, PathsFilter
from node.replication.manager import activation_token
from sdk.errors import InvalidRequestError

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["ReplicationPaths"]

log = logging.getLogger("coffer.replication")

_KIND = r"(?P<kind>performance|dr)"
_DEFAULT_TTL = 1800
#: merkle_root walks every key (cached for a second): a poller can skip it.
_MERKLE = Field(FieldType.BOOL, "Include merkle_root (walks every key).", True)
#: The older mount-filter spelling of each mode.
_OLD_MODES = {"whitelist": "allow", "blacklist": "deny"}
_NEW_TO_OLD = {v: k for k, v in _OLD_MODES.items()}


class ReplicationPaths:
    def __init__(self, core: Core) -> None:
        self._core = core

    def paths(self) -> list[Path]:
        filter_fields = {
            "id": Field(FieldType.STRING, "The secondary's id."),
            "mode": Field(FieldType.STRING, "allow or deny (mount-filter: whitelist/blacklist)."),
            "paths": Field(FieldType.COMMA_STRING_LIST, "Mount and namespace paths."),
        }
        return [
            Path(
                "replication/status",
                {Operation.READ: self._status_all},
                {"merkle": _MERKLE},
                summary="Replication status of both kinds.",
                unauthenticated=True,
            ),
            Path(
                f"replication/{_KIND}/status",
                {Operation.READ: self._status},
                {"kind": Field(FieldType.STRING, "performance or dr"), "merkle": _MERKLE},
                "Replication status of one kind.",
                unauthenticated=True,
            ),
            Path(
                f"replication/{_KIND}/primary/enable",
                {Operation.UPDATE: self._enable_primary},
                {
                    "kind": Field(FieldType.STRING, "performance or dr"),
                    "primary_cluster_addr": Field(
                        FieldType.STRING, "HOST:PORT secondaries connect to (replication port)."
                    ),
                },
                "Make this cluster a replication primary.",
                sudo=True,
            ),
            Path(
                f"replication/{_KIND}/primary/secondary-token",
                {Operation.UPDATE: self._secondary_token},
                {
                    "kind": Field(FieldType.STRING, "performance or dr"),
                    "id": Field(FieldType.STRING, "The secondary's name.", required=True),
                    "ttl": Field(FieldType.DURATION, "Validity of the token.", _DEFAULT_TTL),
                },
                "Issue a wrapped activation token for a new secondary.",
                sudo=True,
            ),
            Path(
                f"replication/{_KIND}/primary/revoke-secondary",
                {Operation.UPDATE: self._revoke},
                {
                    "kind": Field(FieldType.STRING, "performance or dr"),
                    "id": Field(FieldType.STRING, "The secondary's name.", required=True),
                },
                "Refuse a secondary from now on.",
                sudo=True,
            ),
            Path(
                r"replication/performance/primary/paths-filter/(?P<id>[^/]+)",
                {
                    Operation.READ: self._read_filter,
                    Operation.UPDATE: self._write_filter,
                    Operation.CREATE: self._write_filter,
                    Operation.DELETE: self._delete_filter,
                },
                filter_fields,
                "Which mounts and namespaces a performance secondary gets.",
                sudo=True,
            ),
            Path(
                r"replication/performance/primary/mount-filter/(?P<id>[^/]+)",
                {
                    Operation.READ: self._read_old_filter,
                    Operation.UPDATE: self._write_old_filter,
                    Operation.CREATE: self._write_old_filter,
                    Operation.DELETE: self._delete_filter,
                },
                filter_fields,
                "The older spelling of paths-filter (whitelist/blacklist, mounts only).",
                sudo=True,
            ),
            Path(
                r"replication/performance/primary/dynamic-filter/(?P<id>[^/]+)",
                {Operation.READ: self._dynamic_filter},
                {"id": Field(FieldType.STRING, "The secondary's id.")},
                "The mounts and namespaces a secondary's paths filter excludes now.",
                sudo=True,
            ),
            Path(
                r"replication/performance/secondary/dynamic-filter/(?P<id>[^/]+)",
                {Operation.READ: self._secondary_dynamic_filter},
                {"id": Field(FieldType.STRING, "This secondary's own id.")},
                "On a performance secondary: what the primary's paths filter excludes for it.",
                sudo=True,
            ),
            Path(
                f"replication/{_KIND}/secondary/enable",
                {Operation.UPDATE: self._enable_secondary},
                {
                    "kind": Field(FieldType.STRING, "performance or dr"),
                    "token": Field(FieldType.STRING, "The activation token.", required=True),
                    "primary_api_addr": Field(
                        FieldType.STRING, "The primary's API address (else from the token)."
                    ),
                },
                "Make this cluster a secondary: wipes its data.",
                sudo=True,
            ),
            Path(
                f"replication/{_KIND}/primary/demote",
                {Operation.UPDATE: self._demote},
                {"kind": Field(FieldType.STRING, "performance or dr")},
                "Become a secondary with no primary (keeps the cluster id and the data).",
                sudo=True,
            ),
            Path(
                f"replication/{_KIND}/primary/disable",
                {Operation.UPDATE: self._disable_primary},
                {"kind": Field(FieldType.STRING, "performance or dr")},
                "Stop being a primary; secondaries can no longer connect.",
                sudo=True,
            ),
            *self._secondary_rows("dr", unauthenticated=True),
            *self._secondary_rows("performance", unauthenticated=False),
        ]

    def _secondary_rows(self, kind: str, *, unauthenticated: bool) -> list[Path]:
        """DR secondaries serve no tokens: their rows take a DR operation token instead."""
        token_field = {
            "dr_operation_token": Field(FieldType.STRING, "A DR operation token."),
        }
        if not unauthenticated:
            token_field = {}
        sudo = not unauthenticated
        return [
            Path(
                f"replication/{kind}/secondary/promote",
                {Operation.UPDATE: self._promote},
                {
                    **token_field,
                    "primary_cluster_addr": Field(
                        FieldType.STRING, "HOST:PORT secondaries will connect to."
                    ),
                    "performance_primary_cluster_addr": Field(
                        FieldType.STRING,
                        "dr: HOST:PORT for the performance role taken over from the old "
                        "primary (default: the old primary's).",
                    ),
                    "force": Field(FieldType.BOOL, "Accepted; promotion never waits here."),
                },
                "Make this secondary the primary.",
                unauthenticated=unauthenticated,
                sudo=sudo,
            ),
            Path(
                f"replication/{kind}/secondary/disable",
                {Operation.UPDATE: self._disable_secondary},
                token_field,
                "Stop replicating; the data stays.",
                unauthenticated=unauthenticated,
                sudo=sudo,
            ),
            Path(
                f"replication/{kind}/secondary/update-primary",
                {Operation.UPDATE: self._update_primary},
                {
                    **token_field,
                    "token": Field(FieldType.STRING, "An activation token of the new primary."),
                    "primary_api_addr": Field(FieldType.STRING, "The new primary's API address."),
                },
                "Follow another primary that shares this cluster's keys (no wipe).",
                unauthenticated=unauthenticated,
                sudo=sudo,
            ),
        ]

    # -- role changes ---------------------------------------------------------------

    @staticmethod
    def _kind_of(request: Request) -> Kind:
        return Kind.DR if request.path.startswith("replication/dr/") else Kind.PERFORMANCE

    async def _operation_token(self, kind: Kind, request: Request, data: FieldData) -> None:
        """A DR secondary's role changes take a DR operation token (``dr_operation``)."""
        if kind is Kind.DR:
            await require_dr_operation_token(
                self._core, data.get("dr_operation_token"), f"sys/{request.path}"
            )

    async def _promote(self, request: Request, data: FieldData) -> Response:
        kind = self._kind_of(request)
        await self._operation_token(kind, request, data)
        warnings = await self._core.replication.promote(
            kind,
            str(data.get("primary_cluster_addr") or ""),
            str(data.get("performance_primary_cluster_addr") or ""),
        )
        await self._core.restart_active_duties()
        return Response(warnings=warnings)

    async def _demote(self, request: Request, data: FieldData) -> Response:
        warnings = await self._core.replication.demote(Kind(data.get("kind")))
        await self._core.restart_active_duties()
        return Response(warnings=warnings)

    async def _disable_primary(self, request: Request, data: FieldData) -> Response:
        warnings = await self._core.replication.disable(Kind(data.get("kind")), "primary")
        await self._core.restart_active_duties()
        return Response(warnings=warnings)

    async def _disable_secondary(self, request: Request, data: FieldData) -> Response:
        kind = self._kind_of(request)
        await self._operation_token(kind, request, data)
        warnings = await self._core.replication.disable(kind, "secondary")
        await self._core.restart_active_duties()
        return Response(warnings=warnings)

    async def _update_primary(self, request: Request, data: FieldData) -> Response:
        kind = self._kind_of(request)
        await self._operation_token(kind, request, data)
        token = str(data.get("token") or "")
        if not token:
            raise InvalidRequestError("token is required")
        warnings = await self._core.replication.update_primary(
            kind, token, str(data.get("primary_api_addr") or "")
        )
        await self._core.restart_active_duties()
        return Response(warnings=warnings)

    # -- status ---------------------------------------------------------------------

    async def _status_all(self, request: Request, data: FieldData) -> Response:
        replication = self._core.replication
        return Response(
            data={
                "dr": await replication.status(Kind.DR, bool(data.get("merkle"))),
                "performance": await replication.status(Kind.PERFORMANCE, bool(data.get("merkle"))),
            }
        )

    async def _status(self, request: Request, data: FieldData) -> Response:
        kind = Kind(data.get("kind"))
        return Response(data=await self._core.replication.status(kind, bool(data.get("merkle"))))

    # -- primary --------------------------------------------------------------------

    async def _enable_primary(self, request: Request, data: FieldData) -> Response:
        self._needs_raft()
        warnings = await self._core.replication.enable_primary(
            Kind(data.get("kind")), str(data.get("primary_cluster_addr") or "")
        )
        return Response(warnings=warnings)

    async def _secondary_token(self, request: Request, data: FieldData) -> Response:
        ttl = int(data.get("ttl"))
        if ttl <= 0:
            raise InvalidRequestError("ttl must be positive")
        kind = Kind(data.get("kind"))
        api_addr = self._api_addr()
        bundle = await self._core.replication.secondary_token(kind, str(data.get("id")), api_addr)
        wrapped = await self._core.wrapping.wrap(
            Response(data=bundle.to_json()),
            ttl,
            f"sys/replication/{kind.value}/primary/secondary-token",
        )
        assert wrapped.wrap_info is not None
        info = dataclasses.replace(
            wrapped.wrap_info, token=activation_token(wrapped.wrap_info.token, api_addr)
        )
        return Response(wrap_info=info)

    async def _revoke(self, request: Request, data: FieldData) -> None:
        await self._core.replication.revoke_secondary(Kind(data.get("kind")), str(data.get("id")))

    async def _read_filter(self, request: Request, data: FieldData) -> Response:
        found = self._core.replication.get_filter(str(data.get("id")))
        if found is None:
            return Response()
        return Response(data=found.to_json())

    async def _read_old_filter(self, request: Request, data: FieldData) -> Response:
        found = self._core.replication.get_filter(str(data.get("id")))
        if found is None:
            return Response()
        return Response(data={"mode": _NEW_TO_OLD[found.mode], "paths": list(found.paths)})

    async def _write_filter(self, request: Request, data: FieldData) -> None:
        mode = str(data.get("mode") or "allow")
        if mode not in ("allow", "deny"):
            raise InvalidRequestError("mode must be allow or deny")
        await self._store_filter(str(data.get("id")), mode, data.get("paths") or [])

    async def _write_old_filter(self, request: Request, data: FieldData) -> None:
        mode = str(data.get("mode") or "whitelist")
        if mode not in _OLD_MODES:
            raise InvalidRequestError("mode must be whitelist or blacklist")
        await self._store_filter(str(data.get("id")), _OLD_MODES[mode], data.get("paths") or [])

    async def _store_filter(self, secondary_id: str, mode: str, paths: list[str]) -> None:
        cleaned = []
        for path in paths:
            path = path.strip().lstrip("/")
            if not path:
                continue
            cleaned.append(path if path.endswith("/") else path + "/")
        if not cleaned:
            raise InvalidRequestError("paths must name at least one mount or namespace")
        replication = self._core.replication
        replication.get_filter(secondary_id)  # a primary, or a clear 400
        if not replication.allowed(Kind.PERFORMANCE, secondary_id):
            raise InvalidRequestError(f"no secondary with id {secondary_id!r}")
        await replication.set_filter(secondary_id, PathsFilter(mode, tuple(cleaned)))

    async def _dynamic_filter(self, request: Request, data: FieldData) -> Response:
        return Response(data=self._core.replication.dynamic_filter(str(data.get("id"))))

    async def _secondary_dynamic_filter(self, request: Request, data: FieldData) -> Response:
        filtered = await self._core.replication.secondary_dynamic_filter(str(data.get("id")))
        return Response(data=filtered)

    async def _delete_filter(self, request: Request, data: FieldData) -> None:
        await self._core.replication.set_filter(str(data.get("id")), None)

    # -- secondary ------------------------------------------------------------------

    async def _enable_secondary(self, request: Request, data: FieldData) -> Response:
        self._needs_raft()
        core = self._core
        warnings = await core.replication.enable_secondary(
            Kind(data.get("kind")),
            str(data.get("token")),
            str(data.get("primary_api_addr") or ""),
        )
        # The primary's seal is stored now: seal, so the next unseal takes its keys. From
        # here on the node is sealing: an unseal or seal-status read waits for it to end.
        core.lifecycle.forget_configs()
        await core.seal_soon(0.2, self._sealed)  # 0.2 s: let this answer leave first
        return Response(warnings=warnings)

    def _sealed(self) -> None:
        self._core.lifecycle.forget_configs()
        log.info("sealed to take the primary's keys", extra={"event": "replication.sealed"})

    # -- helpers --------------------------------------------------------------------

    def _needs_raft(self) -> None:
        if self._core.cluster is None:
            raise InvalidRequestError("replication needs raft storage")

    def _api_addr(self) -> str:
        core = self._core
        if core.cluster is not None and core.cluster.settings.api_addr:
            return core.cluster.settings.api_addr.rstrip("/")
        if core.settings.api_addr:
            return core.settings.api_addr.rstrip("/")
        raise InvalidRequestError("this server has no api_addr for secondaries to reach it")
