"""The TCP listener: slow-client limits, a connection cap, and JSON for the HTTP layer's errors.

aiohttp's own request handler answers what its parser refuses (a malformed
request line, bad headers, an unsupported version, lines over the limit) with
``text/plain`` and names its version in ``Server``; it closes idle connections
(``keepalive_timeout``) but has no header or body deadline and no connection
cap. :class:`CofferRequestHandler` is aiohttp's public ``web.RequestHandler``
with those added, and with its bytes passed through ``api/method_tunnel.py``
(Vault's ``LIST`` past the C parser), served by :func:`serve` on the runner's
public ``server``:

- ``http_read_header_timeout``: from the accept, or from the first byte of a
  kept-alive connection's next request, until the edge (``api/edge.py``) starts on
  the request (:func:`request_started`); else ``408`` and the connection closes.
- ``http_read_timeout``: reading a body (``api/translate.py``), ``408``.
- ``http_idle_timeout``: aiohttp's keep-alive timeout: a connection that has not
  completed a request's header section this long after the last answer (or the
  accept) is closed without an answer. The header timeout is the shorter one
  by default, so it answers ``408`` first. (A header section begun in the same
  read as a pipelined request before it falls under this timeout only: where
  one request ends inside a read is the parser's knowledge.)
- ``max_connections``: a connection over the cap is answered ``503`` and closed.
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import BadHttpMessage, HttpProcessingError, LineTooLong

from api.envelope import encode_json, error_response
from api.method_tunnel import MethodTunnel
from sdk.random_pool import random_uuid4

__all__ = [
    "LINGER",
    "SERVER_NAME",
    "CofferRequestHandler",
    "ConnectionGate",
    "ListenerLimits",
    "request_finished",
    "request_started",
    "serve",
]

#: After an answer that left a body unread (403, 408, 413) the rest is read and
#: dropped for at most this long before the connection closes, so the client reads
#: the answer rather than a reset (aiohttp's default, 10 s, lets a slow client
#: hold the connection that long).
LINGER = 2.0

#: ``http_idle_timeout = 0`` disables it; aiohttp's own 0 would close every
#: connection as soon as it is idle.
_NO_IDLE_LIMIT = 10 * 365 * 86400.0

#: The ``Server`` header: the product, no library or version (set by ``api/app.py``).
SERVER_NAME = "Coffer"


@dataclass(frozen=True, slots=True)
class ListenerLimits:
    """Slow-client limits in seconds (0 disables one) and the connection cap; Vault's
    defaults for the timeouts."""

    read_header_timeout: float = 10.0
    read_timeout: float = 30.0
    idle_timeout: float = 300.0
    max_connections: int = 1024


class ConnectionGate:
    """Open connections of one listener, up to a cap."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.open: set[CofferRequestHandler] = set()

    def admit(self, handler: CofferRequestHandler) -> bool:
        if len(self.open) >= self.cap:
            return False
        self.open.add(handler)
        return True

    def release(self, handler: CofferRequestHandler) -> None:
        self.open.discard(handler)


def _raw_error(status: int, reason: str, message: str) -> bytes:
    """A whole JSON error response, written to the transport outside any request."""
    body = encode_json({"errors": [message]})
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nServer: {SERVER_NAME}\r\nConnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


_MAX_DETAIL = 200


def _parser_error(status: int, exc: BaseException | None) -> tuple[int, str]:
    """Status and message for what the HTTP layer refused: the parser's first line
    (it can echo the request's bytes: cut short), under the status Vault's Go
    server uses for the case."""
    if status >= 500 or not isinstance(exc, HttpProcessingError):
        return status, "internal error" if status == 500 else "request could not be handled"
    # The message's lines up to the first blank one (after it the parser echoes the
    # request's bytes): llhttp's is "Bad status line:" then its reason.
    lines = (exc.message or type(exc).__name__).strip().split("\n\n", 1)[0].splitlines()
    detail = " ".join(line.strip() for line in lines).rstrip(":")[:_MAX_DETAIL]
    if isinstance(exc, LineTooLong) or "too many headers" in detail.lower():
        return 431, f"request header fields too large: {detail}"
    if isinstance(exc, BadHttpMessage) and "http version" in detail.lower():
        return 505, f"HTTP version not supported: {detail}"
    return 400, f"malformed HTTP request: {detail}"


