"""Endpoints that must answer while sealed: init, seal-status, unseal, health,
leader, and the Raft join/bootstrap handshake; plus the raw-body snapshot restore."""

from __future__ import annotations

import dataclasses
import time
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from api.envelope import json_response, render
from api.forwarding import FORWARDER
from api.keys import CORE, REQUEST_ID
from api.preauth import authenticate_early
from api.tls import valid_ca_pem
from api.translate import client_request, read_json_body, read_raw_body
from node.cluster.cluster import Cluster
from node.cluster.membership import answer_membership
from node.core.health import NodeRole, parse_health_query
from node.core.system.raft import SNAPSHOT_FIELD
from node.logical.request import Operation
from node.replication.classify import Kind
from node.version import VERSION
from sdk.errors import (
    InvalidRequestError,
    MethodNotAllowedError,
    NotInitializedError,
    SealedError,
)

__all__ = ["NOT_JOINED", "sys_routes"]

#: The unseal answer of a node whose ``retry_join`` has not fetched a challenge yet.
NOT_JOINED = "not joined: retry_join has not reached a leader"


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
    if body.get("recovery_pgp_keys"):
        raise InvalidRequestError(
            "parameters recovery_pgp_keys are not supported: "
            "PGP encryption of keys is not available"
        )
    core = request.app[CORE]
    stored = _int_field(body, "stored_shares")
    if stored and not core.lifecycle.seal.recovery:
        raise InvalidRequestError("stored_shares is not applicable to seal type shamir")
    # The core refuses the counts that do not fit its seal (secret_* under an HSM).
    output = await core.initialize(
        _int_field(body, "secret_shares"),
        _int_field(body, "secret_threshold"),
        _int_field(body, "recovery_shares"),
        _int_field(body, "recovery_threshold"),
    )
    reply: dict[str, object] = {
        "keys": output.keys_hex,
        "keys_base64": output.keys_base64,
        "root_token": output.root_token,
    }
    if output.recovery_keys_hex:
        reply["recovery_keys"] = output.recovery_keys_hex
        reply["recovery_keys_base64"] = output.recovery_keys_base64
    return json_response(reply)


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
    migrate = body.get("migrate", False)
    if not isinstance(migrate, bool):
        raise InvalidRequestError("migrate: expected a boolean")
    if not await core.initialized():
        if core.cluster is not None and core.cluster.awaiting_join():
            raise InvalidRequestError(NOT_JOINED)
        raise InvalidRequestError("Coffer is not initialized")
    return json_response((await core.unseal(key, migrate)).to_json())


#: The newer reference's status for a node removed from its Raft cluster.
_REMOVED_CODE = 530


async def health(request: web.Request) -> web.StreamResponse:
    core = request.app[CORE]
    codes = parse_health_query(request.query)
    initialized = await core.initialized()
    role = NodeRole(initialized=initialized, sealed=core.sealed)
    removed = False
    standby_link: dict[str, Any] = {}
    if core.cluster is not None:
        state = await core.cluster.state()
        role, removed = NodeRole.of(state, initialized), state.removed
        if state.standby:
            standby_link = {
                "ha_connection_healthy": state.ha_healthy,
                "last_request_forwarding_heartbeat_ms": int(state.leader_lost_for * 1000),
            }
    replication = core.replication
    if not core.sealed and replication.is_dr_secondary:
        role = dataclasses.replace(role, dr_secondary=True)
    status = codes.status_for(role)
    if removed:
        raw = request.query.get("removedcode", str(_REMOVED_CODE)).strip()
        if not (raw.isascii() and raw.isdigit() and 200 <= int(raw) <= 599):
            raise InvalidRequestError(f"bad value for 'removedcode': {raw!r}")
        status = int(raw)
    if request.method == "HEAD":
        return web.Response(status=status, headers={"Cache-Control": "no-store"})
    # A removed node seals itself a moment after it learns it was removed; it
    # stops serving at once, so it reports sealed from that moment on.
    sealed = core.sealed or removed
    body: dict[str, Any] = {
        "initialized": initialized,
        "sealed": sealed,
        "standby": role.standby or role.performance_standby,
        "performance_standby": role.performance_standby,
        "replication_performance_mode": replication.mode(Kind.PERFORMANCE),
        "replication_dr_mode": replication.mode(Kind.DR),
        "server_time_utc": int(time.time()),
        "version": VERSION,
    }
    if core.cluster is not None:
        body["removed_from_cluster"] = removed
        body.update(standby_link)
    if not sealed:
        body["cluster_name"] = core.cluster_name
        body["cluster_id"] = core.cluster_id
    return json_response(body, status)


def _iso(timestamp: float) -> str:
    if not timestamp:
        return "0001-01-01T00:00:00Z"
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


