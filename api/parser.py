"""Use aiohttp's pure-Python HTTP parser so the ``LIST`` verb is accepted.

Vault clients (the Go API client, hvac, Terraform) send ``LIST`` as an HTTP
method. aiohttp's C parser (llhttp) only knows the registered methods and
rejects it with a 400 before any handler runs; the Python parser accepts any
RFC 7230 token. Importing this module switches the server side only.
"""

from __future__ import annotations

import aiohttp.http_parser
import aiohttp.web_protocol

__all__ = ["use_extension_method_parser"]


def use_extension_method_parser() -> None:
    aiohttp.web_protocol.HttpRequestParser = aiohttp.http_parser.HttpRequestParserPy  # type: ignore[attr-defined]
