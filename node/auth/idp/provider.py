"""Calls to the provider's authn and users API over ``node.outbound.HttpClient``.

Failure is split in two so clients can tell them apart: the provider judging
the login (an Okta error body on a 4xx: bad password, wrong passcode) is a
``LoginFailedError`` (400); the provider not doing its job (unreachable,
slow, 5xx, rate limiting, redirects, garbage) is an ``UpstreamError`` (502).
All calls of one login share a time budget so a slow provider cannot hold a
request for pages times the per-call timeout.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlsplit

from node.auth.idp.errors import LoginFailedError, UpstreamError
from node.auth.idp.wire import (
    AuthnResult,
    MalformedReply,
    ProviderError,
    next_link,
    parse_authn,
    parse_error,
    parse_groups,
    same_origin,
)
from node.outbound import DEFAULT_TIMEOUT, HttpClient, HttpReply, OutboundError

__all__ = ["LOGIN_BUDGET", "MAX_GROUP_PAGES", "ProviderClient"]

#: Seconds all provider calls of one login may take together.
LOGIN_BUDGET = 30.0
MAX_GROUP_PAGES = 100


def _shown(url: str) -> str:
    """The URL without its query (cursors are noise in error messages)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


class ProviderClient:
    def __init__(
        self,
        http: HttpClient,
        origin: str,
        api_token: str = "",
        *,
        call_timeout: float = DEFAULT_TIMEOUT,
        budget: float = LOGIN_BUDGET,
    ) -> None:
        self._http = http
        self._origin = origin
        self._api_token = api_token
        self._call_timeout = call_timeout
        self._deadline = time.monotonic() + budget
        self._budget = budget

    async def _call(
        self, method: str, url: str, *, json: Any = None, headers: Mapping[str, str] | None = None
    ) -> HttpReply:
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise UpstreamError(
                f"identity provider calls took longer than {self._budget:g} seconds in total"
            )
        sent = {"Accept": "application/json", **(headers or {})}
        try:
            return await self._http.request(
                method, url, headers=sent, json=json, timeout=min(self._call_timeout, remaining)
            )
        except OutboundError as exc:
            raise UpstreamError(
                f"identity provider request failed: {method} {_shown(url)}: {exc}"
            ) from None

    def _judged(self, reply: HttpReply, step: str) -> AuthnResult:
        """A transaction state from a 200, a refusal from a 4xx error body, else a 502."""
        if reply.status == 200:
            try:
                return parse_authn(reply.body)
            except MalformedReply as exc:
                raise UpstreamError(
                    f"identity provider gave an unusable {step} reply: {exc}"
                ) from None
        error = parse_error(reply.body)
        if error is not None and 400 <= reply.status < 500 and reply.status != 429:
            raise LoginFailedError(f"idp auth failed: {error.describe()}")
        raise UpstreamError(_unexpected(reply, step, error))

    async def authn(self, username: str, password: str) -> AuthnResult:
        reply = await self._call(
            "POST",
            f"{self._origin}/api/v1/authn",
            json={"username": username, "password": password},
        )
        return self._judged(reply, "authentication")

    async def verify(
        self, factor_id: str, state_token: str, passcode: str, forwarded_for: str = ""
    ) -> AuthnResult:
        headers = {"X-Forwarded-For": forwarded_for} if forwarded_for else {}
        reply = await self._call(
            "POST",
            f"{self._origin}/api/v1/authn/factors/{quote(factor_id, safe='')}/verify",
            json={"stateToken": state_token, "passCode": passcode},
            headers=headers,
        )
        return self._judged(reply, "factor verification")

    async def user_groups(self, user_id: str) -> list[str]:
        """Names of the user's groups, following ``Link: rel="next"`` pages.

        Next links must stay on the provider's origin: the API token is sent
        with every page and must not be handed to another host.
        """
        url = f"{self._origin}/api/v1/users/{quote(user_id, safe='')}/groups"
        headers = {"Authorization": f"SSWS {self._api_token}"}
        names: list[str] = []
        seen: set[str] = set()
        for _ in range(MAX_GROUP_PAGES):
            seen.add(url)
            reply = await self._call("GET", url, headers=headers)
            if reply.status != 200:
                message = _unexpected(reply, "group listing", parse_error(reply.body))
                raise UpstreamError(f"idp failure retrieving groups: {message}")
            try:
                names.extend(parse_groups(reply.body))
            except MalformedReply as exc:
                raise UpstreamError(f"idp failure retrieving groups: {exc}") from None
            following = next_link(reply.header("link"), url)
            if following is None:
                return names
            if not same_origin(following, self._origin):
                raise UpstreamError(
                    f"idp failure retrieving groups: refusing to follow a next-page link "
                    f"to another origin ({_shown(following)})"
                )
            if following in seen:
                raise UpstreamError("idp failure retrieving groups: next-page links loop")
            url = following
        raise UpstreamError(
            f"idp failure retrieving groups: more than {MAX_GROUP_PAGES} pages of groups"
        )


def _unexpected(reply: HttpReply, step: str, error: ProviderError | None) -> str:
    text = f"identity provider answered the {step} request with HTTP {reply.status}"
    if error is not None:
        return f"{text}: {error.describe()}"
    if 300 <= reply.status < 400:
        return f"{text} (redirects are not followed)"
    return text
