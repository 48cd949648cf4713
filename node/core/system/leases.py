"""``sys/leases/*``: the leases of tokens, as the reference names and serves them.

Coffer's only leases are tokens' (no engine issues dynamic secrets). A service
token with a TTL has the lease id ``<creation path>/<token key>``, e.g.
``auth/userpass/login/alice/<key>``, where the key is the salted hash the
token is stored under (never the token itself); a non-expiring token or a batch
token has none. Leases are seen only from the namespace their token belongs
to, with ids relative to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from node.framework import Field, FieldData, FieldType, Path
from node.logical.request import Operation, Request
from node.logical.response import Response
from node.namespaces.model import ROOT, Namespace
from node.tokens.entry import TokenEntry, rfc3339
from sdk.errors import InvalidRequestError, UnsupportedPathError

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["LeasePaths", "lease_id"]

TOKEN_RENEW_REFUSED = "tokens cannot be renewed through this endpoint"


def lease_id(entry: TokenEntry, namespace: Namespace = ROOT) -> str:
    """The lease id of a token, relative to ``namespace`` ("" when it has no lease)."""
    if entry.type != "service" or not entry.expire_time or not entry.key:
        return ""
    return f"{entry.path.removeprefix(namespace.path).rstrip('/')}/{entry.key}"


def _lookup_data(entry: TokenEntry, lease: str) -> dict[str, Any]:
    return {
        "id": lease,
        "issue_time": rfc3339(entry.creation_time),
        "expire_time": rfc3339(entry.expire_time) if entry.expire_time else None,
        "last_renewal": rfc3339(entry.last_renewal_time) if entry.last_renewal_time else None,
        "renewable": entry.renewable,
        "ttl": entry.remaining_ttl(),
    }


_LEASE = {"lease_id": Field(FieldType.STRING, "The lease id.")}
_URL_LEASE = {"url_lease_id": Field(FieldType.STRING, "The lease id, in the path.")}
_INCREMENT = {"increment": Field(FieldType.DURATION, "Seconds to extend the lease by.", 0)}
_SYNC = {"sync": Field(FieldType.BOOL, "Revoke before answering (always so here).", True)}
_PREFIX = {"prefix": Field(FieldType.STRING, "The lease id prefix.")}
_RENEW = "Renew a lease (tokens are renewed under auth/token/ instead)."
_REVOKE = "Revoke a lease: the token and its children."


class LeasePaths:
    """Leases of one namespace's tokens."""

    def __init__(self, core: Core, namespace: Namespace = ROOT) -> None:
        self._core = core
        self._namespace = namespace

    def paths(self) -> list[Path]:
        paths = [
            Path(
                "leases/lookup",
                {Operation.UPDATE: self._lookup},
                _LEASE,
                "Look up a lease: issue and expiry times, TTL, renewable.",
            ),
            Path(
                r"leases/lookup/(?P<prefix>.*)",
                {Operation.LIST: self._list},
                _PREFIX,
                "List lease ids under a prefix.",
                sudo=True,
            ),
        ]
        # The reference serves renew and revoke under ``sys/leases/`` and at the older ``sys/``.
        for base in ("leases/", ""):
            paths += [
                Path(f"{base}renew", {Operation.UPDATE: self._renew}, _LEASE | _INCREMENT, _RENEW),
                Path(
                    rf"{base}renew/(?P<url_lease_id>.+)",
                    {Operation.UPDATE: self._renew},
                    _LEASE | _URL_LEASE | _INCREMENT,
                    _RENEW,
                ),
                Path(f"{base}revoke", {Operation.UPDATE: self._revoke}, _LEASE | _SYNC, _REVOKE),
                Path(
                    rf"{base}revoke/(?P<url_lease_id>.+)",
                    {Operation.UPDATE: self._revoke},
                    _LEASE | _URL_LEASE | _SYNC,
                    _REVOKE,
                ),
                Path(
                    rf"{base}revoke-prefix/(?P<prefix>.+)",
                    {Operation.UPDATE: self._revoke_prefix},
                    _PREFIX | _SYNC,
                    "Revoke every lease under a prefix, e.g. all tokens of an auth mount.",
                    sudo=True,
                ),
                Path(
                    rf"{base}revoke-force/(?P<prefix>.+)",
                    {Operation.UPDATE: self._revoke_prefix},
                    _PREFIX,
                    "Revoke every lease under a prefix, ignoring backend errors.",
                    sudo=True,
                ),
            ]
        return paths

    async def _find(self, lease: str) -> TokenEntry | None:
        """The token of a lease id, if it exists, is live and belongs here."""
        _, _, key = lease.strip().rpartition("/")
        # Keys are hex HMACs: anything else never reaches storage as a key.
        if not (key.isascii() and key.isalnum()):
            return None
        entry = await self._core.tokens.get_by_key(key)
        if entry is None or entry.expired() or entry.namespace_id != self._namespace.id:
            return None
        return entry if lease_id(entry, self._namespace) == lease.strip() else None

    async def _leases_under(self, prefix: str) -> list[tuple[str, TokenEntry]]:
        found = []
        for entry in await self._core.tokens.all_entries():
            if entry.namespace_id != self._namespace.id or entry.expired():
                continue
            lease = lease_id(entry, self._namespace)
            if lease and lease.startswith(prefix):
                found.append((lease, entry))
        return found

    async def _lookup(self, request: Request, data: FieldData) -> Response:
        lease = _given_lease(data)
        entry = await self._find(lease)
        if entry is None:
            raise InvalidRequestError("invalid lease")
        return Response(data=_lookup_data(entry, lease))

    async def _list(self, request: Request, data: FieldData) -> Response:
        prefix = str(data.get("prefix") or "")
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        keys: set[str] = set()
        for lease, _ in await self._leases_under(prefix):
            rest = lease[len(prefix) :]
            head, sep, _ = rest.partition("/")
            keys.add(head + sep)
        if not keys:
            raise UnsupportedPathError()
        return Response(data={"keys": sorted(keys)})

    async def _renew(self, request: Request, data: FieldData) -> Response:
        lease = _given_lease(data)
        if await self._find(lease) is None:
            raise InvalidRequestError("lease not found")
        raise InvalidRequestError(TOKEN_RENEW_REFUSED)

    async def _revoke(self, request: Request, data: FieldData) -> None:
        entry = await self._find(_given_lease(data))
        if entry is not None:
            await self._core.tokens.revoke_tree(entry)

    async def _revoke_prefix(self, request: Request, data: FieldData) -> None:
        prefix = str(data.get("prefix") or "").strip().lstrip("/")
        if not prefix:
            raise InvalidRequestError("prefix must be specified")
        if not prefix.endswith("/"):
            prefix += "/"
        for _, entry in await self._leases_under(prefix):
            # A parent revoked earlier in the loop takes its children with it.
            current = await self._core.tokens.get_by_key(entry.key)
            if current is not None:
                await self._core.tokens.revoke_tree(current)


def _given_lease(data: FieldData) -> str:
    url = data.get("url_lease_id") if data.given("url_lease_id") else ""
    lease = str(url or data.get("lease_id") or "").strip()
    if not lease:
        raise InvalidRequestError("lease_id must be specified")
    return lease
