"""aiohttp's C HTTP parser, taught the ``LIST`` verb (and any other extension method).

Vault clients (hvac, Terraform, curl scripts) send ``LIST`` as an HTTP method.
aiohttp's C parser (llhttp) knows only registered methods and rejects ``LIST`` with
a 400 before any handler runs; its pure-Python parser accepts any RFC 9110 token
but costs ~20 µs more per request, a large share of a KV read
(docs/performance.md). So requests go through the C parser, and a request whose
method llhttp would refuse is handed to it as ``GET`` and given its own method
back once parsed:

- Clients that wait for each answer (every Vault client) start each request at
  the start of a read from the socket, after the previous body has ended: there
  the request line is read, and an extension method is renamed before the C
  parser sees it.
- Anything else llhttp refuses in a request line or header section (a request
  line split across reads, pipelined requests, bytes llhttp is stricter about
  than the Python parser) is re-read by the pure-Python parser, which serves
  that connection from then on, so every such request is answered exactly as
  before, with the API's JSON errors. The bytes since the boundary are kept
  for that, up to :data:`MAX_REPLAY_BYTES` (the header section's own limit).

Only the server side is switched, by :func:`use_extension_method_parser`.
"""

from __future__ import annotations

import re
from typing import Any

import aiohttp.http_parser
import aiohttp.web_protocol
from aiohttp.http_exceptions import HttpProcessingError

__all__ = ["MAX_REPLAY_BYTES", "ExtensionMethodParser", "use_extension_method_parser"]

#: Methods llhttp parses that Vault clients send; a request line starting with one
#: goes to the C parser untouched (the common case, checked without a regex).
_NATIVE_STARTS = (b"GET ", b"PUT ", b"POST ", b"DELETE ", b"HEAD ", b"PATCH ", b"OPTIONS ")

#: A whole request line with any token as its method (RFC 9110 ``token``).
_REQUEST_LINE = re.compile(rb"([!#$%&'*+\-.^_`|~0-9A-Za-z]+) [^ \r\n]+ HTTP/\d\.\d\r?\n")

#: Bytes kept since the last message boundary, for a replay by the Python parser:
#: more than the request line and header section may take (aiohttp's defaults:
#: lines of 8190 bytes, 128 headers), so any refused header section fits.
MAX_REPLAY_BYTES = 64 * 1024

_NATIVE_STAND_IN = b"GET"


class ExtensionMethodParser:
    """The request parser of one connection: C parser first, Python parser as fallback.

    It offers the parser interface ``aiohttp.web_protocol.RequestHandler`` uses
    (``feed_data``, ``feed_eof``, ``pause_reading``, ``message_consumed``,
    ``set_upgraded``).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # aiohttp's arguments for a request parser, kept for the Python one.
        self._args = args
        self._kwargs = kwargs
        self._parser: Any = aiohttp.http_parser.HttpRequestParserC(*args, **kwargs)
        self._on_python = False
        #: Bytes fed since the last message boundary while no message came out of
        #: them; ``None`` when unknown (mid-body, or more than the replay limit).
        self._head: bytes | None = b""
        self._last_payload: Any = None
        #: The method of the next message out of the C parser, when renamed.
        self._renamed: str | None = None

    # The parser interface of RequestHandler -----------------------------------

    def feed_data(self, data: bytes) -> tuple[Any, bool, bytes]:
        if self._on_python:
            return self._parser.feed_data(data)  # type: ignore[no-any-return]
        head = self._head_since_boundary()
        fed = data
        if head == b"" and not data.startswith(_NATIVE_STARTS):
            fed = self._rename_extension_method(data)
        try:
            messages, upgraded, tail = self._parser.feed_data(fed)
        except HttpProcessingError:
            if head is None:
                raise
            return self._replay_on_python(head + data)
        if messages:
            if self._renamed is not None:
                first, payload = messages[0]
                messages = [(first._replace(method=self._renamed), payload), *messages[1:]]
                self._renamed = None
            self._last_payload = messages[-1][1]
            self._head = b""
        elif head is not None and len(head) + len(data) <= MAX_REPLAY_BYTES:
            self._head = head + data
        else:
            self._head = None
        return messages, upgraded, tail

    def feed_eof(self) -> Any:
        return self._parser.feed_eof()

    def pause_reading(self) -> None:
        self._parser.pause_reading()

    def message_consumed(self) -> None:
        self._parser.message_consumed()

    def set_upgraded(self, value: bool) -> None:
        self._parser.set_upgraded(value)

    # Internals ----------------------------------------------------------------

    def _head_since_boundary(self) -> bytes | None:
        """What was fed since the last boundary, or ``None`` while a body is unread."""
        payload = self._last_payload
        if payload is not None and not payload.is_eof():
            return None
        return self._head

    def _rename_extension_method(self, data: bytes) -> bytes:
        match = _REQUEST_LINE.match(data)
        if match is None:
            return data
        self._renamed = match.group(1).decode("ascii")
        return _NATIVE_STAND_IN + data[match.end(1) :]

    def _replay_on_python(self, data: bytes) -> tuple[Any, bool, bytes]:
        self._renamed = None
        self._on_python = True
        self._parser = aiohttp.http_parser.HttpRequestParserPy(*self._args, **self._kwargs)
        return self._parser.feed_data(data)  # type: ignore[no-any-return]


def use_extension_method_parser() -> None:
    """Serve with :class:`ExtensionMethodParser` (the Python parser alone when aiohttp
    was installed without its C extensions)."""
    if getattr(aiohttp.http_parser, "HttpRequestParserC", None) is None:
        aiohttp.web_protocol.HttpRequestParser = aiohttp.http_parser.HttpRequestParserPy  # type: ignore[attr-defined]
        return
    aiohttp.web_protocol.HttpRequestParser = ExtensionMethodParser  # type: ignore[attr-defined,assignment]
