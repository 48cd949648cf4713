"""Typed application keys for state shared across handlers."""

from __future__ import annotations

from aiohttp import web

from api.listener import ListenerLimits
from node.core.core import Core

__all__ = ["CORE", "FORWARDED_FROM", "LIMITS", "REQUEST_ID"]

CORE = web.AppKey("core", Core)
LIMITS = web.AppKey("listener_limits", ListenerLimits)
#: On a request relayed by a standby (its signature checked): that standby's
#: ``host:port`` as this node's socket sees it, for the audit entries.
FORWARDED_FROM = web.RequestKey("forwarded_from", str)
#: The id the edge gives every request (``X-Request-Id``, the envelope's
#: ``request_id``, the audit entries).
REQUEST_ID = web.RequestKey("request_id", str)
