"""``create``, ``create-orphan`` and ``create/:role_name``: mint a token.

The rules (who may create what, policies, lifetime) are in ``create.py``;
this module reads the request and the role and answers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from node.core.token_store.create import CreateContext, create_token
from node.core.token_store.resolve import TokenResolver
from node.core.token_store.roles import RoleStore
from node.framework import Field, FieldData, FieldType, Path
from node.logical.request import Operation, Request
from node.logical.response import Response
from node.namespaces.model import Namespace
from sdk.errors import InvalidRequestError

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["CREATE_FIELDS", "CreatePaths"]

CREATE_FIELDS = {
    "id": Field(FieldType.STRING, "Custom token ID (root or sudo only)."),
    "policies": Field(FieldType.COMMA_STRING_LIST, "Policies of the token."),
    "meta": Field(FieldType.MAP, "Metadata attached to the token."),
    "no_parent": Field(FieldType.BOOL, "Create an orphan (root or sudo only)."),
    "no_default_policy": Field(FieldType.BOOL, "Do not add the default policy."),
    "renewable": Field(FieldType.BOOL, "Whether the token can be renewed.", True),
    "ttl": Field(FieldType.DURATION, "Initial TTL."),
    "lease": Field(FieldType.DURATION, "Deprecated alias of ttl."),
    "type": Field(FieldType.STRING, "service or batch."),
    "explicit_max_ttl": Field(FieldType.DURATION, "Hard cap on the token's life."),
    "display_name": Field(FieldType.STRING, "Name shown in lookups and logs."),
    "num_uses": Field(FieldType.INT, "Uses before the token is revoked; 0 is unlimited."),
    "period": Field(FieldType.DURATION, "Make a periodic token (root or sudo only)."),
    "entity_alias": Field(FieldType.STRING, "Not supported yet."),
}


class CreatePaths:
    def __init__(
        self, core: Core, namespace: Namespace, tokens: TokenResolver, roles: RoleStore
    ) -> None:
        self._core = core
        self._namespace = namespace
        self._tokens = tokens
        self._roles = roles

    def paths(self) -> list[Path]:
        update = Operation.UPDATE
        return [
            Path("create", {update: self._create}, CREATE_FIELDS, "Create a child token."),
            Path(
                "create-orphan",
                {update: self._create_orphan},
                CREATE_FIELDS,
                "Create an orphan token.",
            ),
            Path(
                r"create/(?P<role_name>[^/]+)",
                {update: self._create_with_role},
                CREATE_FIELDS,
                "Create a token from a role.",
            ),
        ]

    async def _create(self, request: Request, data: FieldData) -> Response:
        return await self._do_create(request, data)

    async def _create_orphan(self, request: Request, data: FieldData) -> Response:
        return await self._do_create(request, data, orphan=True)

    async def _create_with_role(self, request: Request, data: FieldData) -> Response:
        return await self._do_create(request, data, role_name=data.get("role_name"))

    async def _do_create(
        self, request: Request, data: FieldData, *, orphan: bool = False, role_name: str = ""
    ) -> Response:
        role = None
        if role_name:
            role = await self._roles.get(role_name)
            if role is None:
                raise InvalidRequestError(f"unknown role {role_name}")
        if data.get("entity_alias"):
            raise InvalidRequestError("entity_alias is not supported yet")
        if data.given("lease") and not data.given("ttl"):
            data = FieldData({**CREATE_FIELDS}, {**data.raw, "ttl": data.raw["lease"]})
        settings = self._core.settings
        context = CreateContext(
            store=self._core.tokens,
            parent=await self._tokens.caller(request),
            caller_has_sudo=request.has_sudo,
            default_ttl=settings.default_lease_ttl,
            max_ttl=settings.max_lease_ttl,
            orphan_path=orphan,
            role_name=role_name,
            role=role,
            namespace_id=self._namespace.id,
        )
        auth, warnings = await create_token(context, data)
        warnings += await self._missing_policies(auth.token_policies)
        return Response(auth=auth, warnings=warnings)

    async def _missing_policies(self, policies: list[str]) -> list[str]:
        store = self._core.policy_store(self._namespace.id)
        return [
            f'Policy "{name}" does not exist'
            for name in policies
            if name not in ("root", "default") and await store.get(name) is None
        ]
