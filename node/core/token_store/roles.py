"""Token roles (``auth/token/roles/:name``): templates for tokens created from them.

Each namespace has its own roles, kept under its storage prefix
(``<prefix>sys/token/roles/<name>``; root's are where they always were), so a
tenant can neither read nor change another's, and deleting a namespace deletes them.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from node.barrier.view import BarrierView
from node.framework import Field, FieldData, FieldType, Path
from node.logical.request import Operation, Request
from node.logical.response import Response
from sdk.errors import InvalidRequestError, UnsupportedPathError

__all__ = ["TOKEN_TYPES", "RolePaths", "RoleStore"]

TOKEN_TYPES = ("service", "batch", "default-service", "default-batch")

#: Stored name -> (field type, default, description). ``token_*`` names are
#: the current spellings; ``period`` and ``explicit_max_ttl`` the legacy ones.
_ROLE_SCHEMA: dict[str, tuple[FieldType, Any, str]] = {
    "allowed_policies": (FieldType.COMMA_STRING_LIST, [], "Policies tokens of this role may have."),
    "disallowed_policies": (
        FieldType.COMMA_STRING_LIST,
        [],
        "Policies tokens of this role may not have.",
    ),
    "orphan": (FieldType.BOOL, False, "Tokens are created without a parent."),
    "renewable": (FieldType.BOOL, True, "Tokens can be renewed."),
    "path_suffix": (FieldType.STRING, "", "Suffix of the creation path."),
    "token_period": (FieldType.DURATION, 0, "Period of the tokens."),
    "token_explicit_max_ttl": (FieldType.DURATION, 0, "Hard cap on the tokens' life."),
    "token_type": (
        FieldType.STRING,
        "default-service",
        "service, batch, default-service or default-batch.",
    ),
    "token_no_default_policy": (FieldType.BOOL, False, "Do not add the default policy."),
    "token_num_uses": (FieldType.INT, 0, "Uses of each token; 0 is unlimited."),
    "token_bound_cidrs": (FieldType.COMMA_STRING_LIST, [], "CIDRs the tokens may be used from."),
}
_LEGACY = {
    "period": "token_period",
    "explicit_max_ttl": "token_explicit_max_ttl",
    "bound_cidrs": "token_bound_cidrs",
}


class RoleStore:
    """One namespace's token roles: ``roles/<name>`` under its token view."""

    def __init__(self, view: BarrierView) -> None:
        self._view = view

    async def get(self, name: str) -> dict[str, Any] | None:
        raw: dict[str, Any] | None = await self._view.get_json(f"roles/{name}")
        return raw

    async def put(self, name: str, role: dict[str, Any]) -> None:
        await self._view.put_json(f"roles/{name}", role)

    async def delete(self, name: str) -> None:
        await self._view.delete(f"roles/{name}")

    async def names(self) -> list[str]:
        return await self._view.list("roles/")


def _fields() -> dict[str, Field]:
    fields = {name: Field(t, desc) for name, (t, _, desc) in _ROLE_SCHEMA.items()}
    for legacy, current in _LEGACY.items():
        fields[legacy] = Field(_ROLE_SCHEMA[current][0], f"Legacy name of {current}.")
    return fields


_FIELDS = _fields()


def _public(role: dict[str, Any], name: str) -> dict[str, Any]:
    shown = {key: role.get(key, default) for key, (_, default, _) in _ROLE_SCHEMA.items()}
    shown["name"] = name
    shown["period"] = shown["token_period"]
    shown["explicit_max_ttl"] = shown["token_explicit_max_ttl"]
    return shown


def _cidrs(values: list[str]) -> list[str]:
    """Validated CIDR blocks (a bare address is its own /32 or /128)."""
    blocks = []
    for value in values:
        try:
            blocks.append(str(ipaddress.ip_network(value.strip(), strict=False)))
        except ValueError:
            raise InvalidRequestError(
                f"invalid CIDR block {value!r} in token_bound_cidrs"
            ) from None
    return blocks


class RolePaths:
    def __init__(self, store: RoleStore) -> None:
        self._store = store

    def paths(self) -> list[Path]:
        return [
            Path("roles/?", {Operation.LIST: self._list}, {}, "List token roles."),
            Path(
                r"roles/(?P<role_name>[^/]+)",
                {
                    Operation.READ: self._read,
                    Operation.UPDATE: self._write,
                    Operation.DELETE: self._delete,
                },
                _FIELDS,
                "Create, read, update or delete a token role.",
            ),
        ]

    async def _read(self, request: Request, data: FieldData) -> Response:
        role = await self._store.get(data.get("role_name"))
        if role is None:
            raise UnsupportedPathError()
        return Response(data=_public(role, data.get("role_name")))

    async def _write(self, request: Request, data: FieldData) -> None:
        name = data.get("role_name")
        role = _updated(await self._store.get(name) or {}, data)
        await self._store.put(name, role)

    async def _delete(self, request: Request, data: FieldData) -> None:
        await self._store.delete(data.get("role_name"))

    async def _list(self, request: Request, data: FieldData) -> Response:
        keys = await self._store.names()
        if not keys:
            raise UnsupportedPathError()
        return Response(data={"keys": keys})


def _updated(role: dict[str, Any], data: FieldData) -> dict[str, Any]:
    """``role`` with the given fields applied (defaults for the rest), validated."""
    for key, (_, default, _) in _ROLE_SCHEMA.items():
        if data.given(key):
            role[key] = data.get(key)
        role.setdefault(key, default)
    for legacy, current in _LEGACY.items():
        if data.given(legacy) and not data.given(current):
            role[current] = data.get(legacy)
    if role["token_type"] not in TOKEN_TYPES:
        raise InvalidRequestError(
            f"invalid token_type {role['token_type']!r}: use one of {', '.join(TOKEN_TYPES)}"
        )
    if role["token_num_uses"] < 0 or role["token_period"] < 0 or role["token_explicit_max_ttl"] < 0:
        raise InvalidRequestError(
            "token_num_uses, token_period and token_explicit_max_ttl must not be negative"
        )
    role["token_bound_cidrs"] = _cidrs(role["token_bound_cidrs"])
    role["allowed_policies"] = sorted({p.lower() for p in role["allowed_policies"]})
    role["disallowed_policies"] = sorted({p.lower() for p in role["disallowed_policies"]})
    # The creation code reads these names.
    role["period"] = role["token_period"]
    role["explicit_max_ttl"] = role["token_explicit_max_ttl"]
    return role