async def leader(request: web.Request) -> web.Response:
    core = request.app[CORE]
    if not await core.initialized():
        raise NotInitializedError()
    if core.sealed:
        raise SealedError()
    if core.cluster is None:
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
    state = await core.cluster.state()
    return json_response(
        {
            "ha_enabled": True,
            "is_self": state.active,
            "active_time": _iso(state.active_time),
            "leader_address": state.leader_api_addr,
            "leader_cluster_address": state.leader_cluster_addr,
            "performance_standby": state.performance_standby,
            "performance_standby_last_remote_wal": 0,
            "raft_committed_index": state.committed_index,
            "raft_applied_index": state.applied_index,
        }
    )


# -- raft join and bootstrap ---------------------------------------------------------------


def _cluster(request: web.Request) -> Cluster:
    cluster = request.app[CORE].cluster
    if cluster is None:
        raise InvalidRequestError("raft storage is not in use on this node")
    return cluster


def _str_field(body: dict[str, Any], name: str, *, required: bool = True) -> str:
    value = body.get(name, "")
    if not isinstance(value, str) or (required and not value.strip()):
        raise InvalidRequestError(f"{name}: a non-empty string is required")
    return value.strip()


async def raft_join(request: web.Request) -> web.Response:
    """Unauthenticated, as in the reference; so a node that is initialised (or holds
    Raft data, or is joining already) takes nothing from the request: it answers
    the reference's ``{"joined": true}`` and changes no state. ``leader_ca_cert``
    serves only this join's calls until the leader accepts the answer."""
    cluster = _cluster(request)
    body = await read_json_body(request)
    leader_api_addr = _str_field(body, "leader_api_addr")
    if body.get("non_voter"):
        raise InvalidRequestError("non-voting members are not supported by this build")
    ca_cert = body.get("leader_ca_cert") or ""
    if not isinstance(ca_cert, str) or (ca_cert and not valid_ca_pem(ca_cert)):
        raise InvalidRequestError("leader_ca_cert: a PEM-encoded CA certificate is required")
    if await request.app[CORE].initialized() or cluster.driver.has_data():
        return json_response({"joined": True})
    if body.get("retry"):
        cluster.start_retry_join([leader_api_addr], ca_cert)
        return json_response({"joined": True})
    return json_response({"joined": await cluster.join(leader_api_addr, ca_cert)})


async def _on_active(request: web.Request, cluster: Cluster) -> web.StreamResponse | None:
    """The active node's reply when this node is an unsealed standby, else None."""
    if request.app[CORE].sealed:
        return None
    state = await cluster.state()
    if state.active or not state.leader_api_addr:
        return None
    return await request.app[FORWARDER].forward(request, cluster, state)


async def bootstrap_challenge(request: web.Request) -> web.StreamResponse:
    cluster = _cluster(request)
    if (relayed := await _on_active(request, cluster)) is not None:
        return relayed
    body = await read_json_body(request)
    # request.remote is the joiner's own address, also when a standby relayed it.
    challenge = await cluster.issue_challenge(_str_field(body, "server_id"), request.remote or "")
    return json_response(challenge)


async def bootstrap_answer(request: web.Request) -> web.StreamResponse:
    cluster = _cluster(request)
    if (relayed := await _on_active(request, cluster)) is not None:
        return relayed
    body = await read_json_body(request)
    answer = await cluster.accept_answer(
        _str_field(body, "server_id"),
        _str_field(body, "answer"),
        _str_field(body, "cluster_addr"),
        bool(body.get("non_voter")),
    )
    return json_response(answer)


async def bootstrap_member(request: web.Request) -> web.Response:
    cluster = _cluster(request)
    body = await read_json_body(request)
    data = answer_membership(cluster, _str_field(body, "node_id"), _str_field(body, "signature"))
    return json_response({"data": data})


async def snapshot_restore(request: web.Request) -> web.StreamResponse:
    """The one logical write whose body is not JSON: hand the raw bytes to the core."""
    path = request.path.removeprefix("/v1/")
    await authenticate_early(request, path, Operation.UPDATE)
    raw = await read_raw_body(request)
    request_id = request[REQUEST_ID]
    core_request = client_request(
        request, Operation.UPDATE, path, request_id, {SNAPSHOT_FIELD: raw}
    )
    return render(await request.app[CORE].handle(core_request), request_id)


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
        *_raft_routes(),
    ]


def _raft_routes() -> list[web.RouteDef]:
    routes: list[web.RouteDef] = []
    for path, handler in (
        ("/v1/sys/storage/raft/join", raft_join),
        ("/v1/sys/storage/raft/bootstrap/challenge", bootstrap_challenge),
        ("/v1/sys/storage/raft/bootstrap/answer", bootstrap_answer),
        ("/v1/sys/storage/raft/bootstrap/member", bootstrap_member),
    ):
        routes += [web.put(path, handler), web.post(path, handler)]
        routes.append(web.route("*", path, method_not_allowed))
    for path in ("/v1/sys/storage/raft/snapshot", "/v1/sys/storage/raft/snapshot-force"):
        routes += [web.put(path, snapshot_restore), web.post(path, snapshot_restore)]
    return routes
