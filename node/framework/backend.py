"""Dispatch, validation and help for backends declared as path tables."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from node.framework.fields import Field, FieldData, FieldType
from node.framework.openapi import DocumentBuilder, Template, render_pattern
from node.framework.path import Path
from node.logical.request import Operation, Request
from node.logical.response import Response
from node.logical.system_view import BackendConfig
from node.version import VERSION
from sdk.errors import MethodNotAllowedError, UnsupportedPathError

__all__ = ["FrameworkBackend", "HelpMatch"]

_PARAM_SEGMENT = re.compile(r"\{[^{}/]+\}")
_WRITES = (Operation.CREATE, Operation.UPDATE, Operation.PATCH)
#: Request paths whose match is remembered (oldest dropped first).
_ROUTES_KEPT = 1024

#: A matched row, its captures and the schema its fields are validated with.
_Route = tuple[Path, dict[str, str], dict[str, Field]]


@dataclass(frozen=True, slots=True)
class HelpMatch:
    """A row documented by a help request: ``url`` is relative to the queried path."""

    entry: Path
    template: Template
    url: str


class FrameworkBackend:
    """A backend whose behaviour is its ``paths`` table."""

    type = "framework"
    help_text = ""
    #: See ``node.logical.backend.Backend.seal_wrap_storage``; none by default.
    seal_wrap_storage: tuple[str, ...] = ()

    def __init__(self, paths: Sequence[Path]) -> None:
        self.paths = list(paths)
        self._routes: dict[str, _Route] = {}
        self._schemas: dict[tuple[int, tuple[str, ...]], dict[str, Field]] = {}
        #: Set by :meth:`setup`; ``None`` for a backend built outside a mount table.
        self.config: BackendConfig | None = None

    # -- lifecycle (``node.logical.backend.Backend``); no-ops unless a backend needs them --

    def setup(self, config: BackendConfig) -> None:
        self.config = config

    async def initialize(self) -> None:
        return None

    def invalidate(self, key: str) -> None:
        return None

    async def cleanup(self) -> None:
        return None

    def _route(self, path: str) -> _Route:
        """The row for ``path``. One request matches its path several times
        (existence check, sudo, dispatch) against a table that never changes,
        so matches are kept per path; the kept values are only read."""
        route = self._routes.get(path)
        if route is None:
            entry, captures = self._match(path)
            route = (entry, captures, self._schema(entry, tuple(captures)))
            if len(self._routes) >= _ROUTES_KEPT:
                del self._routes[next(iter(self._routes))]
            self._routes[path] = route
        return route

    def _schema(self, entry: Path, captured: tuple[str, ...]) -> dict[str, Field]:
        """A row's fields plus its captures (strings unless declared), built
        once per row and set of captures rather than once per request."""
        schema = self._schemas.get((id(entry), captured))
        if schema is None:
            schema = dict(entry.fields)
            for name in captured:
                schema.setdefault(name, Field(FieldType.STRING))
            self._schemas[(id(entry), captured)] = schema
        return schema

    def _match(self, path: str) -> tuple[Path, dict[str, str]]:
        for candidate in self.paths:
            found = candidate.match(path)
            if found:
                captures = {k: v for k, v in found.groupdict().items() if v is not None}
                return candidate, captures
        raise UnsupportedPathError("unsupported path")

    def _find(self, path: str) -> tuple[Path, dict[str, str]]:
        entry, captures, _ = self._route(path)
        return entry, captures

    def _fields(self, route: _Route, request: Request) -> FieldData:
        _, captures, schema = route
        raw: dict[str, Any] = dict(request.data)
        raw.update(captures)
        return FieldData(schema, raw)

    async def handle(self, request: Request) -> Response | None:
        route = self._route(request.path)
        entry = route[0]
        operation = request.operation
        handler = entry.operations.get(operation)
        if handler is None and operation is Operation.CREATE:
            handler = entry.operations.get(Operation.UPDATE)
        if handler is None:
            raise MethodNotAllowedError(f"unsupported operation {operation.value!r} on this path")
        data = self._fields(route, request)
        response = await handler(request, data)
        reads = (Operation.READ, Operation.LIST)
        unknown = [] if entry.free_form or operation in reads else data.unknown
        if unknown:
            warning = f"Endpoint ignored these unrecognized parameters: {unknown}"
            response = replace(
                response or Response(), warnings=[*(response.warnings if response else []), warning]
            )
        return response

    async def exists(self, request: Request) -> bool:
        try:
            route = self._route(request.path)
        except UnsupportedPathError:
            return False
        if route[0].exists is None:
            return True
        return await route[0].exists(request, self._fields(route, request))

    def is_unauthenticated(self, path: str) -> bool:
        try:
            return self._find(path)[0].unauthenticated
        except UnsupportedPathError:
            return False

    def needs_sudo(self, path: str) -> bool:
        try:
            return self._find(path)[0].sudo
        except UnsupportedPathError:
            return False

    def help(self, request: Request) -> Response:
        """Help for ``request.path`` (mount-relative) and the paths below it.

        The body is the reference's bare ``{"help", "see_also", "openapi"}``;
        the OpenAPI paths are relative to the queried path (``/`` is the
        queried path itself). A path no row documents is a 404.
        """
        matches = self.help_matches(request.path)
        if not matches:
            shown = request.mount_point + request.path
            raise UnsupportedPathError(f"no help available for path {shown!r}")
        builder = DocumentBuilder(_server_version())
        for match in matches:
            builder.add(
                match.entry,
                match.url,
                name=request.mount_point + match.template.text,
                tag=self.type,
                synthetic=match.template.synthetic,
            )
        return Response(
            raw={
                "help": self._help_markdown(request, matches),
                "see_also": None,
                "openapi": builder.document(),
            }
        )

    def help_matches(self, query: str) -> list[HelpMatch]:
        """Rows at or below ``query``, each with its URL relative to ``query``.

        A template is below ``query`` when ``query``'s segments are its first
        segments, a ``{parameter}`` segment standing for any one segment. When
        no template is exactly at ``query`` (``data/a/b`` against
        ``data/{path}``), the row that routes ``query`` is documented at ``/``.
        """
        matches: list[HelpMatch] = []
        for entry in self.paths:
            for template in render_pattern(entry.pattern):
                url = _relative_url(template.text, query)
                if url is not None:
                    matches.append(HelpMatch(entry, template, url))
        if not any(m.url == "/" for m in matches):
            try:
                entry, _ = self._find(query)
            except UnsupportedPathError:
                return matches
            template = render_pattern(entry.pattern)[0]
            matches.insert(0, HelpMatch(entry, Template(template.text, {}), "/"))
        return matches

    def _help_markdown(self, request: Request, matches: Sequence[HelpMatch]) -> str:
        queried = (request.mount_point + request.path) or "/"
        lines = [f"# `{queried}`", ""]
        if self.help_text:
            lines += [self.help_text.strip(), ""]
        lines += [
            f"This `{self.type}` backend is mounted at `{request.mount_point or '/'}`.",
            "",
            "## Paths",
            "",
        ]
        documented: dict[int, list[HelpMatch]] = {}
        for match in matches:
            documented.setdefault(id(match.entry), []).append(match)
        for group in documented.values():
            entry = group[0].entry
            shown = ", ".join(
                dict.fromkeys(f"`{request.mount_point}{m.template.text}`" for m in group)
            )
            lines += [f"### {shown}", ""]
            if entry.summary:
                lines += [entry.summary, ""]
            if entry.description and entry.description != entry.summary:
                lines += [entry.description, ""]
            flags = [
                flag
                for flag, on in (
                    ("unauthenticated", entry.unauthenticated),
                    ("requires sudo", entry.sudo),
                )
                if on
            ]
            operations = ", ".join(f"`{op.value}`" for op in entry.operations)
            lines += [f"Operations: {operations}" + (f" ({', '.join(flags)})" if flags else ""), ""]
            lines += _fields_table(entry, group[0].template)
        return "\n".join(lines).strip() + "\n"


def _server_version() -> str:
    return VERSION


def _relative_url(template: str, query: str) -> str | None:
    wanted = [segment for segment in query.split("/") if segment]
    have = template.split("/") if template else []
    if len(have) < len(wanted):
        return None
    for mine, theirs in zip(have, wanted, strict=False):
        if mine != theirs and not _PARAM_SEGMENT.fullmatch(mine):
            return None
    return "/" + "/".join(have[len(wanted) :])


def _cell(value: object) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _fields_table(entry: Path, template: Template) -> list[str]:
    captured = list(dict.fromkeys(re.findall(r"\(\?P<(\w+)>", entry.pattern)))
    captured += [name for name in template.synthetic if name not in captured]
    # The HTTP layer reads fields from the body of writes and the query string of the rest.
    writes = any(op in entry.operations for op in _WRITES)
    others = any(op not in _WRITES for op in entry.operations)
    location = "body, query" if writes and others else "body" if writes else "query"
    rows: list[tuple[str, str, Field]] = [
        (name, "path", entry.fields.get(name, Field(FieldType.STRING))) for name in captured
    ]
    rows += [(n, location, f) for n, f in entry.fields.items() if n not in captured]
    if not rows:
        return ["No parameters.", ""]
    lines = [
        "| Parameter | In | Type | Required | Default | Description |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, where, field in rows:
        required = "yes" if field.required or where == "path" else "no"
        default = "" if field.default is None else f"`{json.dumps(field.default)}`"
        description = field.description
        if name in template.synthetic:
            description = f"Matches the regular expression `{template.synthetic[name]}`."
        lines.append(
            f"| `{_cell(name)}` | {where} | {field.type.value} | {required} | "
            f"{_cell(default)} | {_cell(description)} |"
        )
    lines.append("")
    return lines
