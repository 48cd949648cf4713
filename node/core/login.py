"""Turns an auth method's ``Login`` into a token and an ``auth`` block.

Methods only check credentials; minting, identity linking and TTL limits
happen here once, so every method behaves the same.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from node.auth.common.token_settings import TokenSettings, issued_token_type
from node.logical.mount import MountEntry
from node.logical.request import Request
from node.logical.response import Auth, Login, Response
from node.tokens.entry import TokenEntry
from node.tokens.ttl import initial_lifetime
from sdk.errors import PermissionDeniedError

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["IdentityLink", "LoginCompleter", "PolicySet", "sanitise_policies"]


class PolicySet(Protocol):
    identity_policies: list[str]
    external_namespace_policies: dict[str, list[str]]


class IdentityLink(Protocol):
    """What the identity subsystem offers logins (declared by its consumer)."""

    async def link_login(self, namespace_id: str, mount: MountEntry, login: Login) -> str:
        """The entity id for this login's alias, creating entity and alias if needed."""
        ...

    async def linked_entity(self, namespace_id: str, mount: MountEntry, login: Login) -> str | None:
        """``link_login``'s answer when it would write nothing, else None."""
        ...

    async def policies_for(self, entity_id: str, namespace_id: str) -> PolicySet: ...

    async def is_disabled(self, entity_id: str, namespace_id: str) -> bool: ...

    async def template_values(self, entity_id: str, namespace_id: str) -> dict[str, str]: ...

    def unregister(self, namespace_id: str) -> None: ...


def sanitise_policies(policies: list[str], no_default: bool) -> list[str]:
    chosen = {p.strip().lower() for p in policies if p.strip()}
    if no_default:
        chosen.discard("default")
    elif "root" not in chosen:
        chosen.add("default")
    return sorted(chosen)


class LoginCompleter:
    def __init__(self, core: Core) -> None:
        self._core = core

    async def complete(self, response: Response, request: Request, mount: MountEntry) -> Response:
        login = response.login
        assert login is not None
        settings: TokenSettings = (
            login.token if isinstance(login.token, TokenSettings) else TokenSettings()
        )
        if not settings.allows_address(request.remote_addr):
            raise PermissionDeniedError("login is not allowed from this address")
        core = self._core
        token_policies = sanitise_policies(
            [*login.policies, *settings.policies], settings.no_default_policy
        )
        namespace_id = mount.namespace_id
        entity_id, identity_policies, external = "", [], {}
        if core.identity is not None:
            entity_id = await self._link(namespace_id, mount, login)
            if entity_id and await core.identity.is_disabled(entity_id, namespace_id):
                raise PermissionDeniedError("the entity of this login is disabled")
            found = await core.identity.policies_for(entity_id, namespace_id)
            identity_policies, external = found.identity_policies, found.external_namespace_policies
        now = time.time()
        default_ttl = int(mount.config.get("default_lease_ttl") or core.settings.default_lease_ttl)
        max_ttl = int(mount.config.get("max_lease_ttl") or core.settings.max_lease_ttl)
        if settings.max_ttl:
            max_ttl = min(max_ttl, settings.max_ttl)
        lifetime = initial_lifetime(
            now=now,
            ttl=settings.ttl,
            period=settings.period,
            explicit_max_ttl=settings.explicit_max_ttl,
            root_policy=False,
            default_ttl=min(default_ttl, max_ttl),
            max_ttl=max_ttl,
        )
        token_type = issued_token_type(
            str(mount.config.get("token_type", "default-service")), settings.type
        )
        display = (
            f"{mount.path.rstrip('/').replace('/', '-')}-{login.display_name or login.alias_name}"
        )
        entry = TokenEntry(
            key="",
            accessor="",
            policies=token_policies,
            display_name=display,
            creation_time=now,
            path=f"{mount.route_path}login/{login.alias_name}",
            meta=dict(login.metadata),
            num_uses=settings.num_uses,
            creation_ttl=lifetime.ttl,
            expire_time=lifetime.expire_time,
            explicit_max_ttl=settings.explicit_max_ttl,
            period=settings.period,
            renewable=token_type == "service",
            type=token_type,
            entity_id=entity_id,
            bound_cidrs=list(settings.bound_cidrs),
            namespace_id=namespace_id,
            max_ttl=max_ttl,
            internal=dict(login.internal_data),
        )
        if entry.type == "batch":
            # Not renewable, and its record travels inside the token: no internal data.
            entry = replace(entry, num_uses=0, period=0, internal={})
            client_token = await core.tokens.batch.encode(entry)
        else:
            client_token, entry = await core.tokens.store_new(entry)
        auth = Auth(
            client_token=client_token,
            accessor=entry.accessor,
            policies=sorted({*token_policies, *identity_policies}),
            token_policies=token_policies,
            identity_policies=identity_policies,
            external_namespace_policies=external,
            metadata=dict(login.metadata),
            display_name=display,
            lease_duration=lifetime.ttl,
            renewable=entry.renewable,
            entity_id=entity_id,
            token_type=entry.type,
            orphan=True,
            num_uses=entry.num_uses,
        )
        return replace(
            response, login=None, auth=auth, warnings=[*response.warnings, *lifetime.warnings]
        )

    async def _link(self, namespace_id: str, mount: MountEntry, login: Login) -> str:
        """The login's entity id. Entities and aliases are replicated data: on a
        performance secondary one that needs a write is linked by the primary and
        arrives here by the stream before this returns (a current one is read
        here, so logins go on while the primary is away). A ``local`` auth mount
        is unknown to the primary: its logins link here."""
        core = self._core
        assert core.identity is not None
        if core.replication.is_perf_secondary and not mount.local:
            found = await core.identity.linked_entity(namespace_id, mount, login)
            if found is not None:
                return found
            return await core.replication.link_login(namespace_id, mount.accessor, login)
        return await core.identity.link_login(namespace_id, mount, login)
