"""Which barrier keys a secondary gets: one decision per key, and the mount-table merge.

Every physical key is in one class (Vault's data classes):

* ``IGNORED`` — never sent: this cluster's Raft bookkeeping (``core/raft/``),
  its replication state (``core/replication/``), a DR secondary's own
  operation tokens (``core/dr-operation-token/``) and its own identity
  (``core/cluster``).
* ``LOCAL`` — DR secondaries only: tokens, accessors and their leases
  (``sys/token/`` but its ``roles/``), and the data of ``local=true`` mounts (cubbyhole included).
* ``TABLE`` — a table of mounts or audit devices; a performance secondary gets
  the primary's non-local, unfiltered entries merged with its own local ones.
* ``REPLICATED`` — everything else, to every secondary unless a paths filter
  keeps the mount or namespace it belongs to off a performance secondary.

The decision needs the mounts and namespaces of the side that classifies
(:class:`MountIndex`): the primary for what it sends, a secondary for what of
its own storage a sync may overwrite or delete.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AUDIT_TABLE",
    "DataClass",
    "Kind",
    "MountIndex",
    "PathsFilter",
    "Verdict",
    "classify",
    "filter_table",
    "merge_table",
    "sends",
]

AUDIT_TABLE = "core/audit"
#: ``core/dr-operation-token/``: a DR secondary's own operation tokens (``node.core.dr_operation``).
#: The primary's performance state, copied for its DR secondaries (never for performance
#: ones: it holds the performance CA's key), so a promoted DR secondary takes over the role.
PERF_MIRROR_KEY = "core/replication/mirror/performance"
_IGNORED_PREFIXES = ("core/raft/", "core/replication/", "core/dr-operation-token/")
_IGNORED_KEYS = frozenset({"core/cluster"})
_TABLE_NAMES = ("core/mounts", "core/auth")
_NAMESPACE_RECORDS = "sys/namespaces/"
#: Token roles are configuration (replicated); the rest of ``sys/token/`` is tokens.
_TOKEN_ROLES = "sys/token/roles/"
#: Mounts every namespace has: never filtered (the secondary would lose its ``sys/``).
_PINNED_ROUTES = ("sys/", "identity/", "auth/token/", "cubbyhole/")


class Kind(enum.StrEnum):
    PERFORMANCE = "performance"
    DR = "dr"


class DataClass(enum.Enum):
    IGNORED = "ignored"
    LOCAL = "local"
    TABLE = "table"
    REPLICATED = "replicated"


@dataclass(frozen=True, slots=True)
class MountInfo:
    route_path: str
    local: bool


@dataclass(frozen=True, slots=True)
class MountIndex:
    """Mounts by storage prefix (``logical/<uuid>/``…) and namespace paths by id."""

    mounts: Mapping[str, MountInfo] = field(default_factory=dict)
    namespaces: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def build(
        cls, mounts: Iterable[tuple[str, str, bool]], namespaces: Iterable[tuple[str, str]]
    ) -> MountIndex:
        """``mounts``: (storage prefix, route path, local); ``namespaces``: (id, path)."""
        return cls(
            {prefix: MountInfo(route, local) for prefix, route, local in mounts},
            dict(namespaces),
        )


@dataclass(frozen=True, slots=True)
class Verdict:
    cls: DataClass
    #: The route path of the mount the key belongs to, or the namespace path ("" none).
    route: str = ""


@dataclass(frozen=True, slots=True)
class PathsFilter:
    """``allow``: only the listed mounts and namespaces; ``deny``: all but them."""

    mode: str
    paths: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.mode not in ("allow", "deny"):
            raise ValueError(f"mode must be allow or deny, not {self.mode!r}")

    def keeps(self, route: str) -> bool:
        """Whether a mount (route path) or namespace (its path) at ``route`` is replicated."""
        if not route:
            return True
        namespace = _pinned_in(route)
        if namespace is not None:  # a namespace's own sys/… goes where the namespace goes
            return self.keeps(namespace) if namespace else True
        under = any(route.startswith(p) for p in self.paths)
        if self.mode == "deny":
            return not under
        # allow: the route is listed (or inside a listed namespace), or a namespace
        # that holds a listed mount (its records must reach the secondary too).
        return under or any(p.startswith(route) for p in self.paths)

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "paths": list(self.paths)}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> PathsFilter:
        return cls(str(raw["mode"]), tuple(str(p) for p in raw["paths"]))


def _pinned_in(route: str) -> str | None:
    """For a namespace's own sys/, identity/, auth/token/ or cubbyhole/ mount, the
    namespace's path ("" for root); None for any other route."""
    for pinned in _PINNED_ROUTES:
        if route.endswith(pinned):
            head = route[: -len(pinned)]
            if head == "" or head.endswith("/"):
                return head
    return None


