"""HCL/JSON policy text -> ``Policy``, with errors that say what and where.

pyhcl's default decoding merges repeated blocks (the second
``path "x" {...}`` silently overwrites the first), so the parser keeps HCL
objects as ordered key/value pairs and this module decides what repeats mean:
repeated ``path`` blocks are kept (the ACL merges them like rules from
separate policies); a repeated key inside one rule is an error.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping
from typing import Any

from hcl.parser import HclParser

from node.framework.fields import parse_duration
from node.policy.model import (
    CAPABILITIES,
    DENY,
    LEGACY_POLICIES,
    PathRule,
    Policy,
    freeze_params,
)
from node.policy.templates import TemplateError, template_selectors
from sdk.errors import InvalidRequestError

__all__ = ["parse_policy"]

_TOP_KEYS = frozenset({"name", "path"})
_RULE_KEYS = frozenset(
    {
        "capabilities",
        "policy",
        "allowed_parameters",
        "denied_parameters",
        "required_parameters",
        "min_wrapping_ttl",
        "max_wrapping_ttl",
        "mfa_methods",
        "control_group",
        "comment",
    }
)


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class _Pairs(list[tuple[Any, Any]]):
    """An HCL/JSON object as ordered (key, value) pairs, repeats kept."""


class _PairsParser(HclParser):  # type: ignore[misc]
    """pyhcl's grammar, but objects come back as ``_Pairs`` (no merging)."""

    def objectlist_flat(self, lt: list[tuple[Any, Any]], replace: bool) -> _Pairs:
        return _Pairs(lt)


_parser: _PairsParser | None = None
_parser_lock = threading.Lock()


def _load(text: str) -> Any:
    """Decode HCL or JSON (JSON iff the first non-blank char is ``{``)."""
    global _parser
    if text.lstrip().startswith("{"):
        try:
            return json.loads(text, object_pairs_hook=_Pairs)
        except json.JSONDecodeError as exc:
            raise _Fail(f"invalid JSON: {exc}") from exc
    with _parser_lock:  # ply keeps per-parse state on the parser object
        if _parser is None:
            _parser = _PairsParser()
        try:
            return _parser.parse(text)
        except ValueError as exc:
            raise _Fail(_locate(text, str(exc))) from exc
        except ArithmeticError as exc:
            # pyhcl evaluates arithmetic (``x = 1/0``, ``2.0 * 1e308``) while parsing.
            raise _Fail(f"invalid arithmetic: {exc}") from exc


_PARSER_ERROR = re.compile(r"Line (\d+), column (\d+): (.*)", re.DOTALL)
_LEXER_ERROR = re.compile(r"Line (\d+), column \d+, index (\d+): (.*)", re.DOTALL)


def _locate(text: str, message: str) -> str:
    """pyhcl reports character offsets as "column"; turn them into line/column."""
    found = _PARSER_ERROR.fullmatch(message) or _LEXER_ERROR.fullmatch(message)
    if found is None:
        if message.startswith("Unexpected end of file"):
            return f"line {text.count(chr(10)) + 1}: {message}"
        return message
    offset = int(found.group(2))
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return f"line {found.group(1)}, column {column}: {found.group(3)}"


class _Fail(Exception):
    """Internal: a message that ``parse_policy`` prefixes with the policy name."""


def parse_policy(name: str, text: str) -> Policy:
    """Parse one ACL policy; every problem raises ``InvalidRequestError`` (400).

    Messages read ``failed to parse policy "<name>": path "<p>": <what>``.
    """
    try:
        rules = _parse(text)
    except _Fail as exc:
        raise InvalidRequestError(f'failed to parse policy "{name}": {exc}') from None
    return Policy(name=name, raw=text, rules=tuple(rules))


def _parse(text: str) -> list[PathRule]:
    if not text.strip():
        raise _Fail("policy text is empty")
    document = _load(text)
    if not isinstance(document, (_Pairs, dict)):
        raise _Fail("does not contain a root object")
    rules: list[PathRule] = []
    for key, value in _items(document):
        if key not in _TOP_KEYS:
            raise _Fail(f"invalid key {_quote(key)}")
        if key == "path":
            for pattern, body in _path_entries(value):
                try:
                    rules.append(_parse_rule(pattern, body))
                except _Fail as exc:
                    raise _Fail(f"path {_quote(pattern)}: {exc}") from None
    return rules


def _items(value: Any) -> list[tuple[Any, Any]]:
    return list(value) if isinstance(value, _Pairs) else list(value.items())