class CofferRequestHandler(web.RequestHandler):
    """One client connection (see the module docstring)."""

    def __init__(
        self,
        manager: web.Server,
        *,
        loop: asyncio.AbstractEventLoop,
        gate: ConnectionGate,
        limits: ListenerLimits,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            manager,
            loop=loop,
            keepalive_timeout=limits.idle_timeout or _NO_IDLE_LIMIT,
            lingering_time=LINGER,
            **kwargs,
        )
        # Kept, not asked for: on CPython 3.11 ``asyncio.get_running_loop()`` makes a
        # getpid() system call (its fork check), and the head timer is armed per request.
        self._event_loop = loop
        self._gate = gate
        self._limits = limits
        self._head_timer: asyncio.TimerHandle | None = None
        #: When the header section being read must be complete (None: not reading one).
        self._head_deadline: float | None = None
        self._in_request = False
        self._tunnel = MethodTunnel()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        if not self._gate.admit(self):
            self._close_with(_raw_error(503, "Service Unavailable", "too many connections"))
            return
        self._arm_head_timer()

    def connection_lost(self, exc: BaseException | None) -> None:
        self._gate.release(self)
        self._cancel_head_timer()
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if not self._in_request and self._head_deadline is None:
            self._arm_head_timer()  # the first byte of a kept-alive connection's next request
        data = self._tunnel.feed(data)
        if data:
            super().data_received(data)

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        """aiohttp's answer to what it could not parse or handle, as the API's JSON."""
        plain = super().handle_error(request, status, exc, message)  # logs, checks the writer
        status, text = _parser_error(plain.status, exc)
        response = error_response(status, [text])
        response.headers["Server"] = SERVER_NAME
        response.headers["X-Request-Id"] = random_uuid4()
        response.force_close()
        return response

    # The edge's notes --------------------------------------------------------------

    def started(self) -> None:
        self._in_request = True
        self._cancel_head_timer()

    def finished(self) -> None:
        self._in_request = False

    # Internals --------------------------------------------------------------------

    # The deadline moves with every request; the timer does not. Arming sets the
    # deadline and starts a timer only if none is pending; a timer that fires early
    # (its request was served, another began) waits again for the deadline now in
    # force. A timer per request (created, then cancelled) was ~1 % of a KV write.

    def _arm_head_timer(self) -> None:
        timeout = self._limits.read_header_timeout
        if timeout <= 0:
            return
        loop = self._event_loop
        self._head_deadline = deadline = loop.time() + timeout
        if self._head_timer is None:
            self._head_timer = loop.call_at(deadline, self._head_late)

    def _cancel_head_timer(self) -> None:
        self._head_deadline = None

    def _head_late(self) -> None:
        self._head_timer = None
        deadline = self._head_deadline
        if deadline is None or self._in_request:
            return
        loop = self._event_loop
        if loop.time() < deadline:
            self._head_timer = loop.call_at(deadline, self._head_late)
            return
        self._head_deadline = None
        self._close_with(_raw_error(408, "Request Timeout", "timed out reading the request header"))

    def _close_with(self, answer: bytes) -> None:
        transport = self.transport
        if transport is not None and not transport.is_closing():
            transport.write(answer)
        self.force_close()


def request_started(request: web.BaseRequest) -> None:
    """The header section of ``request`` has been read (stops its header deadline)."""
    protocol = request.protocol
    if isinstance(protocol, CofferRequestHandler):
        protocol.started()


def request_finished(request: web.BaseRequest) -> None:
    protocol = request.protocol
    if isinstance(protocol, CofferRequestHandler):
        protocol.finished()


async def serve(
    runner: web.AppRunner,
    host: str,
    port: int,
    limits: ListenerLimits,
    ssl_context: ssl.SSLContext | None = None,
) -> asyncio.Server:
    """Accept connections for a set-up ``runner`` with :class:`CofferRequestHandler`.

    The caller closes the returned server, then cleans up the runner (which
    closes the connections still open).
    """
    server = runner.server
    if server is None:
        raise RuntimeError("the runner is not set up")
    loop = asyncio.get_running_loop()
    gate = ConnectionGate(limits.max_connections)

    def handler() -> CofferRequestHandler:
        return CofferRequestHandler(server, loop=loop, gate=gate, limits=limits, access_log=None)

    return await loop.create_server(handler, host, port, ssl=ssl_context, reuse_address=True)
