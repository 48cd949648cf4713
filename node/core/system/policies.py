"""``sys/policy``, ``sys/policies/acl`` and the capability queries."""

from __future__ import annotations

from typing import TYPE_CHECKING

from node.errors import InvalidRequestError, PermissionDeniedError, UnsupportedPathError
from node.framework import Field, FieldData, FieldType, Path
from node.logical.request import Operation, Request
from node.logical.response import Response
from node.namespaces.model import ROOT, Namespace
from node.tokens.entry import TokenEntry
from node.tokens.scope import TokenScope

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["policy_paths"]


def policy_paths(core: Core, namespace: Namespace = ROOT) -> list[Path]:
    store = core.policy_store(namespace.id)
    # Tokens named by value or accessor: this namespace's (and, by value, its children's).
    scope = TokenScope(core.tokens, core.namespaces, namespace.id)

    async def list_policies(request: Request, data: FieldData) -> Response:
        names = await store.list(include_root=True)
        return Response(data={"keys": names, "policies": names}, top_level_data=True)

    async def list_acl(request: Request, data: FieldData) -> Response:
        names = await store.list(include_root=True)
        return Response(data={"keys": names})

    async def read(request: Request, data: FieldData, legacy: bool) -> Response:
        name = data.get("name")
        policy = await store.get(name)
        if policy is None:
            raise UnsupportedPathError()
        body = {"name": policy.name, "rules" if legacy else "policy": policy.raw}
        return Response(data=body, top_level_data=True)

    async def read_legacy(request: Request, data: FieldData) -> Response:
        return await read(request, data, legacy=True)

    async def read_acl(request: Request, data: FieldData) -> Response:
        return await read(request, data, legacy=False)

    async def write(request: Request, data: FieldData) -> None:
        text = data.get("policy") or data.get("rules")
        if not text:
            raise InvalidRequestError("'policy' parameter not supplied or empty")
        await store.set(data.get("name"), text)

    async def delete(request: Request, data: FieldData) -> None:
        await store.delete(data.get("name"))

    async def policy_exists(request: Request, data: FieldData) -> bool:
        return await store.get(data.get("name")) is not None

    async def capabilities_of(entry: TokenEntry | None, paths: list[str]) -> Response:
        if entry is None:
            raise InvalidRequestError("invalid token")
        if not paths:
            raise InvalidRequestError("paths must be supplied")
        acl = await core.access.acl_for(entry)
        result: dict[str, object] = {
            path: acl.capabilities(namespace.path + path) for path in paths
        }
        if len(paths) == 1:
            result["capabilities"] = result[paths[0]]
        return Response(data=dict(result), top_level_data=True)

    def requested_paths(data: FieldData) -> list[str]:
        return [
            p.lstrip("/")
            for p in (data.get("paths") or []) + ([data.get("path")] if data.get("path") else [])
        ]

    async def capabilities(request: Request, data: FieldData) -> Response:
        token = data.get("token") or ""
        if not token:
            raise InvalidRequestError("missing token")
        return await capabilities_of(await scope.token(token), requested_paths(data))

    async def capabilities_self(request: Request, data: FieldData) -> Response:
        entry = await core.tokens.lookup(request.client_token)
        if entry is None:
            raise PermissionDeniedError()
        return await capabilities_of(entry, requested_paths(data))

    async def capabilities_accessor(request: Request, data: FieldData) -> Response:
        accessor = data.get("accessor") or ""
        if not accessor:
            raise InvalidRequestError("missing accessor")
        entry = await scope.accessor(accessor)
        if entry is None:
            raise InvalidRequestError("invalid accessor")
        return await capabilities_of(entry, requested_paths(data))

    name = {"name": Field(FieldType.STRING, "Name of the policy.")}
    text = {
        "policy": Field(FieldType.STRING, "The policy document (HCL or JSON)."),
        "rules": Field(FieldType.STRING, "Legacy name of 'policy'."),
    }
    paths_field = {
        "paths": Field(FieldType.COMMA_STRING_LIST, "Paths to check."),
        "path": Field(FieldType.STRING, "Deprecated single path."),
    }
    return [
        Path(
            "policy/?",
            {Operation.READ: list_policies, Operation.LIST: list_acl},
            {},
            "List policies.",
        ),
        Path(
            r"policy/(?P<name>.+)",
            {Operation.READ: read_legacy, Operation.UPDATE: write, Operation.DELETE: delete},
            {**name, **text},
            "Read, write or delete a policy.",
            exists=policy_exists,
        ),
        Path("policies/acl/?", {Operation.LIST: list_acl}, {}, "List ACL policies."),
        Path(
            r"policies/acl/(?P<name>.+)",
            {Operation.READ: read_acl, Operation.UPDATE: write, Operation.DELETE: delete},
            {**name, **text},
            "Read, write or delete an ACL policy.",
            exists=policy_exists,
        ),
        Path(
            "capabilities",
            {Operation.UPDATE: capabilities},
            {"token": Field(FieldType.STRING, "Token to check."), **paths_field},
            "Capabilities of a token on paths.",
        ),
        Path(
            "capabilities-self",
            {Operation.UPDATE: capabilities_self},
            paths_field,
            "Capabilities of the calling token.",
        ),
        Path(
            "capabilities-accessor",
            {Operation.UPDATE: capabilities_accessor},
            {"accessor": Field(FieldType.STRING, "Accessor of the token to check."), **paths_field},
            "Capabilities of a token, by accessor.",
        ),
    ]
