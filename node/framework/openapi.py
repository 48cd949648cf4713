"""OpenAPI 3.0.2 documents built from path tables.

The same ``Path`` rows that route requests describe them: a row's regex is
rendered as one or more readable path templates (``data/(?P<path>.+)`` →
``data/{path}``), its operations become OpenAPI operations and its typed
fields become parameters and request bodies.

Rendering a regex follows the reference's ``expandPattern``:

* a named group becomes a ``{name}`` path parameter, whatever it matches;
* an optional group (``rotate(/keyring)?``) and an alternation
  (``(a|b)``) expand into one template per choice;
* an optional ``/`` is dropped at the end (``policy/?`` → ``policy``) and
  kept elsewhere (``metadata/?(?P<path>.*)`` → ``metadata/{path}``);
* anything else (``.*``, character classes, repeats outside a named group)
  cannot be written as a template. The reference skips such rows; here the
  unrenderable run becomes a synthetic ``{param}`` path parameter whose
  description quotes the regex, so the row is still documented and the
  document still validates.

Every operation declares its error answers (400, 403, 404, 405; 409 for
writes, 415 for patches) as ``{"errors": [...]}``, its 200 body as the
response envelope (or, for a ``LIST``, the envelope with ``data.keys``), and
whether it needs a token (the ``token`` security scheme, lifted on the
unauthenticated rows), so a conformance checker (schemathesis, in the test
suite) has something to check.

``LIST`` is documented as the reference does: a ``get`` with a ``list``
query parameter, required when the path has no ``READ``, optional when
``get`` also reads.
"""

from __future__ import annotations

import copy
import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from node.framework.fields import Field, FieldType
from node.framework.path import Path
from node.logical.request import Operation

__all__ = [
    "OPENAPI_VERSION",
    "DocumentBuilder",
    "Template",
    "field_schema",
    "path_parameter_names",
    "render_pattern",
]

OPENAPI_VERSION = "3.0.2"
_TITLE = "Coffer API"
_DESCRIPTION = (
    "HTTP API that gives you full access to Coffer. All API routes are prefixed with `/v1/`."
)
_LICENSE = {"name": "Mozilla Public License 2.0"}

#: More choices than this in one pattern are not expanded (the pattern is a synthetic parameter).
_MAX_VARIANTS = 16
_PARAMETER = re.compile(r"\{([^{}/]+)\}")


# -- rendering regexes as templates ----------------------------------------------


@dataclass(frozen=True, slots=True)
class _Param:
    name: str
    regex: str
    synthetic: bool = False


_Piece = str | _Param
_Variant = tuple[_Piece, ...]


@dataclass(frozen=True, slots=True)
class Template:
    """One rendering of a pattern: ``text`` has no leading ``/``."""

    text: str
    #: Regex of each synthetic parameter (named groups are described by the row's fields).
    synthetic: Mapping[str, str]


class _Unrenderable(Exception):
    """Part of a regex that has no template form."""


