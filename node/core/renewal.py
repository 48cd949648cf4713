"""A token renewal's second opinion from the auth method that issued the token.

As in the reference, renewing a login's token asks its method again: the
method re-checks the user (a user disabled or removed at the provider gets
the renewal refused) and answers with the policies and token settings that
hold now. The token then carries the refreshed policies, and the renewal uses
the method's current ``token_ttl`` and ``token_max_ttl``. Methods that do not
implement :class:`RenewsLogins` (and ``auth/token/`` itself) are not asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from node.auth.common.token_settings import TokenSettings
from node.core.login import sanitise_policies
from node.logical.request import Request
from node.logical.response import Login
from node.tokens.entry import TokenEntry

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["Renewal", "RenewsLogins", "renew_with_method"]


@runtime_checkable
class RenewsLogins(Protocol):
    """An auth method that re-checks a login when its token is renewed."""

    async def renew_login(self, entry: TokenEntry, request: Request) -> Login:
        """The login as it stands now; raises to refuse the renewal."""
        ...


@dataclass(frozen=True, slots=True)
class Renewal:
    entry: TokenEntry
    #: The method's ``token_ttl`` now (0: renew by the token's own TTL).
    ttl: int = 0


async def renew_with_method(core: Core, entry: TokenEntry, request: Request) -> Renewal:
    route = core.router.match(entry.path)
    if (
        route is None
        or route.mount.table != "auth"
        or route.mount.type == "token"
        or route.mount.namespace_id != entry.namespace_id
        or not isinstance(route.backend, RenewsLogins)
    ):
        return Renewal(entry)
    login = await route.backend.renew_login(entry, request)
    settings = login.token if isinstance(login.token, TokenSettings) else TokenSettings()
    max_ttl = int(route.mount.config.get("max_lease_ttl") or core.settings.max_lease_ttl)
    if settings.max_ttl:
        max_ttl = min(max_ttl, settings.max_ttl)
    refreshed = entry.with_changes(
        policies=sanitise_policies(
            [*login.policies, *settings.policies], settings.no_default_policy
        ),
        meta={**entry.meta, **login.metadata},
        max_ttl=max_ttl,
    )
    return Renewal(refreshed, settings.ttl)
