"""Paths of ``auth/token/``, as in the reference's token store.

One backend per namespace's token mount. Every path that names a token other
than the caller's resolves it through the namespace's ``TokenScope``: a token of
another tenant answers as an unknown one. Roles are the namespace's own.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from node.core.token_store.create import CreateContext, create_token
from node.core.token_store.roles import RoleStore, role_fields, role_paths
from node.barrier.view import BarrierView
from node.core.renewal import renew_with_method
from node.errors import InvalidRequestError, PermissionDeniedError, UnsupportedPathError
from node.framework import Field, FieldData, FieldType, FrameworkBackend, Path
from node.logical.request import Operation, Request
from node.logical.response import Auth, Response
from node.namespaces.model import ROOT, Namespace
from node.tokens.entry import TokenEntry
from node.tokens.scope import TokenScope
from node.tokens.ttl import renewed_expiry

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["TokenBackend"]

_CREATE_FIELDS = {
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


class TokenBackend(FrameworkBackend):
    type = "token"
    help_text = "The token store: create, look up, renew and revoke tokens; manage token roles."

    def __init__(self, core: Core, namespace: Namespace = ROOT) -> None:
        self._core = core
        self._namespace = namespace
        self._scope = TokenScope(core.tokens, core.namespaces, namespace.id)
        self._roles = RoleStore(BarrierView(core.barrier, namespace.storage_prefix + "sys/token/"))
        token_field = {"token": Field(FieldType.STRING, "The token.")}
        accessor_field = {"accessor": Field(FieldType.STRING, "The token's accessor.")}
        increment = {"increment": Field(FieldType.DURATION, "Seconds to extend the TTL by.", 0)}
        update = Operation.UPDATE
        super().__init__(
            [
                Path("create", {update: self._create}, _CREATE_FIELDS, "Create a child token."),
                Path(
                    "create-orphan",
                    {update: self._create_orphan},
                    _CREATE_FIELDS,
                    "Create an orphan token.",
                ),
                Path(
                    r"create/(?P<role_name>[^/]+)",
                    {update: self._create_with_role},
                    _CREATE_FIELDS,
                    "Create a token from a role.",
                ),
                Path(
                    "lookup",
                    {update: self._lookup, Operation.READ: self._lookup},
                    token_field,
                    "Look up a token.",
                ),
                Path(
                    "lookup-self",
                    {Operation.READ: self._lookup_self, update: self._lookup_self},
                    {},
                    "Look up the calling token.",
                ),
                Path(
                    "lookup-accessor",
                    {update: self._lookup_accessor},
                    accessor_field,
                    "Look up a token by accessor.",
                ),
                Path(
                    "renew", {update: self._renew}, {**token_field, **increment}, "Renew a token."
                ),
                Path(
                    "renew-self", {update: self._renew_self}, increment, "Renew the calling token."
                ),
                Path(
                    "renew-accessor",
                    {update: self._renew_accessor},
                    {**accessor_field, **increment},
                    "Renew a token by accessor.",
                ),
                Path(
                    "revoke",
                    {update: self._revoke},
                    token_field,
                    "Revoke a token and its children.",
                ),
                Path(
                    "revoke-self",
                    {update: self._revoke_self},
                    {},
                    "Revoke the calling token and its children.",
                ),
                Path(
                    "revoke-accessor",
                    {update: self._revoke_accessor},
                    accessor_field,
                    "Revoke a token by accessor.",
                ),
                Path(
                    "revoke-orphan",
                    {update: self._revoke_orphan},
                    token_field,
                    "Revoke a token, orphaning its children.",
                    sudo=True,
                ),
                Path(
                    "accessors/?",
                    {Operation.LIST: self._accessors},
                    {},
                    "List token accessors.",
                    sudo=True,
                ),
                *role_paths(self._roles, role_fields()),
            ]
        )

    # -- helpers ---------------------------------------------------------------------

    async def _caller(self, request: Request) -> TokenEntry:
        if request.auth is None:
            raise PermissionDeniedError()
        if request.auth.token_type == "batch":
            entry = await self._core.tokens.lookup(request.client_token)
        else:
            entry = await self._core.tokens.get_by_key(request.auth.token_key)
        if entry is None:
            raise PermissionDeniedError()
        return entry

    async def _named(self, data: FieldData) -> TokenEntry:
        token = (data.get("token") or "").strip()
        if not token:
            raise InvalidRequestError("missing token")
        entry = await self._scope.token(token)
        if entry is None:
            raise PermissionDeniedError("bad token")
        return entry

    async def _by_accessor(self, data: FieldData) -> TokenEntry:
        accessor = (data.get("accessor") or "").strip()
        if not accessor:
            raise InvalidRequestError("missing accessor")
        entry = await self._scope.accessor(accessor)
        if entry is None:
            raise InvalidRequestError("invalid accessor")
        return entry

    async def _warn_missing_policies(self, policies: list[str]) -> list[str]:
        warnings = []
        for name in policies:
            if (
                name not in ("root", "default")
                and await self._core.policy_store(self._namespace.id).get(name) is None
            ):
                warnings.append(f'Policy "{name}" does not exist')
        return warnings

    # -- create --------------------------------------------------------------------------

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
            data = FieldData({**_CREATE_FIELDS}, {**data.raw, "ttl": data.raw["lease"]})
        settings = self._core.settings
        context = CreateContext(
            store=self._core.tokens,
            parent=await self._caller(request),
            caller_has_sudo=request.has_sudo,
            default_ttl=settings.default_lease_ttl,
            max_ttl=settings.max_lease_ttl,
            orphan_path=orphan,
            role_name=role_name,
            role=role,
            namespace_id=self._namespace.id,
        )
        auth, warnings = await create_token(context, data)
        warnings += await self._warn_missing_policies(auth.token_policies)
        return Response(auth=auth, warnings=warnings)

    async def _create(self, request: Request, data: FieldData) -> Response:
        return await self._do_create(request, data)

    async def _create_orphan(self, request: Request, data: FieldData) -> Response:
        return await self._do_create(request, data, orphan=True)

    async def _create_with_role(self, request: Request, data: FieldData) -> Response:
        return await self._do_create(request, data, role_name=data.get("role_name"))

    # -- lookup ------------------------------------------------------------------------------

    async def _lookup(self, request: Request, data: FieldData) -> Response:
        if not data.get("token"):
            return await self._lookup_self(request, data)
        entry = await self._named(data)
        return Response(data=await self._core.describe_token(entry, data.get("token")))

    async def _lookup_self(self, request: Request, data: FieldData) -> Response:
        entry = await self._caller(request)
        return Response(data=await self._core.describe_token(entry, request.client_token))

    async def _lookup_accessor(self, request: Request, data: FieldData) -> Response:
        entry = await self._by_accessor(data)
        return Response(data=await self._core.describe_token(entry, ""))

    # -- renew -------------------------------------------------------------------------------

    async def _renew_entry(
        self, request: Request, entry: TokenEntry, increment: int, token_id: str = ""
    ) -> Response:
        if entry.type == "batch":
            raise InvalidRequestError("batch tokens cannot be renewed")
        if not entry.renewable:
            raise InvalidRequestError("lease is not renewable")
        # The issuing auth method may refuse, or refresh policies and TTLs.
        renewal = await renew_with_method(self._core, entry, request)
        entry, increment = renewal.entry, increment or renewal.ttl
        now = time.time()
        server_max = self._core.settings.max_lease_ttl
        lifetime = renewed_expiry(
            entry,
            now=now,
            increment=increment,
            max_ttl=min(server_max, entry.max_ttl) if entry.max_ttl else server_max,
        )
        renewed = entry.with_changes(expire_time=lifetime.expire_time, last_renewal_time=now)
        await self._core.tokens.save(renewed)
        auth = Auth(
            client_token=token_id,
            accessor=entry.accessor,
            policies=entry.policies,
            token_policies=entry.policies,
            metadata=entry.meta,
            display_name=entry.display_name,
            lease_duration=lifetime.ttl,
            renewable=entry.renewable,
            entity_id=entry.entity_id,
            token_type=entry.type,
            orphan=entry.orphan,
            num_uses=entry.num_uses,
        )
        return Response(auth=auth, warnings=list(lifetime.warnings))

    async def _renew(self, request: Request, data: FieldData) -> Response:
        token = (data.get("token") or "").strip()
        if not token:
            raise InvalidRequestError("missing token")
        entry = await self._scope.token(token)
        if entry is None:
            raise InvalidRequestError("token not found")
        return await self._renew_entry(request, entry, data.get("increment"), token)

    async def _renew_self(self, request: Request, data: FieldData) -> Response:
        entry = await self._caller(request)
        return await self._renew_entry(request, entry, data.get("increment"), request.client_token)

    async def _renew_accessor(self, request: Request, data: FieldData) -> Response:
        entry = await self._by_accessor(data)
        return await self._renew_entry(request, entry, data.get("increment"))

    # -- revoke ---------------------------------------------------------------------------

    async def _revoke_entry(self, entry: TokenEntry) -> None:
        if entry.type == "batch":
            raise InvalidRequestError("batch tokens cannot be revoked")
        await self._core.tokens.revoke_tree(entry)

    async def _revoke(self, request: Request, data: FieldData) -> None:
        token = (data.get("token") or "").strip()
        if not token:
            raise InvalidRequestError("missing token")
        entry = await self._scope.token(token)
        if entry is not None:
            await self._revoke_entry(entry)

    async def _revoke_self(self, request: Request, data: FieldData) -> None:
        await self._revoke_entry(await self._caller(request))

    async def _revoke_accessor(self, request: Request, data: FieldData) -> None:
        await self._revoke_entry(await self._by_accessor(data))

    async def _revoke_orphan(self, request: Request, data: FieldData) -> None:
        token = (data.get("token") or "").strip()
        if not token:
            raise InvalidRequestError("missing token")
        entry = await self._scope.token(token)
        if entry is None:
            raise InvalidRequestError("token to revoke not found")
        if entry.type == "batch":
            raise InvalidRequestError("batch tokens cannot be revoked")
        await self._core.tokens.revoke_orphan(entry)

    async def _accessors(self, request: Request, data: FieldData) -> Response:
        keys = await self._scope.accessors()
        if not keys:
            raise UnsupportedPathError()
        return Response(data={"keys": keys})
