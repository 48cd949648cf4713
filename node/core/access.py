"""The ACL a token is judged by, across namespaces and identity.

Policies are relative to the namespace they live in. To judge one request,
every policy that applies (the token's, its entity's and groups', and those
of groups in other namespaces) is rebased onto absolute paths by prefixing
its namespace's path, and the merged ACL is checked against the request's
absolute path. The common case — a root-namespace token without identity —
goes straight to the root policy store's own cache.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from node.namespaces.model import Namespace
from node.policy.acl import ACL
from node.policy.model import Policy
from node.tokens.entry import TokenEntry
from sdk.errors import PermissionDeniedError

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["AccessControl", "rebase"]

_CACHE_SIZE = 1024
#: An ACL is never mutated once built (``node.policy.acl``): root tokens share one
#: instead of building a policy and an ACL per request.
_ROOT_ACL = ACL.root()


def rebase(policy: Policy, prefix: str) -> Policy:
    """The same policy with every rule path under ``prefix`` (a namespace path)."""
    if not prefix:
        return policy
    return replace(
        policy, rules=tuple(replace(rule, path=prefix + rule.path) for rule in policy.rules)
    )


class AccessControl:
    def __init__(self, core: Core) -> None:
        self._core = core
        self._cache: dict[Any, ACL] = {}

    def clear(self) -> None:
        self._cache.clear()

    async def policy_sets(self, entry: TokenEntry) -> list[tuple[Namespace, list[str]]]:
        """(namespace, policy names) pairs that apply to a token, identity included."""
        core = self._core
        namespace = core.namespaces.by_id(entry.namespace_id)
        if namespace is None:
            raise PermissionDeniedError()
        names = list(entry.policies)
        sets: list[tuple[Namespace, list[str]]] = []
        if entry.entity_id and core.identity is not None:
            found = await core.identity.policies_for(entry.entity_id, entry.namespace_id)
            names += found.identity_policies
            for other_id, other_names in sorted(found.external_namespace_policies.items()):
                other = core.namespaces.by_id(other_id)
                if other is not None and other_names:
                    sets.append((other, list(other_names)))
        return [(namespace, names), *sets]

    async def _identity_values(self, entry: TokenEntry) -> dict[str, str] | None:
        identity = self._core.identity
        if identity is None or not entry.entity_id:
            return None
        return await identity.template_values(entry.entity_id, entry.namespace_id)

    async def acl_for(self, entry: TokenEntry) -> ACL:
        if "root" in entry.policies:
            return _ROOT_ACL
        core = self._core
        sets = await self.policy_sets(entry)
        values = await self._identity_values(entry)
        if len(sets) == 1 and sets[0][0].is_root:
            return await core.policy_store(sets[0][0].id).acl(sets[0][1], values)
        key = (
            tuple(
                (ns.id, tuple(sorted(set(names))), core.policy_store(ns.id).generation)
                for ns, names in sets
            ),
            frozenset(values.items()) if values is not None else None,
        )
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        policies: list[Policy] = []
        for namespace, names in sets:
            rendered = await core.policy_store(namespace.id).rendered(names, values)
            policies.extend(rebase(policy, namespace.path) for policy in rendered)
        acl = ACL(policies)
        if len(self._cache) >= _CACHE_SIZE:
            self._cache.clear()
        self._cache[key] = acl
        return acl