class _Renderer:
    """A small recursive-descent reader of the regex subset path tables use."""

    def __init__(self, pattern: str) -> None:
        self.text = pattern
        self.pos = 0
        self.taken = set(re.findall(r"\(\?P<(\w+)>", pattern))

    def render(self) -> list[Template]:
        variants = self._alternation(top=True)
        templates: list[Template] = []
        seen: set[str] = set()
        for variant in variants:
            template = self._template(variant)
            if template.text not in seen:
                seen.add(template.text)
                templates.append(template)
        return templates

    # Each parse step returns the list of choices, each a tuple of pieces.

    def _alternation(self, top: bool) -> list[_Variant]:
        choices = self._sequence(top)
        while self._peek() == "|":
            self.pos += 1
            choices = choices + self._sequence(top)
        if len(choices) > _MAX_VARIANTS:
            raise _Unrenderable()
        return choices

    def _sequence(self, top: bool) -> list[_Variant]:
        variants: list[_Variant] = [()]
        while True:
            char = self._peek()
            if char in ("", "|") or (char == ")" and not top):
                return variants
            if char == ")":  # unbalanced at top level
                raise _Unrenderable()
            if char == "$" and self.text[self.pos + 1 : self.pos + 2] in ("", "|", ")"):
                self.pos += 1  # an end anchor
                continue
            if char == "^" and variants == [()]:
                self.pos += 1  # a start anchor
                continue
            start = self.pos
            try:
                choices = self._item(top)
            except _Unrenderable:
                self.pos = start
                choices = [(self._synthetic(self._skip_unrenderable(top)),)]
            variants = [a + b for a, b in itertools.product(variants, choices)]
            if len(variants) > _MAX_VARIANTS:
                raise _Unrenderable()

    def _item(self, top: bool) -> list[_Variant]:
        start = self.pos
        char = self._peek()
        if char == "(":
            choices = self._group()
        elif char == "\\":
            escaped = self.text[self.pos + 1 : self.pos + 2]
            if not escaped or escaped.isalnum():
                raise _Unrenderable()  # \d, \w, \1 ... are classes or references
            self.pos += 2
            choices = [(escaped,)]
        elif char in ".[^$*+?{":
            raise _Unrenderable()
        else:
            self.pos += 1
            choices = [(char,)]
        quantifier = self._quantifier()
        if quantifier == "":
            return choices
        if quantifier in ("?", "??"):
            if choices == [("/",)]:
                # An optional slash: dropped at the end, kept before more text.
                return [()] if self._at_end(top) else [("/",)]
            return [(), *choices]
        if len(choices) == 1 and len(choices[0]) == 1 and isinstance(choices[0][0], _Param):
            return choices  # (?P<x>...)+ is still one parameter
        self.pos = start
        raise _Unrenderable()

    def _group(self) -> list[_Variant]:
        text = self.text
        self.pos += 1
        named = re.match(r"\?P<(\w+)>", text[self.pos :])
        if named:
            inner_start = self.pos + named.end()
            end = self._group_end(inner_start)
            self.pos = end + 1
            return [(_Param(named.group(1), text[inner_start:end]),)]
        if text.startswith("?:", self.pos):
            self.pos += 2
        elif self._peek() == "?":
            raise _Unrenderable()  # look-arounds, flags, back-references
        choices = self._alternation(top=False)
        if self._peek() != ")":
            raise _Unrenderable()
        self.pos += 1
        return choices

    def _group_end(self, pos: int) -> int:
        """Index of the ``)`` closing a group whose body starts at ``pos``."""
        depth = 0
        text = self.text
        while pos < len(text):
            char = text[pos]
            if char == "\\":
                pos += 2
                continue
            if char == "[":
                pos = self._class_end(pos)
                continue
            if char == "(":
                depth += 1
            elif char == ")":
                if depth == 0:
                    return pos
                depth -= 1
            pos += 1
        raise _Unrenderable()

    def _class_end(self, pos: int) -> int:
        """Index just past the ``]`` closing a character class opened at ``pos``."""
        text = self.text
        pos += 1
        if pos < len(text) and text[pos] == "^":
            pos += 1
        if pos < len(text) and text[pos] == "]":
            pos += 1
        while pos < len(text):
            if text[pos] == "\\":
                pos += 2
                continue
            if text[pos] == "]":
                return pos + 1
            pos += 1
        raise _Unrenderable()

    def _quantifier(self) -> str:
        text = self.text
        match = re.match(r"(?:[?*+]|\{\d*(?:,\d*)?\})\??", text[self.pos :])
        if not match:
            return ""
        self.pos += match.end()
        return match.group(0)

    def _skip_unrenderable(self, top: bool) -> str:
        """Consume a run of atoms up to the next ``/`` (or the group's end); return its text."""
        start = self.pos
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char in "|/" or (char == ")" and not top):
                break
            if char == "$" and text[self.pos + 1 : self.pos + 2] in ("", "|", ")"):
                break
            if char == "\\":
                self.pos += 2
            elif char == "[":
                self.pos = self._class_end(self.pos)
            elif char == "(":
                self.pos = self._group_end(self.pos + 1) + 1
            else:
                self.pos += 1
        if self.pos == start:  # e.g. a stray ')' at the top level
            self.pos += 1
        return text[start : self.pos]

    def _synthetic(self, regex: str) -> _Param:
        name, index = "param", 1
        while name in self.taken:
            index += 1
            name = f"param{index}"
        self.taken.add(name)
        return _Param(name, regex, synthetic=True)

    def _peek(self) -> str:
        return self.text[self.pos : self.pos + 1]

    def _at_end(self, top: bool) -> bool:
        rest = self.text[self.pos :]
        return top and (rest in ("", "$") or rest.startswith(("|", "$|")))

    @staticmethod
    def _template(variant: _Variant) -> Template:
        parts: list[str] = []
        synthetic: dict[str, str] = {}
        previous_synthetic: _Param | None = None
        for piece in variant:
            if isinstance(piece, _Param) and piece.synthetic:
                if previous_synthetic is not None:  # one parameter for a run of regex
                    synthetic[previous_synthetic.name] += piece.regex
                    continue
                previous_synthetic = piece
                synthetic[piece.name] = piece.regex
                parts.append("{" + piece.name + "}")
                continue
            previous_synthetic = None
            parts.append("{" + piece.name + "}" if isinstance(piece, _Param) else piece)
        text = re.sub(r"/{2,}", "/", "".join(parts)).strip("/")
        return Template(text, synthetic)


