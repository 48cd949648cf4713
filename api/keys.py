"""Typed application keys for state shared across handlers."""

from __future__ import annotations

from aiohttp import web

from node.core.core import Core

__all__ = ["CORE"]

CORE = web.AppKey("core", Core)
