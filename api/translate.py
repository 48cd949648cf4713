"""HTTP → ``Request``: verbs, query strings, bodies and the Vault-compatible headers."""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import parse_qsl

from aiohttp import web
from aiohttp.web_protocol import RequestPayloadError

from api.json_body import decode_bounded, decode_json
from api.keys import FORWARDED_FROM, LIMITS
from node.framework.fields import parse_duration
from node.logical.request import Operation, Request
from sdk.errors import InvalidRequestError, MethodNotAllowedError

__all__ = [
    "BODY_LIMIT",
    "decode_bounded",
    "decode_json",
    "header",
    "operation_of",
    "read_json_body",
    "read_raw_body",
    "to_request",
]

_TRUE = ("", "true", "1", "t")
_T = TypeVar("_T")


@functools.cache
def _header_names(suffix: str) -> tuple[str, str]:
    """Both spellings of a header, built once per suffix (a few fixed names in code)."""
    return f"X-Service-{suffix}", f"X-Vault-{suffix}"


def header(request: web.Request, suffix: str) -> str:
    """``X-Service-<suffix>``, falling back to ``X-Vault-<suffix>`` for Vault clients."""
    service, vault = _header_names(suffix)
    headers = request.headers
    return headers.get(service) or headers.get(vault) or ""


def client_token(request: web.Request) -> str:
    token = header(request, "Token")
    if not token:
        authorization = request.headers.get("Authorization", "")
        scheme, _, value = authorization.partition(" ")
        token = value if scheme.lower() == "bearer" else ""
    token = token.strip()
    try:
        token.encode()
    except UnicodeEncodeError:
        # Header bytes that are not UTF-8 arrive surrogate-escaped; no token has them.
        return ""
    return token


#: Bodies larger than this are parsed in a worker thread (docs/security.md,
#: "Event-loop stalls", says what that does and does not buy under the GIL).
OFF_LOOP_BYTES = 256 * 1024

#: The most a request without a live client token may send (logins, unseal,
#: init, join): ample for any of them (a JWT login is a few KiB), small enough
#: that whatever it holds is parsed in milliseconds (docs/security.md).
UNAUTHENTICATED_BODY_LIMIT = 256 * 1024

#: How much body this request may send: set by ``api/preauth.py`` once the
#: client token is known to be live; otherwise :data:`UNAUTHENTICATED_BODY_LIMIT`.
BODY_LIMIT = web.RequestKey("body_limit", int)


class _BodyTooLarge(InvalidRequestError):
    status = 413

    def __init__(self) -> None:
        super().__init__("request body too large")


class _BodyTimeout(InvalidRequestError):
    status = 408

    def __init__(self) -> None:
        super().__init__("timed out reading the request body")


#: A body some earlier step already took off the stream (the forwarding check),
#: so that the handler reads the same bytes instead of an exhausted stream.
_READ_BODY = web.RequestKey("read_body", bytes)


def remember_body(request: web.Request, body: bytes) -> None:
    """Record ``body`` as ``request``'s, for readers after the one that consumed it."""
    request[_READ_BODY] = body


async def _read_raw(request: web.Request) -> bytes:
    """The whole body, within the request's limit (413) and the listener's
    ``http_read_timeout`` (408)."""
    if _READ_BODY in request:
        return request[_READ_BODY]
    limit = request.get(BODY_LIMIT, min(UNAUTHENTICATED_BODY_LIMIT, request.client_max_size))
    length = request.content_length
    if length is not None and length > limit:
        raise _BodyTooLarge()
    content = request.content
    if content.is_eof():
        # Already whole in the buffer (a small body arrives with its header): no
        # deadline to keep and nothing to wait for.
        try:
            body = content.read_nowait()
        except RequestPayloadError as exc:
            raise _payload_error(exc) from exc
        if len(body) > limit:
            raise _BodyTooLarge()
        return body
    timeout = request.app[LIMITS].read_timeout or None
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout):
            async for chunk in content.iter_any():
                size += len(chunk)
                if size > limit:
                    raise _BodyTooLarge()
                chunks.append(chunk)
    except TimeoutError:
        raise _BodyTimeout() from None
    except RequestPayloadError as exc:
        raise _payload_error(exc) from exc
    return b"".join(chunks)


def _payload_error(exc: RequestPayloadError) -> InvalidRequestError:
    # e.g. a body that does not decode under its Content-Encoding, or bad chunking
    detail = getattr(exc.__cause__, "message", "") or "malformed body"
    return InvalidRequestError(f"failed to read the request body: {detail}")


async def read_raw_body(request: web.Request) -> bytes:
    """The body as bytes (a snapshot), with :func:`read_json_body`'s limits."""
    return await _read_raw(request)


