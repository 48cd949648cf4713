"""The request and response entries, in the reference's field layout.

Fields appear in the order the reference's JSON writes them and, as there,
empty ones are left out (``omitempty``); ``auth`` is always present on both
entries. Unless ``log_raw`` is set, every secret-bearing string becomes
``hmac-sha256:<hex>`` under the device's salt: client tokens, accessors
(unless ``hmac_accessor`` is false), wrapping tokens, and every string value
of request and response data. Display names, policies, paths and errors are
written as they are, as the reference does.

A request forwarded between nodes is marked as the reference's Enterprise
edition marks it: the active node's request entry names the standby it came
from (``forwarded_from``), and every response entry of such a request, on
either node, says ``forwarded``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from node.audit.hashing import elide_list, hash_values
from node.audit.options import FormatOptions
from node.logical.request import Request
from node.logical.response import Auth, Response
from node.tokens.entry import TokenEntry
from sdk import jsoncodec

__all__ = ["AuditInput", "request_entry", "response_entry", "rfc3339"]


@dataclass(frozen=True, slots=True)
class AuditInput:
    """What the pipeline knows of one request when it is logged.

    ``path`` is relative to the namespace and includes the mount (the
    reference's ``request.path``); the mount fields are empty until routed.
    """

    request: Request
    path: str
    namespace_id: str = ""
    namespace_path: str = ""
    operation: str = ""
    token: TokenEntry | None = None
    identity_policies: list[str] = field(default_factory=list)
    mount_point: str = ""
    mount_type: str = ""
    mount_accessor: str = ""
    #: This node sent the request on to the active node, which answered it.
    forwarded: bool = False


def rfc3339(seconds_ns: int, fraction: bool = True) -> str:
    """UTC time as Go's ``RFC3339Nano`` writes it (no trailing zeros in the fraction)."""
    whole, nanos = divmod(seconds_ns, 1_000_000_000)
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))
    if fraction and nanos:
        text += f".{nanos:09d}".rstrip("0")
    return text + "Z"


def _compact(fields: dict[str, Any]) -> dict[str, Any]:
    """``omitempty``: drop empty strings, zero numbers, false, and empty collections."""
    return {k: v for k, v in fields.items() if v not in ("", 0, False, None, [], {})}


class _Hasher:
    def __init__(self, hmac: Callable[[str], str], options: FormatOptions) -> None:
        self.raw = options.log_raw
        self.hmac_accessor = options.hmac_accessor
        self._hmac = hmac

    def secret(self, value: str) -> str:
        return value if self.raw or not value else self._hmac(value)

    def accessor(self, value: str) -> str:
        return self.secret(value) if self.hmac_accessor else value

    def data(self, value: Any) -> Any:
        return value if self.raw or value is None else hash_values(value, self._hmac)


def _caller_auth(audit: AuditInput, hasher: _Hasher) -> dict[str, Any]:
    token = audit.token
    if token is None:
        return {}
    policies = list(dict.fromkeys([*token.policies, *audit.identity_policies]))
    return _compact(
        {
            "client_token": hasher.secret(audit.request.client_token),
            "accessor": hasher.accessor(token.accessor),
            "display_name": token.display_name,
            "policies": policies,
            "token_policies": list(token.policies),
            "identity_policies": list(audit.identity_policies),
            "metadata": dict(token.meta),
            "remaining_uses": token.num_uses if token.num_uses > 0 else 0,
            "entity_id": token.entity_id,
            "token_type": token.type,
            "token_ttl": token.creation_ttl,
            "token_issue_time": rfc3339(int(token.creation_time * 1e9), fraction=False)
            if token.creation_time
            else "",
        }
    )


