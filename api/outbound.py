"""aiohttp implementation of ``node.outbound.HttpClient``.

One shared session (connection pooling across logins), created on first use
because a session must be made inside the running event loop. Calls to a
third party are untrusted input: redirects are not followed (they could move
credentials to another host), bodies are capped, and every call has a
deadline covering connect, send and the whole body.
"""

from __future__ import annotations

import asyncio
import json as jsonlib
from collections.abc import Mapping
from typing import Any

import aiohttp

from node.outbound import DEFAULT_TIMEOUT, HttpReply, OutboundError

__all__ = ["MAX_BODY", "AiohttpClient", "bounded_request"]

#: Largest reply body read from a third party.
MAX_BODY = 1024 * 1024
_CHUNK = 64 * 1024


class AiohttpClient:
    """``max_timeout`` caps every caller's timeout (operators and tests use it
    to bound how long a hanging third party can hold a request)."""

    def __init__(
        self,
        *,
        max_body: int = MAX_BODY,
        max_timeout: float | None = None,
        user_agent: str = "coffer",
        trust_env: bool = False,
    ) -> None:
        self._max_body = max_body
        self._max_timeout = max_timeout
        self._user_agent = user_agent
        self._trust_env = trust_env
        self._session: aiohttp.ClientSession | None = None

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                trust_env=self._trust_env,
                cookie_jar=aiohttp.DummyCookieJar(),
                headers={"User-Agent": self._user_agent},
                timeout=aiohttp.ClientTimeout(total=None),  # bounded_request sets the deadline
            )
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
        if self._max_timeout is not None:
            timeout = min(timeout, self._max_timeout)
        return await bounded_request(
            self._get_session(),
            method,
            url,
            headers=headers,
            json=json,
            timeout=timeout,
            max_body=self._max_body,
        )

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


async def bounded_request(
    session: aiohttp.ClientSession,
    method: str,
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    json: Any = None,
    timeout: float = DEFAULT_TIMEOUT,
    max_body: int = MAX_BODY,
) -> HttpReply:
    """One call within ``timeout`` seconds (connect, send, whole body), redirects
    returned rather than followed, and a body of at most ``max_body`` bytes;
    anything else raises ``OutboundError``."""
    sent = dict(headers or {})
    body: bytes | None = None
    if json is not None:
        body = jsonlib.dumps(json).encode()
        sent.setdefault("Content-Type", "application/json")
    try:
        async with asyncio.timeout(timeout):
            async with session.request(
                method, url, headers=sent, data=body, allow_redirects=False
            ) as response:
                payload = await _read(response, max_body)
                return HttpReply(response.status, _joined(response.headers), payload)
    except TimeoutError:
        raise OutboundError(f"no reply within {timeout:g} seconds") from None
    except (aiohttp.ClientError, OSError, ValueError) as exc:
        # ValueError: aiohttp rejects some malformed URLs that way.
        raise OutboundError(_describe(exc)) from None


async def _read(response: aiohttp.ClientResponse, max_body: int) -> bytes:
    declared = response.content_length
    if declared is not None and declared > max_body:
        raise OutboundError(f"reply body of {declared} bytes exceeds {max_body}")
    chunks: list[bytes] = []
    size = 0
    while chunk := await response.content.read(_CHUNK):
        size += len(chunk)
        if size > max_body:
            raise OutboundError(f"reply body exceeds {max_body} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _joined(headers: Mapping[str, str]) -> dict[str, str]:
    joined: dict[str, str] = {}
    for name, value in headers.items():
        key = name.lower()
        joined[key] = f"{joined[key]}, {value}" if key in joined else value
    return joined


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
