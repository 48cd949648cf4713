"""ProviderClient over a scripted HttpClient: 400 versus 502, paging rules, budget."""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from typing import Any

import pytest

from node.auth.idp.errors import LoginFailedError, UpstreamError
from node.auth.idp.provider import MAX_GROUP_PAGES, ProviderClient
from node.outbound import HttpClient, HttpReply, OutboundError

ORIGIN = "https://acme.okta.com"
GROUPS = f"{ORIGIN}/api/v1/users/00u1/groups"


class Scripted:
    """Answers each URL with the next scripted reply (or raises it)."""

    def __init__(self, replies: dict[str, list[HttpReply | Exception]]) -> None:
        self.replies = replies
        self.calls: list[tuple[str, str, dict[str, str], Any, float]] = []

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        json: Any = None,
        timeout: float = 10.0,
    ) -> HttpReply:
        self.calls.append((method, url, dict(headers or {}), json, timeout))
        reply = self.replies[url].pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply

    async def close(self) -> None:
        return None


def reply(status: int, body: Any, **headers: str) -> HttpReply:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return HttpReply(status, {k.lower(): v for k, v in headers.items()}, raw)


def page(*names: str, link: str = "") -> HttpReply:
    groups = [{"id": f"00g{n}", "profile": {"name": n}} for n in names]
    return reply(200, groups, Link=link) if link else reply(200, groups)


def client(replies: dict[str, list[HttpReply | Exception]], **kwargs: Any) -> Any:
    http = Scripted(replies)
    assert isinstance(http, HttpClient)
    return ProviderClient(http, ORIGIN, "tok", **kwargs), http


async def test_authn_sends_credentials_without_the_api_token() -> None:
    provider, http = client({f"{ORIGIN}/api/v1/authn": [reply(200, {"status": "SUCCESS"})]})
    assert (await provider.authn("alice", "pw")).status == "SUCCESS"
    method, _, headers, body, _ = http.calls[0]
    assert (method, body) == ("POST", {"username": "alice", "password": "pw"})
    assert "Authorization" not in headers
    assert headers["Accept"] == "application/json"


@pytest.mark.parametrize("status", [400, 401, 403])
async def test_a_provider_refusal_is_a_login_failure(status: int) -> None:
    error = {"errorCode": "E0000004", "errorSummary": "Authentication failed"}
    provider, _ = client({f"{ORIGIN}/api/v1/authn": [reply(status, error)]})
    with pytest.raises(LoginFailedError, match=r"Authentication failed \(code=E0000004\)"):
        await provider.authn("alice", "bad")


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        (reply(500, {"errorCode": "E0000009", "errorSummary": "Internal"}), "HTTP 500"),
        (reply(429, {"errorCode": "E0000047", "errorSummary": "Rate limit"}), "HTTP 429"),
        (reply(401, b"<html>no</html>"), "HTTP 401"),
        (reply(302, b"", Location="https://evil.com"), "redirects are not followed"),
        (reply(200, b"<html>garbage</html>"), "not JSON"),
        (reply(200, {"no": "status"}), "no 'status'"),
        (OutboundError("no reply within 10 seconds"), "no reply within"),
    ],
)
async def test_provider_failures_are_upstream_errors(
    answer: HttpReply | Exception, fragment: str
) -> None:
    provider, _ = client({f"{ORIGIN}/api/v1/authn": [answer]})
    with pytest.raises(UpstreamError, match=fragment) as caught:
        await provider.authn("alice", "pw")
    assert caught.value.status == 502
    assert "pw" not in str(caught.value)


async def test_verify_quotes_the_factor_id_and_forwards_the_client() -> None:
    url = f"{ORIGIN}/api/v1/authn/factors/a%2F..%2Fb/verify"
    provider, http = client({url: [reply(200, {"status": "SUCCESS"})]})
    await provider.verify("a/../b", "state", "123456", "10.1.2.3")
    _, sent, headers, body, _ = http.calls[0]
    assert sent == url
    assert body == {"stateToken": "state", "passCode": "123456"}
    assert headers["X-Forwarded-For"] == "10.1.2.3"


async def test_groups_follow_next_links_with_the_api_token() -> None:
    second, third = f"{GROUPS}?after=2", f"{GROUPS}?after=4"
    provider, http = client(
        {
            GROUPS: [page("a", "b", link=f'<{GROUPS}>; rel="self", <{second}>; rel="next"')],
            second: [page("c", "d", link=f'<{third}>; rel="next"')],
            third: [page("e")],
        }
    )
    assert await provider.user_groups("00u1") == ["a", "b", "c", "d", "e"]
    assert [call[1] for call in http.calls] == [GROUPS, second, third]
    assert all(call[2]["Authorization"] == "SSWS tok" for call in http.calls)


async def test_a_next_link_to_another_origin_is_refused() -> None:
    provider, http = client({GROUPS: [page("a", link='<https://evil.example/steal>; rel="next"')]})
    with pytest.raises(UpstreamError, match="another origin"):
        await provider.user_groups("00u1")
    assert len(http.calls) == 1


async def test_looping_and_endless_pages_are_refused() -> None:
    provider, _ = client({GROUPS: [page("a", link=f'<{GROUPS}>; rel="next"')]})
    with pytest.raises(UpstreamError, match="loop"):
        await provider.user_groups("00u1")
    urls = [f"{GROUPS}?after={i}" for i in range(MAX_GROUP_PAGES + 1)]
    replies: dict[str, list[HttpReply | Exception]] = {
        GROUPS: [page("g", link=f'<{urls[0]}>; rel="next"')]
    }
    for here, following in itertools.pairwise(urls):
        replies[here] = [page("g", link=f'<{following}>; rel="next"')]
    provider, _ = client(replies)
    with pytest.raises(UpstreamError, match="pages"):
        await provider.user_groups("00u1")


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        (
            reply(401, {"errorCode": "E0000011", "errorSummary": "Invalid token provided"}),
            "E0000011",
        ),
        (reply(200, {"not": "a list"}), "not a JSON array"),
    ],
)
async def test_group_failures_are_upstream_errors(answer: HttpReply, fragment: str) -> None:
    provider, _ = client({GROUPS: [answer]})
    with pytest.raises(UpstreamError, match=fragment):
        await provider.user_groups("00u1")


async def test_calls_share_one_time_budget() -> None:
    provider, http = client({GROUPS: [page("a")]}, call_timeout=10.0, budget=3.0)
    await provider.user_groups("00u1")
    assert 0 < http.calls[0][4] <= 3.0
    spent, _ = client({GROUPS: [page("a")]}, budget=0.0)
    with pytest.raises(UpstreamError, match="longer than"):
        await spent.user_groups("00u1")
