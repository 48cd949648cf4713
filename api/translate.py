"""HTTP → ``Request``: verbs, query strings, bodies and the Vault-compatible headers."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from node.errors import InvalidRequestError, MethodNotAllowedError
from node.framework.fields import parse_duration
from node.logical.request import Operation, Request

__all__ = ["header", "read_json_body", "to_request"]

_TRUE = ("", "true", "1", "t")


def header(request: web.Request, suffix: str) -> str:
    """``X-Service-<suffix>``, falling back to ``X-Vault-<suffix>`` for Vault clients."""
    return (
        request.headers.get(f"X-Service-{suffix}") or request.headers.get(f"X-Vault-{suffix}") or ""
    )


def client_token(request: web.Request) -> str:
    token = header(request, "Token")
    if token:
        return token.strip()
    authorization = request.headers.get("Authorization", "")
    scheme, _, value = authorization.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


async def read_json_body(request: web.Request) -> dict[str, Any]:
    """The body as a JSON object; empty means ``{}``. Over-size raises 413 in aiohttp."""
    raw = await request.read()
    if not raw.strip():
        return {}
    try:
        parsed = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidRequestError(f"failed to parse JSON input: {exc}") from exc
    if not isinstance(parsed, dict):
        raise InvalidRequestError("the request body must be a JSON object")
    return parsed


def _operation(request: web.Request) -> Operation:
    method = request.method.upper()
    query = request.query
    if method == "HELP" or "help" in query:
        return Operation.HELP
    if method == "LIST":
        return Operation.LIST
    if method in ("GET", "HEAD"):
        if query.get("list", "false").lower() in _TRUE and "list" in query:
            return Operation.LIST
        return Operation.READ
    if method in ("POST", "PUT"):
        return Operation.UPDATE
    if method == "DELETE":
        return Operation.DELETE
    if method == "PATCH":
        if request.content_type != "application/merge-patch+json":
            raise _UnsupportedMediaType()
        return Operation.PATCH
    raise MethodNotAllowedError(f"unsupported HTTP method {method}")


class _UnsupportedMediaType(InvalidRequestError):
    status = 415

    def __init__(self) -> None:
        super().__init__("PATCH requires Content-Type: application/merge-patch+json")


async def to_request(request: web.Request, path: str, request_id: str) -> Request:
    operation = _operation(request)
    data: dict[str, Any] = {}
    if operation in (Operation.UPDATE, Operation.PATCH):
        data = await read_json_body(request)
    elif operation in (Operation.READ, Operation.LIST, Operation.DELETE):
        data = {k: v for k, v in request.query.items() if k not in ("list", "help")}
    if operation is Operation.LIST and not path.endswith("/"):
        path += "/"
    wrap_ttl = 0
    if raw_ttl := header(request, "Wrap-TTL"):
        wrap_ttl = parse_duration(raw_ttl, "wrap TTL")
        if wrap_ttl < 0:
            raise InvalidRequestError("wrap TTL must not be negative")
    return Request(
        operation=operation,
        path=path,
        data=data,
        id=request_id,
        client_token=client_token(request),
        namespace=header(request, "Namespace").strip("/"),
        remote_addr=request.remote or "",
        wrap_ttl=wrap_ttl,
    )