def render_pattern(pattern: str) -> list[Template]:
    """The readable templates of a path regex (see the module docstring)."""
    try:
        return _Renderer(pattern).render()
    except _Unrenderable:
        # Too many choices or an unbalanced pattern: the whole pattern is one parameter.
        return [Template("{param}", {"param": pattern})]


def path_parameter_names(url: str) -> list[str]:
    """``{name}`` parameters of an OpenAPI path, in order, without repeats."""
    return list(dict.fromkeys(_PARAMETER.findall(url)))


# -- documents ---------------------------------------------------------------------


_OPERATION_VERBS = {
    Operation.READ: "read",
    Operation.LIST: "list",
    Operation.CREATE: "write",
    Operation.UPDATE: "write",
    Operation.PATCH: "patch",
    Operation.DELETE: "delete",
}
_SECURITY = "token"
_TOKEN_SCHEME = {
    "type": "apiKey",
    "in": "header",
    "name": "X-Vault-Token",
    "description": "A client token (X-Service-Token and Authorization: Bearer work too).",
}
_ERROR_SCHEMA = "ErrorResponse"
_LIST_SCHEMA = "ListResponse"
_ENVELOPE_SCHEMA = "Envelope"
_JSON = "application/json"


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


#: Every error the API answers is ``{"errors": [...]}`` (the HTTP layer's own 4xx too).
_SHARED_SCHEMAS: dict[str, Any] = {
    _ERROR_SCHEMA: {
        "type": "object",
        "description": "An error: one message per problem.",
        "properties": {"errors": {"type": "array", "items": {"type": "string"}}},
        "required": ["errors"],
    },
    _ENVELOPE_SCHEMA: {
        "type": "object",
        "description": (
            "The response envelope. A few system paths answer a bare document instead "
            "(the OpenAPI document, generate-root status, metrics), so no key is required."
        ),
        "properties": {
            "request_id": {"type": "string"},
            "lease_id": {"type": "string"},
            "renewable": {"type": "boolean"},
            "lease_duration": {"type": "integer"},
            "data": {"type": "object", "nullable": True},
            "wrap_info": {"type": "object", "nullable": True},
            "warnings": {"type": "array", "items": {"type": "string"}, "nullable": True},
            "auth": {"type": "object", "nullable": True},
        },
    },
    _LIST_SCHEMA: {
        "type": "object",
        "description": "The response envelope of a LIST: the names found under the path.",
        "properties": {
            "data": {
                "type": "object",
                "properties": {"keys": {"type": "array", "items": {"type": "string"}}},
                "required": ["keys"],
            },
        },
        "required": ["data"],
    },
}
_ERRORS = {
    "400": "Invalid request: a parameter is missing, malformed or out of range",
    "403": "Permission denied: no token, an invalid token, or no capability on the path",
    "404": "Nothing at this path",
    "405": "The path does not support this operation",
}
#: Writes can also meet a state that forbids them (a namespace that still has children).
_WRITE_ERRORS = {**_ERRORS, "409": "The target's state forbids the change"}
_PATCH_ERRORS = {"415": "The body is not sent as application/merge-patch+json"}


def _error_responses(errors: Mapping[str, str]) -> dict[str, Any]:
    return {
        code: {"description": text, "content": {_JSON: {"schema": _ref(_ERROR_SCHEMA)}}}
        for code, text in errors.items()
    }


_OK = {"description": "OK", "content": {_JSON: {"schema": _ref(_ENVELOPE_SCHEMA)}}}
_WRITE_RESPONSES = {
    "200": _OK,
    "204": {"description": "Success, no body"},
    **_error_responses(_WRITE_ERRORS),
}
_READ_RESPONSES = {"200": _OK, **_error_responses(_ERRORS)}
_LIST_RESPONSES = {
    "200": {"description": "The keys found", "content": {_JSON: {"schema": _ref(_LIST_SCHEMA)}}},
    **_error_responses(_ERRORS),
}
#: Query parameters the HTTP layer consumes itself; never documented as fields.
_RESERVED_QUERY = frozenset({"list", "help"})


