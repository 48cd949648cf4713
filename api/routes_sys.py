"""Endpoints that must answer while sealed: init, seal-status, unseal, health, leader."""

from __future__ import annotations

import time
from typing import Any

from aiohttp import web

from api.envelope import json_response
from api.keys import CORE
from api.translate import read_json_body
from node.core.core import VERSION
from node.core.health import NodeRole, parse_health_query
from node.errors import (
    InvalidRequestError,
    MethodNotAllowedError,
    NotInitializedError,
    SealedError,
)

__all__ = ["sys_routes"]


def _int_field(body: dict[str, Any], name: str) -> int:
    value = body.get(name, 0)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidRequestError(f"{name}: expected an integer, got {value!r}")
    return value


async def init_status(request: web.Request) -> web.Response:
    return json_response({"initialized": await request.app[CORE].initialized()})


async def init(request: web.Request) -> web.Response:
    body = await read_json_body(request)
    unsupported = [k for k in ("pgp_keys", "root_token_pgp_key") if body.get(k)]
    if unsupported:
        raise InvalidRequestError(
            f"parameters {','.join(unsupported)} are not supported: "
            "PGP encryption of keys is not available"
        )
    recovery = [
        k for k in ("recovery_shares", "recovery_threshold", "recovery_pgp_keys") if body.get(k)
    ]
    if recovery:
        raise InvalidRequestError(
            f"parameters {','.join(recovery)} not applicable to seal type shamir"
        )
    if _int_field(body, "stored_shares"):
        raise InvalidRequestError("stored_shares is not applicable to seal type shamir")
    output = await request.app[CORE].initialize(
        _int_field(body, "secret_shares"), _int_field(body, "secret_threshold")
    )
    return json_response(
        {
            "keys": output.keys_hex,
            "keys_base64": output.keys_base64,
            "root_token": output.root_token,
        }
    )


async def seal_status(request: web.Request) -> web.Response:
    status = await request.app[CORE].seal_status()
    return json_response(status.to_json())


async def unseal(request: web.Request) -> web.Response:
    core = request.app[CORE]
    body = {k.lower(): v for k, v in (await read_json_body(request)).items()}
    reset = body.get("reset", False)
    if not isinstance(reset, bool):
        raise InvalidRequestError("reset: expected a boolean")
    if reset:
        if not await core.initialized():
            # as the reference: nothing to reset, answer with the seal status
            return json_response((await core.seal_status()).to_json())
        return json_response((await core.reset_unseal()).to_json())
    key = body.get("key")
    if not key:
        raise InvalidRequestError(
            "'key' must be specified in request body as JSON, or 'reset' set to true"
        )
    if not isinstance(key, str):
        raise InvalidRequestError("'key' must be a string")
    if not await core.initialized():
        raise InvalidRequestError("Coffer is not initialized")
    return json_response((await core.unseal(key)).to_json())


async def health(request: web.Request) -> web.StreamResponse:
    core = request.app[CORE]
    codes = parse_health_query(request.query)
    initialized = await core.initialized()
    role = NodeRole(initialized=initialized, sealed=core.sealed)
    status = codes.status_for(role)
    if request.method == "HEAD":
        return web.Response(status=status, headers={"Cache-Control": "no-store"})
    body: dict[str, Any] = {
        "initialized": initialized,
        "sealed": core.sealed,
        "standby": role.standby,
        "performance_standby": role.performance_standby,
        "replication_performance_mode": "disabled",
        "replication_dr_mode": "disabled",
        "server_time_utc": int(time.time()),
        "version": VERSION,
    }
    if not core.sealed:
        body["cluster_name"] = core.cluster_name
        body["cluster_id"] = core.cluster_id
    return json_response(body, status)


async def leader(request: web.Request) -> web.Response:
    core = request.app[CORE]
    if not await core.initialized():
        raise NotInitializedError()
    if core.sealed:
        raise SealedError()
    return json_response(
        {
            "ha_enabled": False,
            "is_self": False,
            "active_time": "0001-01-01T00:00:00Z",
            "leader_address": "",
            "leader_cluster_address": "",
            "performance_standby": False,
            "performance_standby_last_remote_wal": 0,
        }
    )


async def method_not_allowed(request: web.Request) -> web.Response:
    raise MethodNotAllowedError(f"unsupported operation {request.method} on {request.path}")


def sys_routes() -> list[web.RouteDef]:
    # Each path ends with a catch-all method, so another verb is a 405 here instead of
    # falling through to the logical /v1/{path} route (503 while sealed, 404 after).
    return [
        web.get("/v1/sys/init", init_status, allow_head=False),
        web.put("/v1/sys/init", init),
        web.post("/v1/sys/init", init),
        web.route("*", "/v1/sys/init", method_not_allowed),
        web.get("/v1/sys/seal-status", seal_status, allow_head=False),
        web.route("*", "/v1/sys/seal-status", method_not_allowed),
        web.put("/v1/sys/unseal", unseal),
        web.post("/v1/sys/unseal", unseal),
        web.route("*", "/v1/sys/unseal", method_not_allowed),
        web.get("/v1/sys/health", health),
        web.route("*", "/v1/sys/health", method_not_allowed),
        web.get("/v1/sys/leader", leader, allow_head=False),
        web.route("*", "/v1/sys/leader", method_not_allowed),
    ]
