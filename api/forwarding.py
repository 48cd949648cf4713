"""Request forwarding from standbys to the active node.

A standby relays every request (except the sealed-safe, node-local ones) to
the active node's ``api_addr``; a performance standby serves READ/LIST/HELP
itself unless the request carries a wrap TTL, a limited-use token or a token
it does not know (yet). The request keeps its method, raw path and query,
headers (minus hop-by-hop ones) and body; the reply's status, headers and
body come back unchanged.

* **Client address and signature.** The standby adds
  ``X-Coffer-Forwarded-For`` and ``X-Coffer-Forwarded-Signature``: an HMAC
  under a key derived from the Raft secret over the client address, method,
  path, query, body digest, token, namespace, a timestamp and a nonce
  (:mod:`node.cluster.relay`). The receiving node refuses (403) a request
  carrying these headers whose signature is wrong, stale or replayed, and
  otherwise uses the vouched address as the client's, so
  ``token_bound_cidrs`` hold through forwarding, no client can claim another
  address, and a captured forwarded request cannot be replayed or altered.
* **Read-your-writes.** The active node returns its applied Raft index in
  ``X-Coffer-Index`` (and as a state in ``X-Vault-Index``, see
  ``api.consistency``); a standby that relayed a write waits until its own
  replica and caches have applied it before answering, but no longer than it
  serves local reads at all: a standby that is stale or not caught up (cut
  off, catching up after a heal) answers at once. It then *owes* that index:
  it forwards its reads until its replica has applied it, so the client
  still reads its write, and a cut-off standby does not hold writers.
* **A replaced active node.** A request relayed to an active node that
  stops answering (frozen, cut off) is abandoned once this node learns of
  another active node: a read is relayed again to the new one; a write is
  answered 503 (it may or may not have been applied, so only the client may
  retry it).
* **Staleness.** A performance standby that lost the leader or lags it past
  its bounds (``node.cluster.staleness``) forwards its reads, or answers 503
  "not caught up" when there is no active node to forward to.
* **Writes found late.** A performance standby's core handles a request
  read-only (``node.barrier.readonly``); a handler that writes after all
  raises ``PleaseForwardError`` with nothing applied here, and the request is
  forwarded like any write (the standby then waits for the reply's index).
* **No forwarding.** With ``X-Service-No-Request-Forwarding`` (or the Vault
  header) a standby answers 307 to the active node instead; with no known
  active node it answers 503 "no active node".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import ssl
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any, TypeVar

import aiohttp
from aiohttp import web
from yarl import URL

from api.consistency import (
    INDEX_HEADER,
    add_index_headers,
    local_read_allowed,
    require_index,
    wants_active_node,
)
from api.envelope import error_response
from api.keys import CORE, FORWARDED_FROM
from api.outbound import bounded_request
from api.preauth import authenticate_early
from api.tls import client_context, valid_ca_pem
from api.translate import client_token, header, operation_of, remember_body
from node.cluster.cluster import Cluster
from node.cluster.errors import (
    IndexNotReachedError,
    NoActiveNodeError,
    NotCaughtUpError,
    PleaseForwardError,
)
from node.cluster.relay import Relayed, RelayRefusedError, body_digest, sign_relayed
from node.cluster.role import HAState
from node.core.core import Core
from node.outbound import DEFAULT_TIMEOUT, HttpClient, HttpReply
from sdk.errors import CofferError

__all__ = ["FORWARDER", "INDEX_HEADER", "Forwarder", "redirect", "serve_in_cluster"]

log = logging.getLogger("coffer.forwarding")

FORWARDED_FOR = "X-Coffer-Forwarded-For"
FORWARDED_SIG = "X-Coffer-Forwarded-Signature"
NOT_ACTIVE = "X-Coffer-Not-Active"
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "content-encoding",
        FORWARDED_FOR.lower(),
        FORWARDED_SIG.lower(),
        NOT_ACTIVE.lower(),
    }
)
#: Always answered by the node that receives them (sealed-safe or node-local).
_LOCAL = re.compile(
    r"^/v1/sys/(init|seal-status|unseal|seal|health|leader|metrics|"
    r"storage/raft/(join|bootstrap/.*))$"
)
#: Served by the active node even for a performance standby's reads.
_ACTIVE_ONLY = re.compile(r"^/v1/sys/storage/raft/")
_READ_METHODS = frozenset({"GET", "HEAD", "LIST", "HELP"})
_ATTEMPTS = 4
_WAIT_FOR_INDEX = 5.0
#: How often a relayed request's wait looks at this node's role (leader changes,
#: staleness): about a Raft heartbeat, small beside an election.
_RECHECK = 0.1
#: A write abandoned on an active node that was replaced while it held it.
REPLACED = (
    "the active node changed while it held this request; it may or may not have been applied: retry"
)
#: Bodies at least this large are hashed off the event loop.
_HASH_OFF_LOOP = 1 << 20

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_T = TypeVar("_T")


def _session_for(context: ssl.SSLContext) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(ssl=context),
        cookie_jar=aiohttp.DummyCookieJar(),
        auto_decompress=False,
        timeout=aiohttp.ClientTimeout(total=60, connect=5),
    )


class _PinnedClient:
    """A short-lived client that also trusts one join's ``leader_ca_cert``."""

    def __init__(self, context: ssl.SSLContext) -> None:
        self._context = context
        self._session: aiohttp.ClientSession | None = None

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        json: Any = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> HttpReply:
        if self._session is None:
            self._session = _session_for(self._context)
        return await bounded_request(
            self._session, method, url, headers=headers, json=json, timeout=timeout
        )

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


