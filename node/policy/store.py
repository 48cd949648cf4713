"""Persistence of ACL policies and a cache of parsed policies and built ACLs.

Stored as ``policy/<name>`` -> ``{"name", "policy"}`` (the raw text) in the
view it is given; parsing happens on write (so bad text is a 400) and again,
once, on first load. Caches are dropped on ``set``/``delete`` and by
``invalidate`` (for changes applied by another node); a generation counter
keeps a load that raced an invalidation from re-caching stale data.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Iterable, Mapping

from node.barrier.view import BarrierView
from node.policy.acl import ACL
from node.policy.builtin import (
    DEFAULT,
    DEFAULT_POLICY_NAME,
    DEFAULT_POLICY_TEXT,
    IMMUTABLE_POLICIES,
    RESPONSE_WRAPPING,
    RESPONSE_WRAPPING_POLICY_NAME,
    ROOT,
    ROOT_POLICY_NAME,
)
from node.policy.model import Policy
from node.policy.parser import parse_policy
from node.policy.templates import render_templates
from sdk.errors import InvalidRequestError

__all__ = ["PolicyStore", "normalize_name"]

_PREFIX = "policy/"
_BUILTIN = {ROOT_POLICY_NAME: ROOT, RESPONSE_WRAPPING_POLICY_NAME: RESPONSE_WRAPPING}
_ACL_CACHE_SIZE = 1024
_ROOT_ACL = ACL.root()

#: Policy text longer than this is parsed in a worker thread: the HCL parser is pure
#: Python (a 10,000-line policy took 1.8 s), and a thread gives the event loop the
#: GIL back every switch interval while it runs.
OFF_LOOP_CHARS = 16 * 1024


async def _parse(name: str, text: str) -> Policy:
    if len(text) <= OFF_LOOP_CHARS:
        return parse_policy(name, text)
    return await asyncio.to_thread(parse_policy, name, text)


_AclKey = tuple[tuple[str, ...], frozenset[tuple[str, str]] | None]


def normalize_name(name: str) -> str:
    """Policy names are trimmed and lower-cased; refuse ones that break storage keys."""
    normalized = name.strip().lower()
    if not normalized:
        raise InvalidRequestError("policy name must not be empty")
    if normalized.startswith("/") or normalized.endswith("/"):
        raise InvalidRequestError(f'invalid policy name "{name}": must not start or end with "/"')
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in normalized):
        raise InvalidRequestError("invalid policy name: contains a control character")
    if any(part in ("", "..") for part in normalized.split("/")):
        raise InvalidRequestError(f'invalid policy name "{name}": empty or ".." segment')
    return normalized


class PolicyStore:
    """CRUD for ACL policies plus ``acl(names)`` for the request pipeline."""

    def __init__(self, view: BarrierView) -> None:
        self._view = view
        self._policies: dict[str, Policy | None] = {}
        self._acls: dict[_AclKey, ACL] = {}
        self._generation = 0

    async def get(self, name: str) -> Policy | None:
        """The named policy, a built-in, or ``None``.

        ``default`` falls back to the built-in text until ``ensure_default``
        has stored it, so tokens are never left without it.
        """
        name = normalize_name(name)
        builtin = _BUILTIN.get(name)
        if builtin is not None:
            return builtin
        if name in self._policies:
            return self._policies[name]
        generation = self._generation
        entry = await self._view.get_json(_PREFIX + name)
        policy = await _parse(name, entry["policy"]) if entry is not None else None
        if policy is None and name == DEFAULT_POLICY_NAME:
            policy = DEFAULT
        if generation == self._generation:
            self._policies[name] = policy
        return policy

    async def set(self, name: str, text: str) -> Policy:
        """Parse and store; 400 for bad text or an immutable name."""
        name = normalize_name(name)
        if name in IMMUTABLE_POLICIES:
            raise InvalidRequestError(f'cannot update "{name}" policy')
        policy = await _parse(name, text)
        await self._view.put_json(_PREFIX + name, {"name": name, "policy": text})
        self.invalidate(name)
        self._policies[name] = policy
        return policy

    async def delete(self, name: str) -> None:
        """Remove a policy (absent is fine); built-ins and ``default`` are refused."""
        name = normalize_name(name)
        if name in IMMUTABLE_POLICIES:
            raise InvalidRequestError(f'cannot delete "{name}" policy')
        if name == DEFAULT_POLICY_NAME:
            raise InvalidRequestError("cannot delete default policy")
        await self._view.delete(_PREFIX + name)
        self.invalidate(name)

    async def list(self, *, include_root: bool = False) -> builtins.list[str]:
        """Sorted stored names; ``include_root`` adds ``root`` as ``sys/policy`` shows it."""
        keys = await self._view.list_recursive(_PREFIX)
        names = {key[len(_PREFIX) :] for key in keys} - {RESPONSE_WRAPPING_POLICY_NAME}
        if include_root:
            names.add(ROOT_POLICY_NAME)
        return sorted(names)

    async def ensure_default(self) -> bool:
        """Store the built-in ``default`` policy unless one exists; True if written."""
        if await self._view.get(_PREFIX + DEFAULT_POLICY_NAME) is not None:
            return False
        await self.set(DEFAULT_POLICY_NAME, DEFAULT_POLICY_TEXT)
        return True

    async def acl(self, names: Iterable[str], identity: Mapping[str, str] | None = None) -> ACL:
        """The ACL for a token's policies; unknown names are ignored.

        ``identity`` (selector -> value, see ``render_templates``) resolves
        templated rules; without it they are dropped. Results are cached.
        """
        wanted = tuple(sorted({normalize_name(name) for name in names}))
        if ROOT_POLICY_NAME in wanted:
            return _ROOT_ACL
        key: _AclKey = (wanted, frozenset(identity.items()) if identity is not None else None)
        cached = self._acls.get(key)
        if cached is not None:
            return cached
        generation = self._generation
        policies = [policy for name in wanted if (policy := await self.get(name)) is not None]
        acl = ACL([render_templates(policy, identity) for policy in policies])
        if generation == self._generation:
            if len(self._acls) >= _ACL_CACHE_SIZE:
                self._acls.clear()
            self._acls[key] = acl
        return acl

    @property
    def generation(self) -> int:
        """Bumped on every change; callers caching derived ACLs compare it."""
        return self._generation

    async def rendered(
        self, names: Iterable[str], identity: Mapping[str, str] | None = None
    ) -> builtins.list[Policy]:
        """The named policies with identity templates resolved (unknown names skipped)."""
        wanted = sorted({normalize_name(name) for name in names})
        policies = [policy for name in wanted if (policy := await self.get(name)) is not None]
        return [render_templates(policy, identity) for policy in policies]

    def invalidate(self, name: str | None = None) -> None:
        """Forget cached state for ``name`` (``None``: everything); ACLs always go."""
        self._generation += 1
        self._acls.clear()
        if name is None:
            self._policies.clear()
        else:
            self._policies.pop(name.strip().lower(), None)
