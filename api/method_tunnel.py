"""Vault's extension verbs (``LIST``, ``HELP``) carried past aiohttp's C parser.

aiohttp's C parser (llhttp) is the fast one, and it refuses every method it does
not know, ``LIST`` among them. Rather than parse HTTP in Python for every
request, each connection's bytes pass through a :class:`MethodTunnel` before the
parser (``CofferRequestHandler.data_received``): it follows the message framing
(request line, header section, ``Content-Length`` or chunked body, trailers)
and rewrites a request line whose method is not one of the common verbs,

    LIST /v1/secret/metadata HTTP/1.1

into :data:`CARRIER_VERB`, a verb llhttp knows and no route is registered
for, with the original verb in a header that names this process's secret token:

    REPORT /v1/secret/metadata HTTP/1.1
    Coffer-Tunnelled-Method: LIST <token>

(aiohttp routes a request before its handler runs: a ``GET`` would reach the
``GET`` handler of a path whatever the verb turns out to be, where the carrier
reaches only the routes for any verb, as ``LIST`` itself would. A client's own
``REPORT`` is tunnelled too, like any verb not in :data:`_NATIVE`.)

:func:`untunnelled`, called first by the edge (``api/edge.py``) and by the
``Expect`` handler (which runs before any handler), turns such a request back
into a ``LIST`` (aiohttp's public ``Request.clone``) without the header. CORS,
in the edge, never looks at a verb but ``OPTIONS``, which is not tunnelled.
Without the token a client's own header of that name means nothing, so it
cannot change the verb a proxy in front has seen.

The tunnel only rewrites where it knows a request starts. Whatever it does not
follow exactly as llhttp does (a bare LF, folded or repeated framing headers,
a transfer coding other than ``chunked``, a WebSocket upgrade, a head over
:data:`MAX_HEAD`) makes it pass the rest of the connection through unchanged.
llhttp refuses most of those itself and closes the connection; after an
upgrade the bytes are no longer HTTP. Nothing in aiohttp is replaced.

A chunked request's trailer fields are dropped on the way: aiohttp's C parser
adds them to the *next* request's headers (aiohttp 3.14; its pure-Python parser
does not), so a client could set headers, a token among them, on a request a
proxy sent after its own on a shared connection. Nothing in Vault's API reads
trailers.
"""

from __future__ import annotations

import hmac
import re
import secrets

from aiohttp import web
from multidict import CIMultiDict

__all__ = ["CARRIER_VERB", "HEADER", "MAX_HEAD", "MethodTunnel", "untunnelled"]

#: The verb a tunnelled request reaches aiohttp with.
CARRIER_VERB = "REPORT"

#: The header that carries a rewritten request's own method and the token.
HEADER = "Coffer-Tunnelled-Method"

#: Past this many bytes of request line or header section the tunnel stops
#: following the connection (aiohttp refuses lines over 8,190 bytes itself).
MAX_HEAD = 64 * 1024

#: This process's token: only the tunnel writes it, so only the tunnel's header counts.
_TOKEN = secrets.token_hex(16)
_CARRIER_VERB = CARRIER_VERB.encode()
_CARRIER = b"%s: %%s %s\r\n" % (HEADER.encode(), _TOKEN.encode())

#: Verbs llhttp knows and Vault's API uses: passed through as they are.
_NATIVE = frozenset({b"GET", b"PUT", b"POST", b"DELETE", b"HEAD", b"PATCH", b"OPTIONS"})

#: An RFC 9110 token: what a method may be (anything else llhttp refuses).
_METHOD = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")

#: A field that decides where a request ends (or that the connection upgrades); group
#: 1 is the length of a plain ``Content-Length`` line, the usual case.
_FRAMING = re.compile(
    rb"\n(?:content-length[ \t]*:[ \t]*(\d+)[ \t]*\r\n|content-length|transfer-encoding|upgrade)",
    re.IGNORECASE,
)
_HEX = b"0123456789abcdefABCDEF"

# States of one connection's framing (``_LINE``: at a request's first byte).
_LINE, _BODY, _CHUNK_SIZE, _CHUNK_DATA, _CHUNK_END, _TRAILERS, _PASS = range(7)

#: A body that follows a header section (``_LINE``: none).
_NO_BODY = (_LINE, 0)