def _namespace_of(key: str) -> tuple[str, str] | None:
    """(namespace id, rest of the key) for ``namespaces/<id>/…``."""
    if not key.startswith("namespaces/"):
        return None
    namespace_id, sep, rest = key[len("namespaces/") :].partition("/")
    return (namespace_id, rest) if sep and namespace_id else None


def classify(key: str, index: MountIndex) -> Verdict:
    """The data class of ``key``, and the mount or namespace it belongs to."""
    if key == PERF_MIRROR_KEY:
        return Verdict(DataClass.LOCAL)  # to DR secondaries only
    if key in _IGNORED_KEYS or key.startswith(_IGNORED_PREFIXES):
        return Verdict(DataClass.IGNORED)
    if key.startswith("sys/token/") and not key.startswith(_TOKEN_ROLES):
        return Verdict(DataClass.LOCAL)
    if key == AUDIT_TABLE:
        return Verdict(DataClass.TABLE)
    if key in _TABLE_NAMES:
        return Verdict(DataClass.TABLE)
    if key.startswith(_NAMESPACE_RECORDS):
        namespace_id = key[len(_NAMESPACE_RECORDS) :]
        return Verdict(DataClass.REPLICATED, index.namespaces.get(namespace_id, ""))
    namespace_route = ""
    rest = key
    inside = _namespace_of(key)
    if inside is not None:
        namespace_route = index.namespaces.get(inside[0], "")
        rest = inside[1]
        if rest in _TABLE_NAMES:
            return Verdict(DataClass.TABLE, namespace_route)
    head, _, tail = rest.partition("/")
    if head in ("logical", "auth") and tail:
        uuid = tail.partition("/")[0]
        prefix = key[: len(key) - len(rest)] + f"{head}/{uuid}/"
        mount = index.mounts.get(prefix)
        if mount is not None:
            if mount.local:
                return Verdict(DataClass.LOCAL, mount.route_path)
            return Verdict(DataClass.REPLICATED, mount.route_path)
    return Verdict(DataClass.REPLICATED, namespace_route)


def sends(verdict: Verdict, kind: Kind, paths_filter: PathsFilter | None) -> bool:
    """Whether a secondary of ``kind`` (with ``paths_filter``) gets a key so classified."""
    if verdict.cls is DataClass.IGNORED:
        return False
    if kind is Kind.DR:
        return True  # DR takes everything, filters included (the reference ignores them)
    if verdict.cls is DataClass.LOCAL:
        return False
    if paths_filter is not None and verdict.route:
        return paths_filter.keeps(verdict.route)
    return True


def _route_of(entry: Mapping[str, Any], namespace_path: str) -> str:
    path = str(entry.get("path", ""))
    if entry.get("table") == "auth":
        path = f"auth/{path}"
    return str(entry.get("namespace_path", namespace_path)) + path


def filter_table(
    entries: Sequence[Mapping[str, Any]], namespace_path: str, paths_filter: PathsFilter | None
) -> list[Mapping[str, Any]]:
    """The entries of a primary's table a performance secondary gets: no local
    ones, none a paths filter keeps off."""
    kept = []
    for entry in entries:
        if entry.get("local"):
            continue
        if paths_filter is not None and not paths_filter.keeps(_route_of(entry, namespace_path)):
            continue
        kept.append(entry)
    return kept


def merge_table(
    incoming: Sequence[Mapping[str, Any]], mine: Sequence[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """A performance secondary's table: the primary's entries, then its own local
    ones (a local entry whose path the primary now uses gives way)."""
    taken = {str(entry.get("path")) for entry in incoming}
    own = [e for e in mine if e.get("local") and str(e.get("path")) not in taken]
    return [*incoming, *own]
