"""``sys/policy``, ``sys/policies/acl`` and the capability queries."""

from __future__ import annotations

from typing import TYPE_CHECKING

from node.framework import Field, FieldData, FieldType, Path
from node.logical.request import Operation, Request
from node.logical.response import Response
from node.namespaces.model import ROOT, Namespace
from node.tokens.entry import TokenEntry
from node.tokens.scope import TokenScope
from sdk.errors import InvalidRequestError, PermissionDeniedError, UnsupportedPathError

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["CapabilityPaths", "PolicyPaths"]


_NAME = {"name": Field(FieldType.STRING, "Name of the policy.")}
_TEXT = {
    "policy": Field(FieldType.STRING, "The policy document (HCL or JSON)."),
    "rules": Field(FieldType.STRING, "Legacy name of 'policy'."),
}
_PATHS = {
    "paths": Field(FieldType.COMMA_STRING_LIST, "Paths to check."),
    "path": Field(FieldType.STRING, "Deprecated single path."),
}


class PolicyPaths:
    """One namespace's ACL policies, at ``sys/policy`` (legacy) and ``sys/policies/acl``."""

    def __init__(self, core: Core, namespace: Namespace = ROOT) -> None:
        self._store = core.policy_store(namespace.id)

    def paths(self) -> list[Path]:
        return [
            Path(
                "policy/?",
                {Operation.READ: self._list_legacy, Operation.LIST: self._list},
                {},
                "List policies.",
            ),
            Path(
                r"policy/(?P<name>.+)",
                {
                    Operation.READ: self._read_legacy,
                    Operation.UPDATE: self._write,
                    Operation.DELETE: self._delete,
                },
                _NAME | _TEXT,
                "Read, write or delete a policy.",
                exists=self._exists,
            ),
            Path("policies/acl/?", {Operation.LIST: self._list}, {}, "List ACL policies."),
            Path(
                r"policies/acl/(?P<name>.+)",
                {
                    Operation.READ: self._read,
                    Operation.UPDATE: self._write,
                    Operation.DELETE: self._delete,
                },
                _NAME | _TEXT,
                "Read, write or delete an ACL policy.",
                exists=self._exists,
            ),
        ]

    async def _list_legacy(self, request: Request, data: FieldData) -> Response:
        names = await self._store.list(include_root=True)
        return Response(data={"keys": names, "policies": names}, top_level_data=True)

    async def _list(self, request: Request, data: FieldData) -> Response:
        return Response(data={"keys": await self._store.list(include_root=True)})

    async def _read_as(self, data: FieldData, text_key: str) -> Response:
        policy = await self._store.get(data.get("name"))
        if policy is None:
            raise UnsupportedPathError()
        return Response(data={"name": policy.name, text_key: policy.raw}, top_level_data=True)

    async def _read_legacy(self, request: Request, data: FieldData) -> Response:
        return await self._read_as(data, "rules")

    async def _read(self, request: Request, data: FieldData) -> Response:
        return await self._read_as(data, "policy")

    async def _write(self, request: Request, data: FieldData) -> None:
        text = data.get("policy") or data.get("rules")
        if not text:
            raise InvalidRequestError("'policy' parameter not supplied or empty")
        await self._store.set(data.get("name"), text)

    async def _delete(self, request: Request, data: FieldData) -> None:
        await self._store.delete(data.get("name"))

    async def _exists(self, request: Request, data: FieldData) -> bool:
        return await self._store.get(data.get("name")) is not None


class CapabilityPaths:
    """What a token may do on paths: ``sys/capabilities``, ``-self`` and ``-accessor``."""

    def __init__(self, core: Core, namespace: Namespace = ROOT) -> None:
        self._core = core
        self._namespace = namespace
        # Tokens named by value or accessor: this namespace's (and, by value, its children's).
        self._scope = TokenScope(core.tokens, core.namespaces, namespace.id)

    def paths(self) -> list[Path]:
        return [
            Path(
                "capabilities",
                {Operation.UPDATE: self._by_token},
                {"token": Field(FieldType.STRING, "Token to check."), **_PATHS},
                "Capabilities of a token on paths.",
            ),
            Path(
                "capabilities-self",
                {Operation.UPDATE: self._of_caller},
                _PATHS,
                "Capabilities of the calling token.",
            ),
            Path(
                "capabilities-accessor",
                {Operation.UPDATE: self._by_accessor},
                {"accessor": Field(FieldType.STRING, "Accessor of the token to check."), **_PATHS},
                "Capabilities of a token, by accessor.",
            ),
        ]

    async def _answer(self, entry: TokenEntry | None, data: FieldData) -> Response:
        paths = [
            p.lstrip("/")
            for p in (data.get("paths") or []) + ([data.get("path")] if data.get("path") else [])
        ]
        if entry is None:
            raise InvalidRequestError("invalid token")
        if not paths:
            raise InvalidRequestError("paths must be supplied")
        acl = await self._core.access.acl_for(entry)
        prefix = self._namespace.path
        result: dict[str, object] = {path: acl.capabilities(prefix + path) for path in paths}
        if len(paths) == 1:
            result["capabilities"] = result[paths[0]]
        return Response(data=dict(result), top_level_data=True)

    async def _by_token(self, request: Request, data: FieldData) -> Response:
        token = data.get("token") or ""
        if not token:
            raise InvalidRequestError("missing token")
        return await self._answer(await self._scope.token(token), data)

    async def _of_caller(self, request: Request, data: FieldData) -> Response:
        entry = await self._core.tokens.lookup(request.client_token)
        if entry is None:
            raise PermissionDeniedError()
        return await self._answer(entry, data)

    async def _by_accessor(self, request: Request, data: FieldData) -> Response:
        accessor = data.get("accessor") or ""
        if not accessor:
            raise InvalidRequestError("missing accessor")
        entry = await self._scope.accessor(accessor)
        if entry is None:
            raise InvalidRequestError("invalid accessor")
        return await self._answer(entry, data)
