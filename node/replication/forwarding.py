"""Writes a performance secondary forwards to the primary's active node.

The secondary has checked the client's token and ACL (the token is its own;
the primary does not know it); the request goes over a mutual-TLS connection
with the secondary's certificate, runs on the primary without a token, and
the answer carries the primary's applied index. The secondary answers once its
stream has applied that index, or after :data:`WAL_WAIT` with a warning (the
reference's ``best_effort_wal_wait_duration``), so a client reads its own
write there.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from node.logical.request import Operation, Request
from node.logical.response import Login, Response
from node.replication.frames import FrameError
from sdk.errors import CofferError

__all__ = [
    "WAL_WAIT",
    "ForwardedError",
    "dynamic_filter_from",
    "login_link_from",
    "login_link_to",
    "request_from",
    "request_to",
    "response_from",
    "response_to",
]

WAL_WAIT = 2.0


class ForwardedError(CofferError):
    """The primary's refusal of a forwarded request, with its status."""

    def __init__(self, status: int, messages: list[str]) -> None:
        super().__init__(*messages)
        self.status = status


def request_to(request: Request) -> dict[str, Any]:
    return {
        "operation": request.operation.value,
        "path": request.path,
        "namespace": request.namespace,
        "data": dict(request.data),
        "id": request.id,
    }


def request_from(raw: dict[str, Any]) -> Request:
    data = raw.get("data")
    return Request(
        Operation(str(raw["operation"])),
        str(raw["path"]),
        data=data if isinstance(data, dict) else {},
        id=str(raw.get("id", "")),
        namespace=str(raw.get("namespace", "")),
    )


def response_to(response: Response, index: int) -> dict[str, Any]:
    return {
        "type": "forwarded",
        "data": response.data,
        "warnings": list(response.warnings),
        "index": index,
    }


def error_to(error: CofferError) -> dict[str, Any]:
    return {"type": "forwarded", "status": error.status, "errors": list(error.messages)}


def response_from(raw: dict[str, Any]) -> tuple[Response, int]:
    if "status" in raw:
        raise ForwardedError(int(raw["status"]), [str(e) for e in raw.get("errors") or []])
    data = raw.get("data")
    return (
        Response(
            data=data if isinstance(data, dict) else None,
            warnings=[str(w) for w in raw.get("warnings") or []],
        ),
        int(raw.get("index", 0)),
    )


async def wait_applied(current: Any, index: int, timeout: float = WAL_WAIT) -> bool:
    """Poll ``current()`` (the last applied remote WAL) until it reaches ``index``."""
    deadline = time.monotonic() + timeout
    while current() < index:
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.01)
    return True


def login_link_to(namespace_id: str, mount_accessor: str, login: Login) -> dict[str, Any]:
    """What the primary needs to link a secondary's login to an entity: the alias
    (mount accessor and name), its metadata and the external group names. The
    token settings and policies stay on the secondary, which mints the token."""
    return {
        "namespace_id": namespace_id,
        "mount_accessor": mount_accessor,
        "alias_name": login.alias_name,
        "alias_metadata": dict(login.alias_metadata),
        "group_aliases": list(login.group_aliases),
    }


def _strings(raw: Any, name: str) -> dict[str, str]:
    if not isinstance(raw, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in raw.items()
    ):
        raise FrameError(f"{name} must map strings to strings")
    return dict(raw)


def login_link_from(raw: Any) -> tuple[str, str, Login]:
    """The namespace id, mount accessor and a ``Login`` (without token settings) of
    an ``identity-link`` frame; anything malformed is a :class:`FrameError`."""
    if not isinstance(raw, dict):
        raise FrameError("identity-link needs an object")
    fields = {k: raw.get(k) for k in ("namespace_id", "mount_accessor", "alias_name")}
    for name, value in fields.items():
        if not isinstance(value, str):
            raise FrameError(f"{name} must be a string")
    if not fields["mount_accessor"] or not fields["alias_name"]:
        raise FrameError("mount_accessor and alias_name must not be empty")
    groups = raw.get("group_aliases")
    if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
        raise FrameError("group_aliases must be a list of strings")
    login = Login(
        alias_name=str(fields["alias_name"]),
        policies=[],
        token=None,
        alias_metadata=_strings(raw.get("alias_metadata"), "alias_metadata"),
        group_aliases=list(groups),
    )
    return str(fields["namespace_id"]), str(fields["mount_accessor"]), login


_FILTER_FIELDS = ("dynamic_filtered_mounts", "dynamic_filtered_namespaces")


def dynamic_filter_from(raw: dict[str, Any]) -> dict[str, list[str]]:
    """The primary's answer to a secondary's ``dynamic-filter`` question (or its refusal,
    raised as :class:`ForwardedError`); anything else is a :class:`FrameError`."""
    if raw.get("type") == "forwarded" and "status" in raw:
        errors = raw.get("errors")
        messages = [str(e) for e in errors] if isinstance(errors, list) else []
        status = raw["status"]
        if not isinstance(status, int) or isinstance(status, bool) or not 400 <= status < 600:
            raise FrameError("a refusal needs an HTTP error status")
        raise ForwardedError(status, messages or ["the primary refused"])
    if raw.get("type") != "dynamic-filter":
        raise FrameError(f"unexpected frame {raw.get('type')!r}")
    out: dict[str, list[str]] = {}
    for name in _FILTER_FIELDS:
        value = raw.get(name)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise FrameError(f"{name} must be a list of strings")
        out[name] = list(value)
    return out
