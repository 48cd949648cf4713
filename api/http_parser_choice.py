"""aiohttp's pure-Python HTTP parser, chosen through aiohttp's public switch.

Vault clients send ``LIST`` (and ``HELP``) as HTTP methods. aiohttp's C parser
(llhttp) refuses any method it does not know; its pure-Python parser accepts
every RFC 9110 token. aiohttp picks one when it is first imported, from the
``AIOHTTP_NO_EXTENSIONS`` environment variable, so the variable is set before
aiohttp is imported (``api/__init__.py``; ``tests/pure_python_http.py`` for the
test process) and :func:`require_pure_python_parser` refuses to build the app if
it came too late. Nothing in aiohttp is replaced at run time. The cost, a few
microseconds per request, is measured in docs/performance.md.
"""

from __future__ import annotations

import os

__all__ = ["SWITCH", "choose_pure_python_parser", "require_pure_python_parser"]

#: aiohttp's documented switch: any non-empty value selects its pure-Python parts.
SWITCH = "AIOHTTP_NO_EXTENSIONS"


def choose_pure_python_parser() -> None:
    """Select the pure-Python parser for aiohttp imported from now on (and children)."""
    os.environ.setdefault(SWITCH, "1")


def require_pure_python_parser() -> None:
    """Raise unless aiohttp serves with its pure-Python request parser."""
    from aiohttp import http
    from aiohttp.http_parser import HttpRequestParserPy

    if http.HttpRequestParser is not HttpRequestParserPy:
        raise RuntimeError(
            f"aiohttp was imported with its C HTTP parser, which refuses LIST: set {SWITCH}=1 "
            "in the environment (or import api before aiohttp)"
        )
