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

from node.errors import InvalidRequestError, UnsupportedPathError
from node.framework import Field, FieldData, FieldType, Path
from node.logical.request import Operation, Request
from node.logical.response import Response
from node.namespaces.model import ROOT, Namespace
from node.tokens.entry import TokenEntry, rfc3339

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["lease_id", "lease_paths"]

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


def lease_paths(core: Core, namespace: Namespace = ROOT) -> list[Path]:
    async def find(lease: str) -> TokenEntry | None:
        """The token of a lease id, if it exists, is live and belongs here."""
        _, _, key = lease.strip().rpartition("/")
        # Keys are hex HMACs: anything else never reaches storage as a key.
        if not (key.isascii() and key.isalnum()):
            return None
        entry = await core.tokens.get_by_key(key)
        if entry is None or entry.expired() or entry.namespace_id != namespace.id:
            return None
        return entry if lease_id(entry, namespace) == lease.strip() else None

    async def leases_under(prefix: str) -> list[tuple[str, TokenEntry]]:
        found = []
        for entry in await core.tokens.all_entries():
            if entry.namespace_id != namespace.id or entry.expired():
                continue
            lease = lease_id(entry, namespace)
            if lease and lease.startswith(prefix):
                found.append((lease, entry))
        return found

    def given_lease(data: FieldData) -> str:
        url = data.get("url_lease_id") if data.given("url_lease_id") else ""
        lease = str(url or data.get("lease_id") or "").strip()
        if not lease:
            raise InvalidRequestError("lease_id must be specified")
        return lease

    async def lookup(request: Request, data: FieldData) -> Response:
        lease = given_lease(data)
        entry = await find(lease)
        if entry is None:
            raise InvalidRequestError("invalid lease")
        return Response(data=_lookup_data(entry, lease))

    async def list_leases(request: Request, data: FieldData) -> Response:
        prefix = str(data.get("prefix") or "")
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        keys: set[str] = set()
        for lease, _ in await leases_under(prefix):
            rest = lease[len(prefix) :]
            head, sep, _ = rest.partition("/")
            keys.add(head + sep)
        if not keys:
            raise UnsupportedPathError()
        return Response(data={"keys": sorted(keys)})

    async def renew(request: Request, data: FieldData) -> Response:
        lease = given_lease(data)
        if await find(lease) is None:
            raise InvalidRequestError("lease not found")
        raise InvalidRequestError(TOKEN_RENEW_REFUSED)

    async def revoke(request: Request, data: FieldData) -> None:
        entry = await find(given_lease(data))
        if entry is not None:
            await core.tokens.revoke_tree(entry)

    async def revoke_prefix(request: Request, data: FieldData) -> None:
        prefix = str(data.get("prefix") or "").strip().lstrip("/")
        if not prefix:
            raise InvalidRequestError("prefix must be specified")
        if not prefix.endswith("/"):
            prefix += "/"
        for _, entry in await leases_under(prefix):
            # A parent revoked earlier in the loop takes its children with it.
            current = await core.tokens.get_by_key(entry.key)
            if current is not None:
                await core.tokens.revoke_tree(current)

    lease_field = {"lease_id": Field(FieldType.STRING, "The lease id.")}
    url_lease = {"url_lease_id": Field(FieldType.STRING, "The lease id, in the path.")}
    increment = {"increment": Field(FieldType.DURATION, "Seconds to extend the lease by.", 0)}
    sync = {"sync": Field(FieldType.BOOL, "Revoke before answering (always so here).", True)}
    prefix = {"prefix": Field(FieldType.STRING, "The lease id prefix.")}
    paths: list[Path] = [
        Path(
            "leases/lookup",
            {Operation.UPDATE: lookup},
            lease_field,
            "Look up a lease: issue and expiry times, TTL, renewable.",
        ),
        Path(
            r"leases/lookup/(?P<prefix>.*)",
            {Operation.LIST: list_leases},
            prefix,
            "List lease ids under a prefix.",
            sudo=True,
        ),
    ]
    for base in ("leases/", ""):
        paths += [
            Path(
                f"{base}renew",
                {Operation.UPDATE: renew},
                {**lease_field, **increment},
                "Renew a lease (tokens are renewed under auth/token/ instead).",
            ),
            Path(
                rf"{base}renew/(?P<url_lease_id>.+)",
                {Operation.UPDATE: renew},
                {**lease_field, **url_lease, **increment},
                "Renew a lease (tokens are renewed under auth/token/ instead).",
            ),
            Path(
                f"{base}revoke",
                {Operation.UPDATE: revoke},
                {**lease_field, **sync},
                "Revoke a lease: the token and its children.",
            ),
            Path(
                rf"{base}revoke/(?P<url_lease_id>.+)",
                {Operation.UPDATE: revoke},
                {**lease_field, **url_lease, **sync},
                "Revoke a lease: the token and its children.",
            ),
            Path(
                rf"{base}revoke-prefix/(?P<prefix>.+)",
                {Operation.UPDATE: revoke_prefix},
                {**prefix, **sync},
                "Revoke every lease under a prefix, e.g. all tokens of an auth mount.",
                sudo=True,
            ),
            Path(
                rf"{base}revoke-force/(?P<prefix>.+)",
                {Operation.UPDATE: revoke_prefix},
                prefix,
                "Revoke every lease under a prefix, ignoring backend errors.",
                sudo=True,
            ),
        ]
    return paths