def _fit_default(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop or convert a ``default`` that does not fit the schema's type."""
    if "default" not in schema:
        return schema
    default = schema["default"]
    kind = schema.get("type")
    fits = {
        "string": isinstance(default, str),
        "integer": isinstance(default, int) and not isinstance(default, bool),
        "boolean": isinstance(default, bool),
        "object": isinstance(default, dict),
        "array": isinstance(default, list),
    }.get(str(kind), True)
    if fits:
        return schema
    schema = dict(schema)
    if kind == "string" and isinstance(default, (int, float)) and not isinstance(default, bool):
        schema["default"] = str(default)
    else:
        del schema["default"]
    return schema


def field_schema(field: Field) -> dict[str, Any]:
    return _fit_default(field.openapi())


def _words(text: str) -> str:
    return "-".join(re.findall(r"[A-Za-z0-9]+", text)).lower()


def _pascal(text: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.findall(r"[A-Za-z0-9]+", text))


class DocumentBuilder:
    """Accumulates paths into one OpenAPI document with unique operation ids.

    ``version`` is the server's version (passed in: the framework does not
    import the core).
    """

    def __init__(self, version: str) -> None:
        self.version = version
        self.paths: dict[str, dict[str, Any]] = {}
        self.schemas: dict[str, Any] = {}
        self.tags: set[str] = set()
        self._operation_ids: set[str] = set()

    def add(
        self,
        entry: Path,
        url: str,
        *,
        name: str,
        tag: str,
        synthetic: Mapping[str, str] | None = None,
        extra_parameters: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        """Document ``entry`` at ``url`` (an OpenAPI path, starting with ``/``).

        ``name`` is a readable absolute form of the path (e.g.
        ``secret/data/{path}``) that operation ids are made from.
        ``extra_parameters`` describes ``{parameters}`` of ``url`` that are
        not the row's own (e.g. ``{kv_mount_path}``). When ``url`` is already
        documented, only methods it lacks are added.
        """
        synthetic = synthetic or {}
        extra = extra_parameters or {}
        captured = set(re.findall(r"\(\?P<(\w+)>", entry.pattern)) | set(synthetic)
        item = self.paths.setdefault(url, {})
        if "description" not in item and (entry.description or entry.summary):
            item["description"] = entry.description or entry.summary
        if entry.unauthenticated:
            item["x-vault-unauthenticated"] = True
        if entry.sudo:
            item["x-vault-sudo"] = True
        if entry.exists is not None:
            item["x-vault-createSupported"] = True
        if "parameters" not in item:
            parameters = [
                self._path_parameter(p, entry, synthetic, extra) for p in path_parameter_names(url)
            ]
            if parameters:
                item["parameters"] = parameters
        self.tags.add(tag)

        operations = set(entry.operations)
        if Operation.CREATE in operations:
            operations.add(Operation.UPDATE)
        body_fields = {
            n: f for n, f in entry.fields.items() if n not in captured and n not in _RESERVED_QUERY
        }
        writes = bool(operations & {Operation.UPDATE, Operation.PATCH})
        base = _words(name) or "root"
        if (Operation.READ in operations or Operation.LIST in operations) and "get" not in item:
            item["get"] = self._get(entry, operations, base, tag, {} if writes else body_fields)
        if Operation.UPDATE in operations and "post" not in item:
            item["post"] = self._write(entry, "write", base, tag, body_fields, "application/json")
        if Operation.PATCH in operations and "patch" not in item:
            item["patch"] = self._write(
                entry, "patch", base, tag, body_fields, "application/merge-patch+json"
            )
            item["patch"]["responses"].update(_error_responses(_PATCH_ERRORS))
        if Operation.DELETE in operations and "delete" not in item:
            op = self._operation(entry, "delete", base, tag, _WRITE_RESPONSES)
            if not writes and body_fields:
                op["parameters"] = _query_parameters(body_fields)
            item["delete"] = op
        if not any(m in item for m in ("get", "post", "patch", "delete")):
            del self.paths[url]  # no documentable operation (e.g. HEADER only)

    def _path_parameter(
        self,
        name: str,
        entry: Path,
        synthetic: Mapping[str, str],
        extra: Mapping[str, Mapping[str, Any]],
    ) -> dict[str, Any]:
        if name in extra:
            return {"name": name, "in": "path", "required": True, **extra[name]}
        parameter: dict[str, Any] = {"name": name, "in": "path", "required": True}
        field = entry.fields.get(name)
        if name in synthetic:
            parameter["description"] = f"Matches the regular expression `{synthetic[name]}`."
        elif field is not None and field.description:
            parameter["description"] = field.description
        parameter["schema"] = {"type": "string"}
        return parameter

    def _operation(
        self, entry: Path, verb: str, base: str, tag: str, responses: Mapping[str, Any]
    ) -> dict[str, Any]:
        op: dict[str, Any] = {}
        if entry.summary:
            op["summary"] = entry.summary
        op["operationId"] = self._operation_id(f"{verb}-{base}")
        op["tags"] = [tag]
        op["responses"] = copy.deepcopy(dict(responses))
        if entry.unauthenticated:
            op["security"] = [{}]  # no token needed (one is still accepted)
        return op

    def _get(
        self,
        entry: Path,
        operations: set[Operation],
        base: str,
        tag: str,
        query_fields: Mapping[str, Field],
    ) -> dict[str, Any]:
        reads = Operation.READ in operations
        responses = _READ_RESPONSES if reads else _LIST_RESPONSES
        op = self._operation(entry, "read" if reads else "list", base, tag, responses)
        parameters = _query_parameters(query_fields)
        if Operation.LIST in operations:
            list_parameter: dict[str, Any] = {
                "name": "list",
                "in": "query",
                "description": "Return a list if `true`" if reads else "Must be set to `true`",
                "required": not reads,
                "schema": {"type": "string", "enum": ["true"]} if not reads else {"type": "string"},
            }
            parameters.insert(0, list_parameter)
        if parameters:
            op["parameters"] = parameters
        return op

    def _write(
        self,
        entry: Path,
        verb: str,
        base: str,
        tag: str,
        fields: Mapping[str, Field],
        content_type: str,
    ) -> dict[str, Any]:
        op = self._operation(entry, verb, base, tag, _WRITE_RESPONSES)
        if fields or entry.free_form:
            schema: dict[str, Any] = {
                "type": "object",
                "properties": {n: field_schema(f) for n, f in fields.items()},
            }
            required = [n for n, f in fields.items() if f.required]
            if required:
                schema["required"] = required
            if entry.free_form:
                schema["additionalProperties"] = True
            schema_name = self._schema_name(_pascal(op["operationId"]) + "Request")
            self.schemas[schema_name] = schema
            reference = {"$ref": f"#/components/schemas/{schema_name}"}
            op["requestBody"] = {
                "required": bool(required),
                "content": {content_type: {"schema": reference}},
            }
        return op

    def _operation_id(self, wanted: str) -> str:
        candidate, index = wanted, 1
        while candidate in self._operation_ids:
            index += 1
            candidate = f"{wanted}-{index}"
        self._operation_ids.add(candidate)
        return candidate

    def _schema_name(self, wanted: str) -> str:
        candidate, index = wanted, 1
        while candidate in self.schemas:
            index += 1
            candidate = f"{wanted}{index}"
        return candidate

    def document(self) -> dict[str, Any]:
        return {
            "openapi": OPENAPI_VERSION,
            "info": {
                "title": _TITLE,
                "description": _DESCRIPTION,
                "version": self.version,
                "license": dict(_LICENSE),
            },
            "tags": [{"name": tag} for tag in sorted(self.tags)],
            "paths": {url: self.paths[url] for url in sorted(self.paths)},
            "components": {
                "schemas": dict(sorted({**_SHARED_SCHEMAS, **self.schemas}.items())),
                "securitySchemes": {_SECURITY: dict(_TOKEN_SCHEME)},
            },
            # Every operation needs a token unless it says otherwise.
            "security": [{_SECURITY: []}],
        }


def _query_parameters(fields: Mapping[str, Field]) -> list[dict[str, Any]]:
    parameters: list[dict[str, Any]] = []
    for name, field in fields.items():
        if name in _RESERVED_QUERY or field.type in (FieldType.MAP, FieldType.ANY):
            continue  # objects cannot be sent in a query string
        parameter: dict[str, Any] = {"name": name, "in": "query"}
        if field.description:
            parameter["description"] = field.description
        if field.required:
            parameter["required"] = True
        parameter["schema"] = field_schema(field)
        parameters.append(parameter)
    return parameters
