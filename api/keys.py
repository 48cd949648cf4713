"""Typed application keys for state shared across handlers."""

from __future__ import annotations

from aiohttp import web

from api.listener import ListenerLimits
from node.core.core import Core

__all__ = ["CORE", "LIMITS"]

CORE = web.AppKey("core", Core)
LIMITS = web.AppKey("listener_limits", ListenerLimits)