async def read_json_body(request: web.Request) -> dict[str, Any]:
    """The body as a JSON object; empty means ``{}``."""
    return await _off_loop_if_large(_parse_json_object, await _read_raw(request))


async def _off_loop_if_large(parse: Callable[[bytes], _T], raw: bytes) -> _T:
    if len(raw) <= OFF_LOOP_BYTES:
        return parse(raw)
    return await asyncio.to_thread(parse, raw)


def _parse_json_object(raw: bytes) -> dict[str, Any]:
    if not raw.strip():
        return {}
    try:
        parsed = decode_bounded(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidRequestError(f"failed to parse JSON input: {exc}") from exc
    if not isinstance(parsed, dict):
        raise InvalidRequestError("the request body must be a JSON object")
    return parsed


FORM_CONTENT_TYPE = "application/x-www-form-urlencoded"
#: How much of a body is looked at to tell JSON sent with a form content type
#: (``curl -d '{...}'``) from a real form, as the reference does.
_FORM_SNIFF_BYTES = 512
_BAD_PERCENT_ESCAPE = re.compile(rb"%(?![0-9A-Fa-f]{2})")


def _is_form(raw: bytes, content_type: str) -> bool:
    """A form only if declared as one and the body does not start like JSON.

    Clients have never had to send a Content-Type, and ``curl -d`` labels JSON as
    a form, so JSON wins unless the body clearly is not JSON.
    """
    if content_type != FORM_CONTENT_TYPE:
        return False
    head = raw[:_FORM_SNIFF_BYTES].lstrip(b" \t\r\n")
    return not head.startswith((b"{", b"["))


def _parse_form(raw: bytes) -> dict[str, Any]:
    """``application/x-www-form-urlencoded`` fields; a repeated field is comma-joined."""
    if _BAD_PERCENT_ESCAPE.search(raw):
        raise InvalidRequestError("error parsing form data: invalid percent-encoding")
    try:
        text = raw.decode("utf-8")
        pairs = parse_qsl(text, keep_blank_values=True, encoding="utf-8", errors="strict")
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidRequestError(f"error parsing form data: {exc}") from exc
    fields: dict[str, list[str]] = {}
    for key, value in pairs:
        if key:
            fields.setdefault(key, []).append(value)
    return {key: ",".join(values) for key, values in fields.items()}


async def read_logical_body(request: web.Request) -> dict[str, Any]:
    """A write's body: JSON, or form fields when it is really a form."""
    raw = await _read_raw(request)
    if _is_form(raw, request.content_type):
        return await _off_loop_if_large(_parse_form, raw)
    return await _off_loop_if_large(_parse_json_object, raw)


def _query_data(request: web.Request) -> dict[str, Any]:
    """Query parameters as request data; a repeated parameter becomes a list."""
    data: dict[str, Any] = {}
    for key in request.query:
        if key in ("list", "help") or key in data:
            continue
        values = request.query.getall(key)
        data[key] = values[0] if len(values) == 1 else list(values)
    return data


def operation_of(request: web.Request) -> Operation:
    """The logical operation an HTTP request asks for (405/415 for what none is)."""
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


async def to_request(
    request: web.Request, path: str, request_id: str, operation: Operation | None = None
) -> Request:
    if operation is None:
        operation = operation_of(request)
    data: dict[str, Any] = {}
    if operation is Operation.UPDATE:
        data = await read_logical_body(request)
    elif operation is Operation.PATCH:
        data = await read_json_body(request)
    elif operation in (Operation.READ, Operation.LIST, Operation.DELETE):
        data = _query_data(request)
    if operation is Operation.LIST and not path.endswith("/"):
        path += "/"
    wrap_ttl = 0
    if raw_ttl := header(request, "Wrap-TTL"):
        wrap_ttl = parse_duration(raw_ttl, "wrap TTL")
        if wrap_ttl < 0:
            raise InvalidRequestError("wrap TTL must not be negative")
    return client_request(request, operation, path, request_id, data, wrap_ttl)


def client_request(
    request: web.Request,
    operation: Operation,
    path: str,
    request_id: str,
    data: dict[str, Any] | None = None,
    wrap_ttl: int = 0,
) -> Request:
    """The core's request with what every HTTP request carries (token, namespace,
    client address, the relaying standby): one place to add such a field."""
    return Request(
        operation=operation,
        path=path,
        data={} if data is None else data,
        id=request_id,
        client_token=client_token(request),
        namespace=header(request, "Namespace").strip("/"),
        remote_addr=request.remote or "",
        wrap_ttl=wrap_ttl,
        forwarded_from=request.get(FORWARDED_FROM, ""),
    )