class Forwarder:
    """One client session for everything a node sends to its peers' APIs.

    Its trust is the configured CA file (or the system roots) plus the
    ``leader_ca_cert`` of a join the leader accepted (:meth:`trust`); a join
    in progress uses that certificate only through :meth:`pinned`.
    """

    def __init__(self, ca_file: str | None = None) -> None:
        self._ca_file = ca_file
        self._extra_ca: list[str] = []
        self._session: aiohttp.ClientSession | None = None
        self._retired: list[aiohttp.ClientSession] = []
        #: The highest index of a relayed write this replica had not applied when
        #: its reply left (0: none): local reads wait for it (read-your-writes).
        self._owed = 0

    def pinned(self, ca_pem: str) -> HttpClient:
        """A client trusting ``ca_pem`` too, for one join's calls (the caller closes it)."""
        return _PinnedClient(client_context(self._ca_file, [*self._extra_ca, ca_pem]))

    def trust(self, ca_pem: str) -> None:
        """Also trust ``ca_pem`` for later connections (a certificate that does not
        load is ignored: it must never break forwarding)."""
        if ca_pem in self._extra_ca or not valid_ca_pem(ca_pem):
            return
        self._extra_ca.append(ca_pem)
        if self._session is not None:
            self._retired.append(self._session)  # closed with the forwarder
            self._session = None

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = _session_for(client_context(self._ca_file, self._extra_ca))
        return self._session

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        json: Any = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> HttpReply:
        """``node.outbound.HttpClient`` for the cluster's own calls (join, membership)."""
        return await bounded_request(
            self._get_session(), method, url, headers=headers, json=json, timeout=timeout
        )

    async def close(self) -> None:
        for session in self._retired:
            await session.close()
        self._retired.clear()
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def owes(self, cluster: Cluster) -> bool:
        """True while a write this node relayed may be missing from its replica
        (its local reads must be forwarded until then)."""
        if self._owed and await _reached(cluster, self._owed, 0.0):
            self._owed = 0
        return self._owed > 0

    async def forward(
        self, request: web.Request, cluster: Cluster, state: HAState, *, writes: bool = False
    ) -> web.StreamResponse:
        """Relay ``request`` to the active node (retrying only what was never sent,
        and reads); ``writes``: a read whose handler writes, so read-your-writes
        applies too."""
        body = await request.read()
        relayed = await relayed_fields(request, request.remote or "", body)
        key = cluster.forward_key
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        writing = writes or request.method not in _READ_METHODS
        for attempt in range(_ATTEMPTS):
            if not state.leader_api_addr:
                raise NoActiveNodeError()
            if key is not None:  # a fresh nonce per attempt: a retry is not a replay
                headers[FORWARDED_FOR] = relayed.client
                headers[FORWARDED_SIG] = sign_relayed(key, relayed)
            url = URL(state.leader_api_addr.rstrip("/") + request.raw_path, encoded=True)
            try:
                sent = await _unless_replaced(
                    self._send(request.method, url, headers, body), cluster, state
                )
            except aiohttp.ClientConnectorError:
                if attempt == _ATTEMPTS - 1:
                    break
                state = await _next_state(cluster, state)  # nothing was sent: safe to retry
                continue
            except (aiohttp.ClientError, TimeoutError) as exc:
                log.warning(
                    "forwarding failed", extra={"event": "forward.failed", "error": repr(exc)}
                )
                return error_response(502, [f"forwarding to the active node failed: {exc!r}"])
            if isinstance(sent, HAState):  # the active node was replaced while holding it
                log.warning(
                    "the active node was replaced while it held a relayed request",
                    extra={"event": "forward.replaced", "write": writing},
                )
                if writing or attempt == _ATTEMPTS - 1:
                    return error_response(503, [REPLACED])
                state = sent  # a read: nothing changes by asking the new active node
                continue
            status, reply_headers, payload = sent
            if reply_headers.get(NOT_ACTIVE) and attempt < _ATTEMPTS - 1:
                state = await _next_state(cluster, state)
                continue
            if writing:
                await self._catch_up(cluster, reply_headers.get(INDEX_HEADER, ""))
            back = {k: v for k, v in reply_headers.items() if k.lower() not in _HOP_BY_HOP}
            return web.Response(status=status, body=payload, headers=back)
        return error_response(503, ["no active node"])

    async def _send(
        self, method: str, url: URL, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, Mapping[str, str], bytes]:
        async with self._get_session().request(
            method, url, headers=headers, data=body, allow_redirects=False
        ) as reply:
            return reply.status, reply.headers.copy(), await reply.read()

    async def _catch_up(self, cluster: Cluster, raw_index: str) -> None:
        """Read-your-writes: wait until this node applied (and digested) the write,
        or owe it when this node stops serving local reads first (see ``owes``)."""
        if raw_index.isdigit() and not await _applied_or_not_serving(cluster, int(raw_index)):
            self._owed = max(self._owed, int(raw_index))