def _path_entries(value: Any) -> list[tuple[str, Any]]:
    """``path`` as a block map (HCL, JSON) or a JSON list of such maps."""
    blocks = value if isinstance(value, list) and not isinstance(value, _Pairs) else [value]
    entries: list[tuple[str, Any]] = []
    for block in blocks:
        if not isinstance(block, (_Pairs, dict)):
            raise _Fail('"path" must be a block: path "<pattern>" { ... }')
        for pattern, body in _items(block):
            if not isinstance(pattern, str):
                raise _Fail(f"invalid path {_quote(pattern)}")
            entries.append((pattern, body))
    return entries


def _parse_rule(pattern: str, body: Any) -> PathRule:
    if not isinstance(body, (_Pairs, dict)):
        raise _Fail("expected a block of settings")
    fields: dict[str, Any] = {}
    for key, value in _items(body):
        if key not in _RULE_KEYS:
            raise _Fail(f"invalid key {_quote(key)}")
        if key in fields:
            raise _Fail(f"duplicate key {_quote(key)}")
        fields[key] = _plain(value)

    path, templated = _validate_pattern(pattern)
    capabilities = _capabilities(fields)
    min_ttl = _duration(fields, "min_wrapping_ttl")
    max_ttl = _duration(fields, "max_wrapping_ttl")
    if min_ttl and max_ttl and max_ttl < min_ttl:
        raise _Fail("max_wrapping_ttl cannot be less than min_wrapping_ttl")
    allowed = _parameters(fields, "allowed_parameters")
    denied = _parameters(fields, "denied_parameters")
    required = _strings(fields, "required_parameters")
    if "comment" in fields and not isinstance(fields["comment"], str):
        raise _Fail('"comment" must be a string')
    if DENY in capabilities:
        # deny overrides the rest of its rule.
        return PathRule(path=path, capabilities=frozenset({DENY}), templated=templated)
    return PathRule(
        path=path,
        capabilities=capabilities,
        allowed_parameters=freeze_params(allowed),
        denied_parameters=freeze_params(denied),
        required_parameters=tuple(dict.fromkeys(key.lower() for key in required)),
        min_wrapping_ttl=min_ttl,
        max_wrapping_ttl=max_ttl,
        templated=templated,
    )


def _validate_pattern(pattern: str) -> tuple[str, bool]:
    path = pattern[1:] if pattern.startswith("/") else pattern
    if _CONTROL.search(path):
        # No request path can hold one (and a NUL cannot be a storage key).
        raise _Fail("path must not contain control characters")
    if "+*" in path:
        raise _Fail('invalid use of wildcards ("+*" is forbidden)')
    if "*" in path[:-1]:
        raise _Fail('"*" is only allowed at the end')
    try:
        templated = bool(template_selectors(path))
    except TemplateError as exc:
        raise _Fail(f"failed to validate policy templating: {exc}") from None
    return path, templated


def _capabilities(fields: Mapping[str, Any]) -> frozenset[str]:
    granted = set(_strings(fields, "capabilities"))
    for capability in granted:
        if capability not in CAPABILITIES:
            raise _Fail(f"invalid capability {_quote(capability)}")
    if "policy" in fields:
        legacy = fields["policy"]
        if not isinstance(legacy, str) or legacy not in LEGACY_POLICIES:
            raise _Fail(f"invalid policy {_quote(legacy)}")
        granted.update(LEGACY_POLICIES[legacy])
    return frozenset(granted)


def _strings(fields: Mapping[str, Any], key: str) -> list[str]:
    value = fields.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _Fail(f'"{key}" must be a list of strings')
    return value


def _duration(fields: Mapping[str, Any], key: str) -> int:
    value = fields.get(key)
    if value is None or value == "":
        return 0
    try:
        seconds = parse_duration(value, key)
    except InvalidRequestError as exc:
        raise _Fail("; ".join(exc.messages)) from None
    if seconds < 0:
        raise _Fail(f"{key}: must not be negative")
    return seconds


def _parameters(fields: Mapping[str, Any], key: str) -> dict[str, tuple[Any, ...]]:
    """Keys lower-cased (colliding keys merge, ``[]`` = any value wins)."""
    value = fields.get(key, {})
    if not isinstance(value, dict):
        raise _Fail(f'"{key}" must be a map of parameter name to a list of values')
    params: dict[str, tuple[Any, ...]] = {}
    for name, values in value.items():
        if not isinstance(name, str):
            raise _Fail(f"{key}: invalid parameter name {_quote(name)}")
        items = tuple(values) if isinstance(values, list) else (values,)
        lowered = name.lower()
        if lowered in params:
            items = () if not items or not params[lowered] else params[lowered] + items
        params[lowered] = items
    return params


def _plain(value: Any) -> Any:
    """Nested ``_Pairs`` -> dict (repeated keys: last wins, as plain HCL/JSON)."""
    if isinstance(value, _Pairs):
        return {key: _plain(item) for key, item in value}
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _quote(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else repr(value)
