"""The ACL: a token's policies merged into one rule set and checked per request.

Built once per set of policies and never mutated afterwards, so one ACL can
be cached and shared by concurrent requests. Exact rules live in a dict;
glob rules are compiled once and kept sorted by precedence, so the first
match is the winning rule (and only the winning rule applies).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from node.policy.model import (
    DENY,
    ROOT,
    SUDO,
    ParamValues,
    PathRule,
    Pattern,
    Policy,
    compile_pattern,
    freeze_params,
    is_exact,
)
from node.policy.params import check_parameters

__all__ = ["ACL", "Decision", "merge_rules"]

# Operation -> capability it needs (renew/revoke/rollback reuse update).
_NEEDS = MappingProxyType(
    {
        "read": "read",
        "list": "list",
        "create": "create",
        "update": "update",
        "patch": "patch",
        "delete": "delete",
        "renew": "update",
        "revoke": "update",
        "rollback": "update",
    }
)
_CHECKS_PARAMETERS = frozenset({"read", "create", "update", "patch"})
_NO_DATA: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Decision:
    """Outcome of ``ACL.allow``.

    ``sudo`` says whether the winning rule grants sudo; the caller enforces
    it on sudo-protected paths. ``reason`` is for logs and audit, not for the
    client (it names policy paths).
    """

    allowed: bool
    sudo: bool
    reason: str
    capabilities: tuple[str, ...]


#: What a root ACL answers to anything (a frozen value: one for every request).
_ROOT_DECISION = Decision(True, True, "root token", (ROOT,))


class ACL:
    """Merged rules of a token's policies; ``root`` in the list allows everything."""

    __slots__ = ("_exact", "_globs", "_is_root")

    def __init__(self, policies: Iterable[Policy]) -> None:
        merged: dict[str, PathRule] = {}
        is_root = False
        for policy in policies:
            is_root = is_root or policy.name == ROOT
            for rule in policy.rules:
                if rule.templated:  # not rendered for this identity: never matches
                    continue
                current = merged.get(rule.path)
                merged[rule.path] = rule if current is None else merge_rules(current, rule)
        self._is_root = is_root
        self._exact = {path: rule for path, rule in merged.items() if is_exact(path)}
        globs = [
            (compile_pattern(path), rule) for path, rule in merged.items() if not is_exact(path)
        ]
        globs.sort(key=lambda entry: entry[0].priority, reverse=True)
        self._globs: tuple[tuple[Pattern, PathRule], ...] = tuple(globs)

    @classmethod
    def root(cls) -> ACL:
        return cls([Policy(name=ROOT, raw="")])

    @property
    def is_root(self) -> bool:
        return self._is_root

    @property
    def rules(self) -> tuple[PathRule, ...]:
        """Merged rules: exact ones, then globs in precedence order (highest first)."""
        return (*self._exact.values(), *(rule for _, rule in self._globs))

    def match(self, path: str, *, is_list: bool = False) -> PathRule | None:
        """The single rule that governs ``path`` (``is_list``: also try without trailing ``/``)."""
        path = path.lstrip("/")
        trimmed = path[:-1] if is_list and path.endswith("/") else None
        rule = self._exact.get(path)
        if rule is None and trimmed is not None:
            rule = self._exact.get(trimmed)
        if rule is None:
            rule = self._first_glob(path)
        if rule is None and trimmed is not None:
            rule = self._first_glob(trimmed)
        return rule

    def _first_glob(self, path: str) -> PathRule | None:
        for pattern, rule in self._globs:
            if pattern.matches(path):
                return rule
        return None

    def capabilities(self, path: str) -> list[str]:
        """Sorted capabilities at ``path``: ``["root"]``, or ``["deny"]`` when none."""
        if self._is_root:
            return [ROOT]
        return list(_granted(self.match(path, is_list=True)))

    def allow(
        self,
        operation: str,
        path: str,
        data: Mapping[str, Any] | None = None,
        wrap_ttl: int = 0,
        is_list: bool = False,
    ) -> Decision:
        """May ``operation`` run on ``path`` with body ``data``?

        ``operation`` is an ``Operation`` value (or renew/revoke/rollback);
        ``wrap_ttl`` is the requested response-wrapping TTL (0 = unwrapped).
        """
        if self._is_root:
            return _ROOT_DECISION
        op = str(operation)
        if op == "help":
            return Decision(True, False, "help is always allowed", ())
        rule = self.match(path, is_list=is_list or op == "list")
        capabilities = _granted(rule)
        if rule is None:
            return Decision(False, False, "no policy rule matches the path", capabilities)
        if rule.is_deny:
            return Decision(False, False, f'denied by rule "{rule.path}"', capabilities)
        sudo = SUDO in rule.capabilities
        needed = _NEEDS.get(op)
        if needed is None:
            return Decision(False, sudo, f'operation "{op}" is not covered by policy', capabilities)
        if needed not in rule.capabilities:
            reason = f'rule "{rule.path}" does not grant "{needed}"'
            return Decision(False, sudo, reason, capabilities)
        problem = _wrapping_problem(rule, wrap_ttl)
        if problem is None and op in _CHECKS_PARAMETERS:
            problem = check_parameters(rule, data or _NO_DATA)
        if problem is not None:
            return Decision(False, sudo, f'rule "{rule.path}": {problem}', capabilities)
        return Decision(True, sudo, f'granted by rule "{rule.path}"', capabilities)


def _granted(rule: PathRule | None) -> tuple[str, ...]:
    if rule is None or rule.is_deny or not rule.capabilities:
        return (DENY,)
    return tuple(sorted(rule.capabilities))


def _wrapping_problem(rule: PathRule, wrap_ttl: int) -> str | None:
    low, high = rule.min_wrapping_ttl, rule.max_wrapping_ttl
    if high and (wrap_ttl <= 0 or wrap_ttl > high):
        return f"response wrapping with a TTL of at most {high}s is required"
    if low and (wrap_ttl <= 0 or wrap_ttl < low):
        return f"response wrapping with a TTL of at least {low}s is required"
    if low and high and high < low:
        return "merged wrapping TTL bounds cannot be met"
    return None


def merge_rules(current: PathRule, new: PathRule) -> PathRule:
    """Two rules for the same pattern, as the reference merges them.

    Capabilities are unioned (any deny -> deny only); wrapping TTLs take the
    smaller non-zero value; parameter value lists are concatenated with an
    empty list (any value) winning; required parameters are unioned.
    """
    if current.is_deny:
        return current
    if new.is_deny:
        return PathRule(path=current.path, capabilities=frozenset({DENY}))
    return PathRule(
        path=current.path,
        capabilities=current.capabilities | new.capabilities,
        allowed_parameters=_merge_params(current.allowed_parameters, new.allowed_parameters),
        denied_parameters=_merge_params(current.denied_parameters, new.denied_parameters),
        required_parameters=tuple(
            dict.fromkeys((*current.required_parameters, *new.required_parameters))
        ),
        min_wrapping_ttl=_smaller_nonzero(current.min_wrapping_ttl, new.min_wrapping_ttl),
        max_wrapping_ttl=_smaller_nonzero(current.max_wrapping_ttl, new.max_wrapping_ttl),
    )


def _merge_params(current: ParamValues, new: ParamValues) -> ParamValues:
    if not new:
        return current
    if not current:
        return new
    merged = dict(current)
    for key, values in new.items():
        if key not in merged:
            merged[key] = values
        elif not values or not merged[key]:
            merged[key] = ()
        else:
            merged[key] = values + merged[key]
    return freeze_params(merged)


def _smaller_nonzero(a: int, b: int) -> int:
    return min(a, b) if a and b else a or b
