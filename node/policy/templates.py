"""Identity templates in policy paths, e.g. ``identity/entity/id/{{identity.entity.id}}``.

Policies are parsed once with their templates intact; ``render_templates``
specialises a policy for one token's identity just before the ACL is built.
A rule whose template cannot be resolved is dropped (as the reference does);
a value that would change the rule's shape (a glob or an extra segment) fails
the request instead, since silently widening or narrowing a grant is worse.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

from node.policy.model import PathRule, Policy
from sdk.errors import PermissionDeniedError

__all__ = ["TemplateError", "render_templates", "template_selectors"]

_NAME = r"[^.{}\s]+"
_KEY = r"[^{}\s]+"
_SELECTOR = re.compile(
    rf"""identity\.(?:
        entity\.(?:id|name|metadata\.{_KEY}
            |aliases\.{_NAME}\.(?:id|name|metadata\.{_KEY}|custom_metadata\.{_KEY}))
      | groups\.(?:ids|names)\.{_NAME}\.(?:id|name|metadata\.{_KEY})
    )""",
    re.VERBOSE,
)
_TEMPLATE = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
_WILDCARDS = ("*", "+")


class TemplateError(ValueError):
    """A path's ``{{...}}`` directives are malformed (reported at parse time)."""


def template_selectors(path: str) -> list[str]:
    """The selectors in ``path`` (whitespace-trimmed), validated.

    Returns an empty list for a plain path. Raises ``TemplateError`` for
    unbalanced braces or a selector the reference does not define.
    """
    if "{{" not in path and "}}" not in path:
        return []
    pieces = path.split("{{")
    if "}}" in pieces[0] or any(piece.count("}}") != 1 for piece in pieces[1:]):
        raise TemplateError("unbalanced templating characters")
    selectors = [match.strip() for match in _TEMPLATE.findall(path)]
    for selector in selectors:
        if not _SELECTOR.fullmatch(selector):
            raise TemplateError(f"invalid template {{{{{selector}}}}}")
    return selectors


def render_templates(
    policy: Policy,
    identity: Mapping[str, str] | None,
    *,
    allow_wildcards: bool = False,
    allow_slashes: bool = False,
) -> Policy:
    """``policy`` with every templated rule resolved against ``identity``.

    ``identity`` is a flat map of selector -> value, e.g.
    ``{"identity.entity.id": "...", "identity.entity.metadata.team": "ops",
    "identity.entity.aliases.auth_userpass_1a2b.name": "alice",
    "identity.groups.names.admins.id": "..."}``. Rules with a selector that is
    missing (or empty) are dropped; with ``identity=None`` every templated
    rule is dropped. A value containing ``*``/``+`` (or ``/``) raises
    ``PermissionDeniedError`` unless ``allow_wildcards``/``allow_slashes``.
    """
    if not policy.templated:
        return policy
    rules: list[PathRule] = []
    for rule in policy.rules:
        if not rule.templated:
            rules.append(rule)
            continue
        rendered = _render_path(policy.name, rule.path, identity, allow_wildcards, allow_slashes)
        if rendered is not None:
            rules.append(dataclasses.replace(rule, path=rendered, templated=False))
    return dataclasses.replace(policy, rules=tuple(rules))


def _render_path(
    policy_name: str,
    path: str,
    identity: Mapping[str, str] | None,
    allow_wildcards: bool,
    allow_slashes: bool,
) -> str | None:
    if identity is None:
        return None
    values: dict[str, str] = {}
    for selector in template_selectors(path):
        value = identity.get(selector)
        if not value:
            return None
        unsafe = [c for c in _WILDCARDS if c in value] if not allow_wildcards else []
        if not allow_slashes and "/" in value:
            unsafe.append("/")
        if unsafe or "{{" in value or "}}" in value:
            shown = unsafe[0] if unsafe else "{{"
            raise PermissionDeniedError(
                f'policy "{policy_name}": identity value for {{{{{selector}}}}} '
                f'contains "{shown}", which policy templates do not allow'
            )
        values[selector] = value
    return _TEMPLATE.sub(lambda m: values[m.group(1).strip()], path)
