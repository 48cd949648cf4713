"""The tenant boundary of the token store: which tokens a request in a namespace may name.

Every token operation that names another token (``auth/token/lookup``,
``renew``, ``revoke``, ``revoke-orphan``, the ``*-accessor`` paths, the
accessor listing, ``sys/capabilities`` and ``sys/capabilities-accessor``) goes
through a ``TokenScope``; a token outside it answers exactly as an unknown one,
so a tenant learns nothing about other tenants' tokens.

- By token value: tokens of the request's namespace and of the namespaces below
  it (a parent tenant administers its children, as a parent-namespace token may
  act in a child namespace).
- By accessor, and the accessor listing: tokens of the request's namespace only.
  An accessor is a handle that is shared and logged, never a credential, so it
  is honoured in its own namespace alone (as OpenBao does since
  GHSA-p49j-v9wc-wg57); a parent tenant addresses the child namespace instead.

The namespace suffix of a token or accessor (``node.tokens.ids``) rejects one
from another tenant before any storage read; the stored entry's
``namespace_id`` decides for values without a suffix (root-namespace tokens,
and tokens minted in a namespace before suffixes existed).
"""

from __future__ import annotations

from node.namespaces.model import ROOT_ID
from node.namespaces.store import NamespaceStore
from node.tokens.entry import TokenEntry
from node.tokens.ids import namespace_suffix
from node.tokens.store import TokenStore

__all__ = ["TokenScope"]


class TokenScope:
    """The tokens a request in the namespace ``namespace_id`` may look up, renew or revoke."""

    def __init__(self, store: TokenStore, tree: NamespaceStore, namespace_id: str) -> None:
        self._store = store
        self._tree = tree
        self._namespace_id = namespace_id

    def _admits(self, home_id: str | None, *, below: bool) -> bool:
        here = self._tree.by_id(self._namespace_id)
        home = self._tree.by_id(home_id) if home_id else None
        if here is None or home is None:
            return False
        return here.contains(home) if below else home.id == here.id

    def _suffix_outside(self, value: str, *, below: bool) -> bool:
        """Whether the value's suffix names a namespace outside the scope (no read needed)."""
        suffix = namespace_suffix(value)
        # A suffix naming no namespace proves nothing (a chosen root ID may hold a dot).
        return (
            bool(suffix)
            and self._tree.by_id(suffix) is not None
            and not self._admits(suffix, below=below)
        )

    async def token(self, token_id: str) -> TokenEntry | None:
        """The live entry of a token named by value, or None when unknown or out of scope."""
        if not token_id or self._suffix_outside(token_id, below=True):
            return None
        entry = await self._store.lookup(token_id)
        if entry is None or not self._admits(entry.namespace_id, below=True):
            return None
        return entry

    async def accessor(self, accessor: str) -> TokenEntry | None:
        """The live entry behind an accessor, or None when unknown or out of scope."""
        if not accessor or self._suffix_outside(accessor, below=False):
            return None
        entry = await self._store.lookup_accessor(accessor)
        if entry is None or not self._admits(entry.namespace_id, below=False):
            return None
        return entry

    async def accessors(self) -> list[str]:
        """The accessors of this namespace's tokens.

        Suffixed accessors are sorted by their suffix; one without a suffix is a
        root-namespace token's, unless it predates suffixes, so its entry is read
        whenever other namespaces exist.
        """
        here = self._tree.by_id(self._namespace_id)
        if here is None:
            return []
        others = len(self._tree.all()) > 1
        keys = []
        for accessor in await self._store.list_accessors():
            suffix = namespace_suffix(accessor)
            if suffix and self._tree.by_id(suffix) is not None:
                home: str | None = suffix
            elif not others:
                home = here.id  # only the root namespace exists
            else:
                home = await self._store.accessor_namespace(accessor) or ROOT_ID
            if home == here.id:
                keys.append(accessor)
        return keys