def _request(audit: AuditInput, hasher: _Hasher) -> dict[str, Any]:
    request = audit.request
    namespace = _compact({"id": audit.namespace_id, "path": audit.namespace_path})
    return _compact(
        {
            "id": request.id,
            "operation": audit.operation or request.operation.value,
            "mount_point": audit.mount_point,
            "mount_type": audit.mount_type,
            "mount_accessor": audit.mount_accessor,
            "client_token": hasher.secret(request.client_token),
            "client_token_accessor": hasher.accessor(audit.token.accessor if audit.token else ""),
            "namespace": namespace,
            "path": audit.path,
            "data": hasher.data(dict(request.data)),
            "remote_address": request.remote_addr,
            "wrap_ttl": request.wrap_ttl,
        }
    )


def request_entry(
    audit: AuditInput, hmac: Callable[[str], str], options: FormatOptions, error: str = ""
) -> dict[str, Any]:
    hasher = _Hasher(hmac, options)
    entry: dict[str, Any] = {
        "time": rfc3339(time.time_ns()),
        "type": "request",
        "auth": _caller_auth(audit, hasher),
        "request": _request(audit, hasher),
    }
    if error:
        entry["error"] = error
    if audit.request.forwarded_from:
        entry["forwarded_from"] = audit.request.forwarded_from
    return entry


def _response_auth(auth: Auth, hasher: _Hasher) -> dict[str, Any]:
    return _compact(
        {
            "client_token": hasher.secret(auth.client_token),
            "accessor": hasher.accessor(auth.accessor),
            "display_name": auth.display_name,
            "policies": list(auth.policies),
            "token_policies": list(auth.token_policies),
            "identity_policies": list(auth.identity_policies),
            "external_namespace_policies": dict(auth.external_namespace_policies),
            "metadata": dict(auth.metadata),
            "num_uses": auth.num_uses,
            "entity_id": auth.entity_id,
            "token_type": auth.token_type,
            "token_ttl": auth.lease_duration,
        }
    )


def _response_data(response: Response, audit: AuditInput, options: FormatOptions) -> Any:
    if response.raw is not None:
        raw = response.raw
        if isinstance(raw, bytes):
            body = raw.decode("utf-8", "replace")
        elif isinstance(raw, str):
            body = raw
        else:
            body = jsoncodec.dumps(raw).decode()
        return {
            "http_content_type": response.raw_content_type,
            "http_raw_body": body,
            "http_status_code": response.status or 200,
        }
    data = response.data
    if data and options.elide_list_responses and audit.operation == "list":
        data = elide_list(data)
    return data


def _response(
    audit: AuditInput, response: Response | None, hasher: _Hasher, options: FormatOptions
) -> dict[str, Any]:
    if response is None:
        return {}
    wrap = response.wrap_info
    wrap_info = (
        _compact(
            {
                "ttl": wrap.ttl,
                "token": hasher.secret(wrap.token),
                "accessor": hasher.accessor(wrap.accessor),
                "creation_time": wrap.creation_time,
                "creation_path": wrap.creation_path,
                "wrapped_accessor": hasher.accessor(wrap.wrapped_accessor),
            }
        )
        if wrap is not None
        else {}
    )
    return _compact(
        {
            "auth": _response_auth(response.auth, hasher) if response.auth else {},
            "mount_point": audit.mount_point,
            "mount_type": audit.mount_type,
            "mount_accessor": audit.mount_accessor,
            "secret": {"lease_id": response.lease_id} if response.lease_id else {},
            "data": hasher.data(_response_data(response, audit, options)),
            "warnings": list(response.warnings),
            "wrap_info": wrap_info,
        }
    )


def response_entry(
    audit: AuditInput,
    response: Response | None,
    hmac: Callable[[str], str],
    options: FormatOptions,
    error: str = "",
) -> dict[str, Any]:
    hasher = _Hasher(hmac, options)
    entry: dict[str, Any] = {
        "time": rfc3339(time.time_ns()),
        "type": "response",
        "auth": _caller_auth(audit, hasher),
        "request": _request(audit, hasher),
        "response": _response(audit, response, hasher, options),
    }
    if error:
        entry["error"] = error
    if audit.forwarded or audit.request.forwarded_from:
        entry["forwarded"] = True
    return entry
