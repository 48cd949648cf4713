"""HTTP → ``Request``: verbs, query strings, bodies and the Vault-compatible headers."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import json
import re
from collections.abc import Callable, Iterator
from typing import Any, TypeVar
from urllib.parse import parse_qsl

import orjson
from aiohttp import web
from aiohttp.web_protocol import RequestPayloadError

from api.keys import LIMITS
from node import jsoncodec
from node.errors import InvalidRequestError, MethodNotAllowedError
from node.framework.fields import parse_duration
from node.logical.request import Operation, Request

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


#: Deepest nesting of objects and arrays accepted in a body (the reference's
#: ``max_json_depth`` default); deeper input would exhaust the recursion limit
#: of whatever later walks the value.
MAX_JSON_DEPTH = 500

#: A body is parsed inside this many arrays, so that orjson's own nesting limit
#: (1024) refuses a body nested deeper than :data:`MAX_JSON_DEPTH` while parsing:
#: no walk over the value afterwards, which cost seconds on a few megabytes.
_ORJSON_DEPTH = 1024
_PAD = _ORJSON_DEPTH - MAX_JSON_DEPTH
_OPEN, _CLOSE = b"[" * _PAD, b"]" * _PAD
#: As ``node.jsoncodec``: a run of digits that may be an integer beyond 64 bits,
#: which only the standard library reads exactly.
_LONG_DIGITS = re.compile(rb"[0-9]{19}")

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


class _TooDeep(InvalidRequestError):
    def __init__(self) -> None:
        super().__init__(f"failed to parse JSON input: nesting deeper than {MAX_JSON_DEPTH} levels")


class _BodyTooLarge(InvalidRequestError):
    status = 413

    def __init__(self) -> None:
        super().__init__("request body too large")


class _BodyTimeout(InvalidRequestError):
    status = 408

    def __init__(self) -> None:
        super().__init__("timed out reading the request body")


def _too_deep(value: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


async def _read_raw(request: web.Request) -> bytes:
    """The whole body, within the request's limit (413) and the listener's
    ``http_read_timeout`` (408)."""
    limit = request.get(BODY_LIMIT, UNAUTHENTICATED_BODY_LIMIT)
    length = request.content_length
    if length is not None and length > limit:
        raise _BodyTooLarge()
    timeout = request.app[LIMITS].read_timeout or None
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout):
            async for chunk in request.content.iter_any():
                size += len(chunk)
                if size > limit:
                    raise _BodyTooLarge()
                chunks.append(chunk)
    except TimeoutError:
        raise _BodyTimeout() from None
    except RequestPayloadError as exc:
        # e.g. a body that does not decode under its Content-Encoding, or bad chunking
        detail = getattr(exc.__cause__, "message", "") or "malformed body"
        raise InvalidRequestError(f"failed to read the request body: {detail}") from exc
    return b"".join(chunks)


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


def decode_json(raw: bytes) -> Any:
    """A body's JSON (``node.jsoncodec.loads``: orjson, exact as the standard library)."""
    return jsoncodec.loads(raw)


def decode_bounded(raw: bytes) -> Any:
    """:func:`decode_json`, refusing nesting deeper than :data:`MAX_JSON_DEPTH` while
    parsing (inside :data:`_PAD` arrays, orjson's limit falls at the right depth)."""
    with _gc_paused(len(raw)):
        return _decode(raw)


def _decode(raw: bytes) -> Any:
    try:
        value = _padded_loads(raw)
    except orjson.JSONDecodeError:
        return _decode_rare(raw)  # what orjson does not read as the standard library does
    if _LONG_DIGITS.search(raw):
        return decode_json(raw)  # integers beyond 64 bits, read exactly
    return value


def _padded_loads(raw: bytes) -> Any:
    """orjson's reading of ``raw`` inside :data:`_PAD` arrays, unwrapped; ``_TooDeep``
    past the depth limit, ``JSONDecodeError`` for anything else it refuses."""
    try:
        value = orjson.loads(b"".join((_OPEN, raw, _CLOSE)))
    except orjson.JSONDecodeError as exc:
        if str(exc).startswith("depth limit exceeded"):
            raise _TooDeep() from None
        raise
    for _ in range(_PAD):
        # A body such as ``1],[2`` parses once padded: each level must hold one item.
        if not isinstance(value, list) or len(value) != 1:
            raise orjson.JSONDecodeError("not one JSON value", "", 0)
        value = value[0]
    return value


#: A ``\uXXXX`` escape of a UTF-16 surrogate: orjson refuses a lone one, the
#: standard library reads it.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _decode_rare(raw: bytes) -> Any:
    """The standard library's reading (BOMs, UTF-16 and UTF-32, lone surrogates, and
    every syntax error). The depth is checked first, by orjson, on the body made
    readable to it (UTF-8 without a BOM, surrogate escapes replaced): the same
    structure, so the same depth, with no walk over a value afterwards."""
    try:
        encoding = json.detect_encoding(raw)
        canonical = raw if encoding == "utf-8" else raw.decode(encoding).encode("utf-8")
        _padded_loads(_SURROGATE_ESCAPE.sub(rb"\\u0020", canonical))
        checked = True
    except (orjson.JSONDecodeError, UnicodeError):
        checked = False  # the standard library refuses it too, in all but odd cases
    try:
        value = decode_json(raw)
    except RecursionError as exc:
        raise _TooDeep() from exc
    if not checked and _too_deep(value, MAX_JSON_DEPTH):
        raise _TooDeep()
    return value


#: Bodies from this size are parsed with the cyclic garbage collector paused: a
#: parse makes no cycles, yet each collection during it walks the growing value
#: (a third of the time of a wide 1 MiB body).
_GC_PAUSE_BYTES = 64 * 1024


@contextlib.contextmanager
def _gc_paused(size: int) -> Iterator[None]:
    if size < _GC_PAUSE_BYTES or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


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