async def _unless_replaced(
    send: Coroutine[Any, Any, _T], cluster: Cluster, state: HAState
) -> _T | HAState:
    """``send``'s result, or the new state once this node learns of another active
    node than ``state``'s (or becomes it): ``send`` is then cancelled."""
    sending = asyncio.ensure_future(send)
    try:
        while True:
            done, _ = await asyncio.wait({sending}, timeout=_RECHECK)
            if done:
                return sending.result()
            now = await cluster.state()
            replaced = now.leader_api_addr and now.leader_api_addr != state.leader_api_addr
            if now.active or replaced:
                return now
    finally:
        if not sending.done():
            sending.cancel()
            with contextlib.suppress(asyncio.CancelledError, aiohttp.ClientError, OSError):
                await sending


async def _next_state(cluster: Cluster, previous: HAState) -> HAState:
    """Wait briefly for a (possibly new) active node."""
    for _ in range(20):
        await asyncio.sleep(0.1)
        state = await cluster.state()
        if state.active or state.sealed:
            raise NoActiveNodeError()  # we became active, or sealed: let the client retry
        if state.leader_api_addr and state.leader_api_addr != previous.leader_api_addr:
            return state
    return await cluster.state()


async def _reached(cluster: Cluster, index: int, timeout: float) -> bool:
    """Whether this replica applied, and its caches digested, ``index`` within ``timeout``."""
    replica = cluster.replica
    if replica is None:
        return True  # no replica: nothing to be behind
    if timeout <= 0 and replica.applied_index() < index:
        return False
    try:
        await replica.wait_for_index(index, max(timeout, 0.001))
        await cluster.invalidator.settled(index, max(timeout, 0.05))
    except (CofferError, TimeoutError):
        return False
    return True


async def _applied_or_not_serving(cluster: Cluster, index: int) -> bool:
    """Wait until this replica applied ``index`` (True), or until it does not serve
    local reads (stale, not caught up) or ``_WAIT_FOR_INDEX`` passed (False).

    Waiting longer than local reads are served would only hold the writer: a
    cut-off standby may not apply the write for a minute."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _WAIT_FOR_INDEX
    while True:
        if await _reached(cluster, index, min(_RECHECK, deadline - loop.time())):
            return True
        if loop.time() >= deadline:
            return False
        state = await cluster.state()
        if state.stale or not state.caught_up:
            return False


async def relayed_fields(request: web.Request, client: str, body: bytes) -> Relayed:
    """What the forwarding signature covers, as both ends see it."""
    path, _, query = request.raw_path.partition("?")
    if len(body) >= _HASH_OFF_LOOP:
        digest = await asyncio.to_thread(body_digest, body)
    else:
        digest = body_digest(body)
    return Relayed(
        client=client,
        method=request.method,
        path=path,
        query=query,
        body_sha256=digest,
        token=client_token(request),
        namespace=header(request, "Namespace"),
    )


class ForwardRefusedError(Exception):
    """A request claims to be forwarded and its signature does not hold."""


async def vouched_request(request: web.Request, cluster: Cluster) -> web.Request | None:
    """``request`` with the client address a peer vouched for; ``None`` for a
    request that is not forwarded. Raises :class:`ForwardRefusedError` for a
    bad, stale or replayed one."""
    address = request.headers.get(FORWARDED_FOR)
    signature = request.headers.get(FORWARDED_SIG)
    if address is None and signature is None:
        return None
    key = cluster.forward_key
    if key is None:
        return None  # sealed: the handler answers as for any request
    if address is None or not signature:
        raise ForwardRefusedError("incomplete forwarding headers")
    # Cloned before the body is read (aiohttp refuses after); the clone shares
    # the body stream and keeps what it read for the handler.
    vouched = request.clone(remote=address)
    body = await vouched.read()
    remember_body(vouched, body)
    relayed = await relayed_fields(vouched, address, body)
    try:
        cluster.relay_nonces.verify(key, signature, relayed)
    except RelayRefusedError as exc:
        raise ForwardRefusedError(str(exc)) from exc
    vouched[FORWARDED_FROM] = peer_address(request)
    return vouched


def peer_address(request: web.Request) -> str:
    """``host:port`` (``[host]:port`` for IPv6) of the socket's other end: for a
    relayed request, the standby that sent it, which no header can claim."""
    transport = request.transport
    peer = transport.get_extra_info("peername") if transport is not None else None
    if not isinstance(peer, tuple) or len(peer) < 2:
        return request.remote or ""
    host, port = str(peer[0]), peer[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


async def _serves_locally(request: web.Request, core: Core) -> bool:
    """A performance standby's choice: plain reads stay, anything else goes."""
    method = request.method.upper()
    if method not in _READ_METHODS or _ACTIVE_ONLY.match(request.path):
        return False
    if header(request, "Wrap-TTL"):
        return False
    token = client_token(request)
    if token:
        entry = await core.tokens.lookup(token)
        if entry is None or entry.num_uses > 0:
            # Unknown here (perhaps not replicated yet), or a use count that
            # must be decided on the active node: let the active node answer.
            return False
    return True