class MethodTunnel:
    """One connection's bytes, with each extension verb's request line rewritten.

    ``feed`` returns the bytes to give the parser now: a request's head (its line
    and header section), a chunk-size line or a trailer section is held back
    until it is whole; bodies pass at once.
    """

    __slots__ = ("_eol_from", "_head_from", "_held", "_remaining", "_state", "_websocket")

    def __init__(self) -> None:
        self._state = _LINE
        self._held = b""  # a request's head, a chunk-size line or trailers, begun
        # Where in ``_held`` the searches for its line end and its section end resume.
        self._eol_from = 0
        self._head_from = 0
        self._remaining = 0  # body or chunk bytes still to pass
        self._websocket = False

    def feed(self, data: bytes) -> bytes:
        state = self._state
        if state == _PASS:
            return data
        eol_from = head_from = 0
        if self._held:
            data = self._held + data
            eol_from, head_from = self._eol_from, self._head_from
            self._held = b""
        out: list[bytes] = []
        copied = 0  # data[copied:pos] is still to go out unchanged
        pos = 0
        end = len(data)
        while pos < end:
            if state == _LINE:
                if data[pos] in b"\r\n":  # empty lines between requests
                    pos += 1
                    continue
                eol = data.find(b"\n", pos + eol_from)
                if eol < 0:
                    return self._hold(state, out, data, copied, pos, end - pos, 0)
                if data[eol - 1] != 13:  # a bare LF: llhttp refuses it
                    state = _PASS
                    break
                found = data.find(b"\r\n\r\n", max(eol - 1, pos + head_from))
                if found < 0:
                    return self._hold(state, out, data, copied, pos, eol - pos, end - pos - 3)
                space = data.find(b" ", pos, eol)
                method = data[pos:space] if space > pos else b""
                if method and method not in _NATIVE and _METHOD.fullmatch(method):
                    out.append(data[copied:pos])
                    out.append(_CARRIER_VERB)
                    out.append(data[space : eol + 1])
                    out.append(_CARRIER % method)
                    copied = eol + 1
                state = self._after_head(data, eol, found + 2)
                pos = found + 4
            elif state in (_BODY, _CHUNK_DATA):
                step = min(self._remaining, end - pos)
                pos += step
                self._remaining -= step
                if self._remaining == 0:
                    state = _LINE if state == _BODY else _CHUNK_END
            elif state == _CHUNK_SIZE:
                eol = data.find(b"\n", pos + eol_from)
                if eol < 0:
                    return self._hold(state, out, data, copied, pos, end - pos, 0)
                if eol == pos or data[eol - 1] != 13:
                    state = _PASS
                    break
                size = data[pos : eol - 1].partition(b";")[0]
                if not size or size.strip(_HEX):
                    state = _PASS
                    break
                self._remaining = int(size, 16)
                state = _CHUNK_DATA if self._remaining else _TRAILERS
                pos = eol + 1
            elif state == _CHUNK_END:
                if end - pos < 2:
                    return self._hold(state, out, data, copied, pos, 0, 0)
                if data[pos : pos + 2] != b"\r\n":
                    state = _PASS
                    break
                pos += 2
                state = _CHUNK_SIZE
            elif state == _TRAILERS:  # up to the section's empty line
                if data.startswith(b"\r\n", pos):
                    pos += 2
                else:
                    found = data.find(b"\r\n\r\n", pos + head_from)
                    if found < 0:
                        return self._hold(state, out, data, copied, pos, 0, end - pos - 3)
                    out.append(data[copied:pos])  # trailer fields: dropped (module docstring)
                    copied = found + 2
                    pos = found + 4
                state = _LINE
            else:  # _PASS
                break
            eol_from = head_from = 0
            if state == _LINE and self._websocket:
                state = _PASS  # the rest is the upgraded protocol's
        self._state = state
        if not out:
            return data
        out.append(data[copied:])
        return b"".join(out)

    def _hold(
        self,
        state: int,
        out: list[bytes],
        data: bytes,
        copied: int,
        pos: int,
        eol_from: int,
        head_from: int,
    ) -> bytes:
        """Keep ``data[pos:]`` (an element not yet whole) for the next read, with where
        its searches resume; what is before it goes out now. Past :data:`MAX_HEAD` the
        connection is passed through."""
        if len(data) - pos > MAX_HEAD:
            self._state = _PASS
            out.append(data[copied:])
            return b"".join(out)
        self._state = state
        out.append(data[copied:pos])
        self._held = data[pos:]
        self._eol_from = eol_from
        self._head_from = max(0, head_from)
        return b"".join(out)

    def _after_head(self, data: bytes, eol: int, block_end: int) -> int:
        """The state after the header section ``data[eol + 1 : block_end]`` (``eol`` is
        the request line's LF); a body's length goes to ``_remaining``."""
        framing = _FRAMING.search(data, eol, block_end)
        if framing is None:
            return _LINE  # no body: the next request
        length = framing.group(1)
        if length is not None and _FRAMING.search(data, framing.end() - 1, block_end) is None:
            self._remaining = int(length)  # one plain Content-Length, nothing else
            return _BODY if self._remaining else _LINE
        state, self._remaining = self._framing(data[eol + 1 : block_end])
        return state

    def _framing(self, block: bytes) -> tuple[int, int]:
        """The state after a header section, and the body bytes to pass."""
        lower = block.lower()
        length: int | None = None
        chunked = False
        for line in lower[:-2].split(b"\r\n"):
            name, colon, value = line.partition(b":")
            if not colon or b"\n" in line or line[:1] in (b" ", b"\t"):
                return _PASS, 0  # malformed or folded: llhttp decides
            value = value.strip(b" \t")
            if name == b"content-length":
                if length is not None or not value.isdigit():
                    return _PASS, 0
                length = int(value)
            elif name == b"transfer-encoding":
                if chunked or value != b"chunked":
                    return _PASS, 0
                chunked = True
            elif name == b"upgrade" and value == b"websocket":
                self._websocket = True
        if chunked:
            return (_PASS, 0) if length is not None else (_CHUNK_SIZE, 0)
        if length:
            return _BODY, length
        return _NO_BODY


def untunnelled(request: web.Request) -> web.Request:
    """``request`` with the method the client sent, if the tunnel rewrote it."""
    carried = request.headers.get(HEADER)
    if carried is None or request.method != CARRIER_VERB:
        return request
    method, _, token = carried.partition(" ")
    if not hmac.compare_digest(token.encode(), _TOKEN.encode()):
        return request
    headers = CIMultiDict(request.headers)
    headers.popall(HEADER)
    return request.clone(method=method, headers=headers)
