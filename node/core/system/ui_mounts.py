"""``sys/internal/ui/mounts``: which mounts a token can use, and what a path is.

Vault's CLI asks ``sys/internal/ui/mounts/<path>`` to learn a mount's type
and KV version before it builds a ``kv`` request, so this must answer for
any token that has some access under the mount, not only for root.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from node.framework import FieldData, Path
from node.logical.request import Operation, Request
from node.logical.response import Response
from node.namespaces.model import ROOT, Namespace
from node.policy.acl import ACL
from node.routing.mounts import MountEntry
from sdk.errors import PermissionDeniedError, UnsupportedPathError

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["UiMountPaths", "can_reach_mount"]


def can_reach_mount(acl: ACL, route_path: str) -> bool:
    """True when some non-deny rule grants anything at or below the mount."""
    if acl.is_root:
        return True
    for rule in acl.rules:
        if rule.is_deny or not rule.capabilities:
            continue
        pattern = rule.path
        literal = pattern.split("+", 1)[0].rstrip("*")
        if literal.startswith(route_path) or (
            pattern != literal and route_path.startswith(literal)
        ):
            return True
    return False


def _describe(entry: MountEntry) -> dict[str, Any]:
    return {
        "type": entry.type,
        "description": entry.description,
        "accessor": entry.accessor,
        "uuid": entry.uuid,
        "local": entry.local,
        "seal_wrap": entry.seal_wrap,
        "options": entry.options or None,
        "config": entry.describe()["config"],
    }


class UiMountPaths:
    def __init__(self, core: Core, namespace: Namespace = ROOT) -> None:
        self._core = core
        self._namespace = namespace

    def paths(self) -> list[Path]:
        return [
            Path(
                "internal/ui/mounts/?",
                {Operation.READ: self._list},
                {},
                "Mounts the calling token can use.",
                unauthenticated=True,
            ),
            Path(
                r"internal/ui/mounts/(?P<path>.+)",
                {Operation.READ: self._one},
                {},
                "The mount that serves a path (type, KV version).",
                unauthenticated=True,
            ),
        ]

    async def _caller_acl(self, request: Request) -> ACL | None:
        core = self._core
        entry = await core.tokens.lookup(request.client_token) if request.client_token else None
        return await core.access.acl_for(entry) if entry else None

    async def _list(self, request: Request, data: FieldData) -> Response:
        acl = await self._caller_acl(request)
        shown: dict[str, dict[str, Any]] = {"secret": {}, "auth": {}}
        for entry in self._core.router.entries():
            if entry.namespace_id != self._namespace.id:
                continue
            unauth = entry.listing_visibility == "unauth"
            if acl is not None and (unauth or can_reach_mount(acl, entry.route_path)):
                shown[entry.table][entry.path] = _describe(entry)
            elif unauth:
                # As the reference: listed for anyone, with only what a login form needs.
                shown[entry.table][entry.path] = {
                    "type": entry.type,
                    "description": entry.description,
                    "options": entry.options or None,
                }
        return Response(data=shown)

    async def _one(self, request: Request, data: FieldData) -> Response:
        acl = await self._caller_acl(request)
        if acl is None:
            raise PermissionDeniedError()
        namespace = self._namespace
        route = self._core.router.match(namespace.path + data.get("path"))
        if route is None or route.mount.namespace_id != namespace.id:
            raise UnsupportedPathError()
        if not can_reach_mount(acl, route.mount.route_path):
            raise PermissionDeniedError()
        body = _describe(route.mount)
        body["path"] = route.mount.route_path[len(namespace.path) :]
        return Response(data=body)