def redirect(request: web.Request, state: HAState) -> web.Response:
    location = state.leader_api_addr.rstrip("/") + request.raw_path
    return web.Response(status=307, headers={"Location": location, "Cache-Control": "no-store"})


FORWARDER = web.AppKey("forwarder", Forwarder)


async def _serve_as_active(
    request: web.Request, handler: Handler, cluster: Cluster
) -> web.StreamResponse:
    """Answer here, telling the client which index its write (or read) reached."""
    try:
        await require_index(request, cluster)
    except IndexNotReachedError as exc:
        # Decided here, not on a standby: the index headers say how far this node got.
        refused = error_response(exc.status, [str(exc)])
        add_index_headers(refused, cluster)
        return refused
    response = await handler(request)
    add_index_headers(response, cluster)
    return response


async def serve_in_cluster(
    request: web.Request, handler: Handler, cluster: Cluster
) -> web.StreamResponse:
    """Serve ``request`` here or relay it, as this node's role says; the edge
    (``api/edge.py``) calls it on a clustered node, inside its error table and metrics,
    so a relayed answer carries this node's request id like any other."""
    core = request.app[CORE]
    try:
        vouched = await vouched_request(request, cluster)
    except ForwardRefusedError as exc:
        log.warning(
            "forwarded request refused",
            extra={"event": "forward.refused", "reason": str(exc), "peer": request.remote},
        )
        return error_response(403, [f"forwarded request refused: {exc}"])
    if vouched is not None:
        request = vouched
    if not request.path.startswith("/v1/") or _LOCAL.match(request.path) or core.sealed:
        return await handler(request)
    if cluster.is_active():
        try:
            return await _serve_as_active(request, handler, cluster)
        except PleaseForwardError:
            pass  # lost leadership while handling it, nothing applied: go on as a standby
    state = await cluster.state()
    if state.active:  # became active in between
        return await _serve_as_active(request, handler, cluster)
    if vouched is not None:
        # Forwarded to us, but we are not (or no longer) active: the sender retries.
        reply = error_response(503, ["this node is not the active node"])
        reply.headers[NOT_ACTIVE] = "1"
        return reply
    writes = False
    if (
        state.performance_standby
        and not wants_active_node(request)
        and await _serves_locally(request, core)
    ):
        stale = state.stale
        if stale:
            if not state.leader_api_addr:
                raise NotCaughtUpError(stale)
        elif (
            state.caught_up
            and not await request.app[FORWARDER].owes(cluster)
            and await local_read_allowed(request, cluster)
        ):
            try:
                return await handler(request)
            except PleaseForwardError:
                writes = True  # refused here, nothing applied: the active node answers
    path = _logical_path(request)
    if path is not None and not client_token(request):
        # Without a token this node can tell by itself whether the path takes
        # anonymous callers: refuse before reading (and relaying) the body.
        await authenticate_early(request, path, operation_of(request))
    if not state.leader_api_addr:
        raise NoActiveNodeError()
    if header(request, "No-Request-Forwarding"):
        return redirect(request, state)
    return await request.app[FORWARDER].forward(request, cluster, state, writes=writes)


def _logical_path(request: web.Request) -> str | None:
    """The path under ``/v1/`` of a request for the core pipeline's catch-all route."""
    resource = request.match_info.route.resource
    if resource is None or resource.canonical != "/v1/{path}":
        return None
    return request.match_info["path"]
