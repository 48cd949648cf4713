"""Rendering of core ``Response`` values as the JSON envelope."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from node.logical.response import Response
from sdk import jsoncodec

__all__ = ["encode_json", "error_response", "json_response", "render"]

_HEADERS = {"Cache-Control": "no-store"}


def encode_json(body: Any) -> bytes:
    """Compact UTF-8 JSON (``sdk.jsoncodec.dumps``: orjson, exact as the standard library)."""
    return jsoncodec.dumps(body)


def json_response(body: Any, status: int = 200) -> web.Response:
    return web.Response(
        body=encode_json(body),
        status=status,
        content_type="application/json",
        headers=_HEADERS,
    )


def error_response(
    status: int, messages: list[str], warnings: list[str] | None = None
) -> web.Response:
    body: dict[str, Any] = {"errors": messages}
    if warnings:
        body["warnings"] = warnings
    return json_response(body, status)


def render(response: Response, request_id: str) -> web.Response:
    if response.raw is not None:
        if isinstance(response.raw, bytes):
            return web.Response(
                body=response.raw,
                status=response.status or 200,
                headers={**_HEADERS, "Content-Type": response.raw_content_type},
            )
        return json_response(response.raw, response.status or 200)
    if response.is_empty:
        return web.Response(status=response.status or 204, headers=_HEADERS)
    body: dict[str, Any] = {
        "request_id": request_id,
        "lease_id": response.lease_id,
        "renewable": response.renewable,
        "lease_duration": response.lease_duration,
        "data": response.data,
        "wrap_info": None,
        "warnings": response.warnings or None,
        "auth": response.auth.to_json() if response.auth else None,
    }
    if response.wrap_info is not None:
        info = response.wrap_info
        body["data"] = None
        body["wrap_info"] = {
            "token": info.token,
            "accessor": info.accessor,
            "ttl": info.ttl,
            "creation_time": info.creation_time,
            "creation_path": info.creation_path,
            "wrapped_accessor": info.wrapped_accessor,
        }
    if response.top_level_data and response.data:
        body = {**response.data, **body}
    status = response.status or 200
    if status >= 400:
        body["errors"] = []
    return json_response(body, status)
