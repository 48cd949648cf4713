"""``sys/internal/specs/openapi``: one OpenAPI document for every mount.

Each mount's path table is rendered with its route path in front
(``/secret/data/{path}``, ``/sys/mounts``, ``/auth/token/create``).
``?generic_mount_paths=true`` writes ``{<type>_mount_path}`` in place of
each mount's path (``/{kv_mount_path}/data/{path}``,
``/auth/{token_mount_path}/create``); ``sys/`` and ``identity/`` keep their
fixed paths, as in the reference. Two mounts of one type then share their
paths; the first mount (in route order) describes them.

Who sees what (the reference lets the ACL decide which paths appear):

* **No token, or one that does not resolve**: what is public anyway, so
  the document reveals no mount or namespace: the unauthenticated rows of
  ``sys/`` (health, seal status, init, ...) and, as in the reference, the
  mounts whose ``listing_visibility`` is ``unauth`` (typically login
  methods meant to be discovered).
* **Root token**: the whole document.
* **Any other valid token**: rows marked unauthenticated, plus the rows
  on which the token's ACL grants some capability on at least one path the
  row serves. This is a *view* ("what can I call?"), not a security
  boundary: dropping the token shows everything. Whether a row may be
  reached is decided by probing the ACL with concrete paths: the row's
  template with every parameter filled in, and each policy rule's own path
  (``+`` segments filled from the template) when the row's template
  matches it. Overlaps these probes miss are possible but rare; they err
  towards hiding a row.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from node.framework import Field, FieldData, FieldType, FrameworkBackend, Path
from node.framework.openapi import DocumentBuilder, Template, render_pattern
from node.logical.request import Operation, Request
from node.logical.response import Response
from node.namespaces.model import ROOT, Namespace
from node.policy.acl import ACL
from node.policy.model import DENY
from node.version import VERSION

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["InternalPaths", "reachable"]

#: Mounts whose path is fixed, so they keep it under ``generic_mount_paths``.
_FIXED_MOUNTS = frozenset({"system", "identity"})
_PARAMETER = re.compile(r"\{[^{}/]+\}")
_PROBE = "x"


def _template_regex(text: str) -> re.Pattern[str]:
    parts = _PARAMETER.split(text)
    return re.compile(".+".join(re.escape(part) for part in parts), re.DOTALL)


def _fill(rule_path: str, template: str) -> str:
    """A concrete path of a rule: ``+`` segments from ``template`` (or a probe), no ``*``."""
    body = rule_path[:-1] if rule_path.endswith("*") else rule_path
    wanted = template.split("/")
    segments = body.split("/")
    for index, segment in enumerate(segments):
        if segment == "+":
            given = wanted[index] if index < len(wanted) else ""
            segments[index] = given if given and not _PARAMETER.search(given) else _PROBE
    return "/".join(segments)


def reachable(acl: ACL, route_path: str, template: Template) -> bool:
    """Whether ``acl`` grants anything on some path of ``route_path + template``."""
    absolute = route_path + template.text
    candidates = [_PARAMETER.sub(_PROBE, absolute)]
    regex = _template_regex(absolute)
    for rule in acl.rules:
        if rule.is_deny or not rule.capabilities:
            continue
        concrete = _fill(rule.path, absolute)
        if regex.fullmatch(concrete) or regex.fullmatch(concrete.rstrip("/")):
            candidates.append(concrete)
    return any(acl.capabilities(candidate) != [DENY] for candidate in candidates)


_FIELDS = {
    "generic_mount_paths": Field(
        FieldType.BOOL,
        "Use {<type>_mount_path} parameters in place of the mount paths.",
        False,
    ),
}


class InternalPaths:
    def __init__(self, core: Core, namespace: Namespace = ROOT) -> None:
        self._core = core
        self._namespace = namespace

    def paths(self) -> list[Path]:
        return [
            Path(
                "internal/specs/openapi",
                {Operation.READ: self._openapi},
                _FIELDS,
                "The OpenAPI document of every mount the caller can use.",
                unauthenticated=True,
            ),
        ]

    async def _openapi(self, request: Request, data: FieldData) -> Response:
        core, namespace = self._core, self._namespace
        acl: ACL | None = None
        caller = await core.tokens.lookup(request.client_token) if request.client_token else None
        if caller is not None:
            acl = await core.access.acl_for(caller)
            if acl.is_root:
                acl = None
        anonymous = caller is None
        generic = bool(data.get("generic_mount_paths"))
        builder = DocumentBuilder(VERSION)
        mounts = [m for m in core.router.entries() if m.namespace_id == namespace.id]
        for mount in sorted(mounts, key=lambda entry: entry.route_path):
            route = core.router.match(mount.route_path)
            if route is None or not isinstance(route.backend, FrameworkBackend):
                continue
            listed = mount.config.get("listing_visibility") == "unauth"
            if anonymous and not listed and mount.type != "system":
                continue  # its path alone would tell an anonymous caller it exists
            prefix = mount.route_path  # absolute, for ACL probes
            url_prefix = prefix[len(namespace.path) :]  # the document is namespace-relative
            extra: dict[str, dict[str, Any]] = {}
            if generic and mount.type not in _FIXED_MOUNTS:
                name = f"{mount.type}_mount_path"
                url_prefix = ("auth/" if mount.table == "auth" else "") + "{" + name + "}/"
                extra[name] = {
                    "description": "Path that the backend was mounted at",
                    "schema": {"type": "string", "default": mount.path.rstrip("/")},
                }
            for entry in route.backend.paths:
                for template in render_pattern(entry.pattern):
                    if anonymous:
                        hidden = not listed
                    else:
                        hidden = acl is not None and not reachable(acl, prefix, template)
                    if hidden and not entry.unauthenticated:
                        continue
                    builder.add(
                        entry,
                        "/" + (url_prefix + template.text).strip("/"),
                        name=url_prefix + template.text,
                        tag=mount.type,
                        synthetic=template.synthetic,
                        extra_parameters=extra,
                    )
        return Response(raw=builder.document())
