"""The namespace registry, kept in the root namespace's barrier at ``sys/namespaces/``.

Resolution joins the ``X-Service-Namespace`` header with the request path and
picks the longest existing namespace prefix, so a header of ``ns1/`` with a
path of ``ns2/secret/foo`` is the same request as ``ns1/ns2/secret/foo``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from node.barrier.view import BarrierView
from node.base62 import random_base62
from node.namespaces.model import ROOT, Namespace
from sdk.errors import InvalidRequestError, RevisionMismatchError, UnsupportedPathError
from sdk.physical import Put

__all__ = ["RESERVED_NAMES", "NamespaceStore", "validate_name"]

#: Names the reference refuses: they would shadow system paths.
RESERVED_NAMES = frozenset({"root", "sys", "audit", "auth", "cubbyhole", "identity"})
_NAME = re.compile(r"[A-Za-z0-9_.\-]+")


def validate_name(name: str) -> str:
    name = name.strip().strip("/")
    if not name:
        raise InvalidRequestError("namespace name must not be empty")
    if "/" in name:
        raise InvalidRequestError(
            f"namespace name {name!r} must be a single path segment; create nested namespaces "
            "from inside their parent"
        )
    if not _NAME.fullmatch(name) or name in (".", ".."):
        raise InvalidRequestError(
            f"invalid namespace name {name!r}: use letters, digits, '_', '-' and '.'"
        )
    if name.lower() in RESERVED_NAMES:
        raise InvalidRequestError(f"{name!r} is a reserved name and cannot be a namespace")
    return name


class NamespaceStore:
    """All namespaces of the cluster, loaded at unseal and kept in memory."""

    def __init__(self, view: BarrierView) -> None:
        self._view = view
        self._by_path: dict[str, Namespace] = {"": ROOT}
        self._by_id: dict[str, Namespace] = {ROOT.id: ROOT}

    async def load(self) -> None:
        self.clear()
        for key in await self._view.list(""):
            raw: dict[str, Any] | None = await self._view.get_json(key)
            if raw:
                self._remember(
                    Namespace(raw["id"], raw["path"], dict(raw.get("custom_metadata") or {}))
                )

    def clear(self) -> None:
        self._by_path = {"": ROOT}
        self._by_id = {ROOT.id: ROOT}

    def _remember(self, namespace: Namespace) -> None:
        self._by_path[namespace.path] = namespace
        self._by_id[namespace.id] = namespace

    # -- lookups (NamespaceTree) ----------------------------------------------------

    def all(self) -> list[Namespace]:
        """Every namespace, parents before children."""
        return sorted(self._by_path.values(), key=lambda ns: (ns.path.count("/"), ns.path))

    def by_id(self, namespace_id: str) -> Namespace | None:
        return self._by_id.get(namespace_id)

    def by_path(self, path: str) -> Namespace | None:
        return self._by_path.get(normalise_path(path))

    def ancestors(self, namespace_id: str) -> list[Namespace]:
        namespace = self._by_id.get(namespace_id)
        if namespace is None:
            return []
        return [ns for ns in self.all() if ns.contains(namespace)]

    def children(self, parent: Namespace) -> list[Namespace]:
        depth = parent.path.count("/") + 1
        return [
            ns
            for ns in self._by_path.values()
            if ns.path.startswith(parent.path) and ns.path.count("/") == depth and ns.path
        ]

    def descendants(self, parent: Namespace) -> list[Namespace]:
        return [ns for ns in self.all() if parent.contains(ns) and ns.id != parent.id]

    def resolve(self, header: str, path: str) -> tuple[Namespace, str]:
        """The namespace a request addresses, and its path relative to it."""
        base = normalise_path(header)
        if base not in self._by_path:
            raise UnsupportedPathError(f"namespace not found: {header.strip('/')!r}")
        full = base + path.lstrip("/")
        best = self._by_path[base]
        probe = full if full.endswith("/") else full + "/"
        for candidate_path, candidate in self._by_path.items():
            if len(candidate_path) > len(best.path) and probe.startswith(candidate_path):
                best = candidate
        return best, full[len(best.path) :]

    # -- changes ----------------------------------------------------------------------

    async def create(
        self, parent: Namespace, name: str, custom_metadata: dict[str, str]
    ) -> Namespace:
        name = validate_name(name)
        path = f"{parent.path}{name}/"
        if path in self._by_path:
            raise InvalidRequestError(f"namespace {path.rstrip('/')!r} already exists")
        namespace = Namespace(random_base62(5), path, custom_metadata)
        try:
            await self._view.commit([Put(namespace.id, _encode(namespace), expect=0)])
        except RevisionMismatchError as exc:
            raise InvalidRequestError("namespace id collision; retry the request") from exc
        self._remember(namespace)
        return namespace

    async def update_metadata(
        self, namespace: Namespace, custom_metadata: dict[str, str]
    ) -> Namespace:
        updated = Namespace(namespace.id, namespace.path, custom_metadata)
        await self._view.put(namespace.id, _encode(updated))
        self._remember(updated)
        return updated

    async def forget(self, namespace: Namespace) -> None:
        await self._view.delete(namespace.id)
        self._by_path.pop(namespace.path, None)
        self._by_id.pop(namespace.id, None)


def normalise_path(path: str) -> str:
    """Header or path form ("root", "", "ns1", "/ns1/") to the stored form ("", "ns1/")."""
    path = path.strip().strip("/")
    if path in ("", "root"):
        return ""
    return path + "/"


def _encode(namespace: Namespace) -> bytes:
    return json.dumps(
        {"id": namespace.id, "path": namespace.path, "custom_metadata": namespace.custom_metadata}
    ).encode()
