"""Policy values and the compiled path patterns the ACL matches against.

Parsing produces ``Policy``/``PathRule`` values; the ACL compiles each
pattern once into a ``Pattern`` whose ``priority`` encodes the reference's
precedence, so matching is "first hit in a pre-sorted list".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = [
    "CAPABILITIES",
    "DENY",
    "LEGACY_POLICIES",
    "ROOT",
    "SUDO",
    "ParamValues",
    "PathRule",
    "Pattern",
    "Policy",
    "compile_pattern",
    "freeze_params",
    "is_exact",
]

DENY = "deny"
SUDO = "sudo"
ROOT = "root"

#: Capabilities a policy may grant (``root`` only ever appears in results).
CAPABILITIES = frozenset({"create", "read", "update", "patch", "delete", "list", SUDO, DENY})

_WRITE = ("create", "read", "update", "delete", "list")
#: Pre-capabilities ``policy = "..."`` values (Vault's legacy mapping; no patch).
LEGACY_POLICIES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "deny": (DENY,),
        "read": ("read", "list"),
        "write": _WRITE,
        "sudo": (*_WRITE, SUDO),
    }
)

#: Parameter name (lower-case) -> allowed/denied values; an empty tuple means any value.
ParamValues = Mapping[str, tuple[Any, ...]]

_EMPTY: ParamValues = MappingProxyType({})


def freeze_params(params: Mapping[str, tuple[Any, ...]] | None) -> ParamValues:
    """Read-only view so a shared rule cannot be altered by one request."""
    return MappingProxyType(dict(params)) if params else _EMPTY


@dataclass(frozen=True, slots=True)
class PathRule:
    """One ``path "<pattern>" {...}`` stanza (or several merged ones).

    ``path`` keeps the trailing ``*`` and has no leading ``/``. A rule whose
    capabilities include ``deny`` carries nothing else. ``templated`` rules
    still contain ``{{...}}`` and are ignored by the ACL until rendered.
    """

    path: str
    capabilities: frozenset[str] = frozenset()
    allowed_parameters: ParamValues = field(default_factory=lambda: _EMPTY)
    denied_parameters: ParamValues = field(default_factory=lambda: _EMPTY)
    required_parameters: tuple[str, ...] = ()
    min_wrapping_ttl: int = 0
    max_wrapping_ttl: int = 0
    templated: bool = False

    @property
    def is_deny(self) -> bool:
        return DENY in self.capabilities


@dataclass(frozen=True, slots=True)
class Policy:
    """A named, parsed policy; ``raw`` is the text exactly as submitted."""

    name: str
    raw: str
    rules: tuple[PathRule, ...] = ()

    @property
    def templated(self) -> bool:
        return any(rule.templated for rule in self.rules)


@dataclass(frozen=True, slots=True)
class Pattern:
    """A compiled non-exact pattern (prefix glob and/or ``+`` segments).

    ``priority`` sorts higher for the rule that should win: a later first
    wildcard, not a prefix glob, fewer ``+``, longer, lexicographically
    greater (the reference's five tie-breakers, reversed).
    """

    path: str
    priority: tuple[int, int, int, int, str]
    lead: str  # literal text before the first wildcard: a cheap pre-filter
    regex: re.Pattern[str] | None = None

    def matches(self, path: str) -> bool:
        if not path.startswith(self.lead):
            return False
        return self.regex is None or self.regex.fullmatch(path) is not None


def is_exact(path: str) -> bool:
    """A pattern with no trailing ``*`` and no ``+`` segment matches one path."""
    return not path.endswith("*") and "+" not in path.split("/")


def compile_pattern(path: str) -> Pattern:
    """Compile a validated non-exact pattern (see ``is_exact``)."""
    is_prefix = path.endswith("*")
    body = path[:-1] if is_prefix else path
    segments = body.split("/")
    if "+" not in segments:
        # Plain prefix glob: its first wildcard is the '*' itself.
        return Pattern(path, (len(body), 0, 0, len(body), body), lead=body)
    first = _first_wildcard(segments)
    wildcards = segments.count("+")
    parts = ["[^/]*" if seg == "+" else re.escape(seg) for seg in segments]
    source = "/".join(parts) + (".*" if is_prefix else "")
    regex = re.compile(source, re.DOTALL)
    priority = (first, 0 if is_prefix else 1, -wildcards, len(body), body)
    return Pattern(path, priority, lead=body[:first], regex=regex)


def _first_wildcard(segments: list[str]) -> int:
    offset = 0
    for seg in segments:
        if seg == "+":
            return offset
        offset += len(seg) + 1
    return offset
