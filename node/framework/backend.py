"""Dispatch, validation and help for backends declared as path tables."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from node.errors import MethodNotAllowedError, UnsupportedPathError
from node.framework.fields import Field, FieldData, FieldType
from node.framework.path import Path
from node.logical.request import Operation, Request
from node.logical.response import Response

__all__ = ["FrameworkBackend"]

_OPENAPI_METHODS = {
    Operation.READ: "get",
    Operation.LIST: "get",
    Operation.UPDATE: "post",
    Operation.CREATE: "post",
    Operation.PATCH: "patch",
    Operation.DELETE: "delete",
}


class FrameworkBackend:
    """A backend whose behaviour is its ``paths`` table."""

    type = "framework"
    help_text = ""

    def __init__(self, paths: Sequence[Path]) -> None:
        self.paths = list(paths)

    def _find(self, path: str) -> tuple[Path, dict[str, str]]:
        for candidate in self.paths:
            found = candidate.match(path)
            if found:
                captures = {k: v for k, v in found.groupdict().items() if v is not None}
                return candidate, captures
        raise UnsupportedPathError("unsupported path")

    def _fields(self, entry: Path, request: Request, captures: dict[str, str]) -> FieldData:
        raw: dict[str, Any] = dict(request.data)
        raw.update(captures)
        schema = dict(entry.fields)
        for name in captures:
            schema.setdefault(name, Field(FieldType.STRING))
        return FieldData(schema, raw)

    async def handle(self, request: Request) -> Response | None:
        entry, captures = self._find(request.path)
        operation = request.operation
        handler = entry.operations.get(operation)
        if handler is None and operation is Operation.CREATE:
            handler = entry.operations.get(Operation.UPDATE)
        if handler is None:
            raise MethodNotAllowedError(f"unsupported operation {operation.value!r} on this path")
        data = self._fields(entry, request, captures)
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
            entry, captures = self._find(request.path)
        except UnsupportedPathError:
            return False
        if entry.exists is None:
            return True
        return await entry.exists(request, self._fields(entry, request, captures))

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
        """Help text plus an OpenAPI document of the paths at and below ``request.path``."""
        prefix = request.path
        documented = [
            p for p in self.paths if _pattern_text(p).startswith(prefix) or p.match(prefix)
        ]
        if not documented:
            raise UnsupportedPathError("no help for this path")
        lines = [self.help_text.strip(), ""] if self.help_text else []
        paths: dict[str, Any] = {}
        for entry in documented:
            text = _pattern_text(entry)
            lines.append(f"## {text or '/'}\n\n{entry.summary}\n\n{entry.description}".rstrip())
            paths["/" + text[len(prefix) :].lstrip("/") if prefix else "/" + text] = _openapi_path(
                entry
            )
        return Response(
            raw={
                "help": "\n\n".join(lines).strip(),
                "see_also": None,
                "openapi": {
                    "openapi": "3.0.2",
                    "info": {
                        "title": "Coffer API",
                        "description": "HTTP API of Coffer. All routes are prefixed with `/v1/`.",
                        "version": "0.1.0",
                        "license": {"name": "Mozilla Public License 2.0"},
                    },
                    "paths": paths,
                    "components": {"schemas": {}},
                },
            }
        )


def _pattern_text(entry: Path) -> str:
    """A readable form of a pattern: named groups become ``{name}``."""
    text = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", entry.pattern)
    return text.replace("\\", "").rstrip("$").replace("/?", "/").replace("?", "")


def _openapi_path(entry: Path) -> dict[str, Any]:
    doc: dict[str, Any] = {"description": entry.description or entry.summary}
    if entry.unauthenticated:
        doc["x-vault-unauthenticated"] = True
    if entry.sudo:
        doc["x-vault-sudo"] = True
    params = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in re.findall(r"\(\?P<(\w+)>", entry.pattern)
    ]
    if params:
        doc["parameters"] = params
    body_fields = {
        n: f.openapi() for n, f in entry.fields.items() if f"(?P<{n}>" not in entry.pattern
    }
    for operation in entry.operations:
        method = _OPENAPI_METHODS.get(operation)
        if method is None or method in doc:
            continue
        op_doc: dict[str, Any] = {
            "summary": entry.summary,
            "responses": {"200": {"description": "OK"}},
        }
        if operation is Operation.LIST:
            op_doc["parameters"] = [
                {
                    "name": "list",
                    "in": "query",
                    "required": True,
                    "schema": {"type": "string", "enum": ["true"]},
                }
            ]
        if method in ("post", "patch") and body_fields:
            op_doc["requestBody"] = {
                "content": {
                    "application/json": {"schema": {"type": "object", "properties": body_fields}}
                }
            }
        doc[method] = op_doc
    return doc
