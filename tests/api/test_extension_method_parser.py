"""The request parser: every method token a client sends arrives, on any connection.

Raw sockets, so the bytes and how they are split across reads are the test's.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.conftest import DevServer


async def _exchange(dev: DevServer, chunks: list[bytes], answers: int) -> list[tuple[int, bytes]]:
    """Send ``chunks`` as separate writes (a pause between them), read ``answers`` replies."""
    server = dev.client.server
    reader, writer = await asyncio.open_connection(server.host, server.port)
    try:
        for chunk in chunks:
            writer.write(chunk)
            await writer.drain()
            await asyncio.sleep(0.01)
        return [await _read_reply(reader) for _ in range(answers)]
    finally:
        writer.close()
        await writer.wait_closed()


async def _read_reply(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=10)
    status_line, *lines = head.decode("latin-1").split("\r\n")
    length = 0
    for line in lines:
        name, _, value = line.partition(":")
        if name.lower() == "content-length":
            length = int(value)
    body = await reader.readexactly(length) if length else b""
    return int(status_line.split(" ")[1]), body


def _request(dev: DevServer, method: str, path: str, body: bytes = b"") -> bytes:
    lines = [
        f"{method} {path} HTTP/1.1",
        "Host: coffer",
        f"X-Vault-Token: {dev.token}",
        f"Content-Length: {len(body)}",
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def _write(dev: DevServer, key: str, body: dict[str, object]) -> bytes:
    return _request(dev, "PUT", f"/v1/secret/data/{key}", json.dumps({"data": body}).encode())


def _keys(reply: tuple[int, bytes]) -> list[str]:
    status, body = reply
    assert status == 200, body
    return list(json.loads(body)["data"]["keys"])


async def test_list_verb_on_a_kept_alive_connection(dev: DevServer) -> None:
    """GET, LIST, HELP, LIST: each answered as its own verb on one connection."""
    replies = await _exchange(
        dev,
        [
            _write(dev, "a", {"v": 1}),
            _request(dev, "LIST", "/v1/secret/metadata/"),
            _request(dev, "HELP", "/v1/secret/data/a"),
            _request(dev, "GET", "/v1/secret/data/a"),
            _request(dev, "LIST", "/v1/secret/metadata"),
        ],
        answers=5,
    )
    assert replies[0][0] == 200
    assert _keys(replies[1]) == ["a"]
    assert replies[2][0] == 200 and b'"help"' in replies[2][1]
    assert json.loads(replies[3][1])["data"]["data"] == {"v": 1}
    assert _keys(replies[4]) == ["a"]


@pytest.mark.parametrize("split", [1, 2, 3, 4, 5, 9, 30])
async def test_list_request_line_split_across_reads(dev: DevServer, split: int) -> None:
    """A request line cut anywhere still arrives as LIST."""
    listing = _request(dev, "LIST", "/v1/secret/metadata/")
    replies = await _exchange(
        dev,
        [_write(dev, "b", {"v": 2}), listing[:split], listing[split:]],
        answers=2,
    )
    assert _keys(replies[1]) == ["b"]


async def test_pipelined_requests_with_list_in_one_read(dev: DevServer) -> None:
    """Several requests in one read, LIST among them: all answered, in order."""
    batch = (
        _write(dev, "c", {"v": 3})
        + _request(dev, "LIST", "/v1/secret/metadata/")
        + _request(dev, "GET", "/v1/secret/data/c")
    )
    replies = await _exchange(dev, [batch], answers=3)
    assert replies[0][0] == 200
    assert _keys(replies[1]) == ["c"]
    assert json.loads(replies[2][1])["data"]["data"] == {"v": 3}


async def test_a_body_that_looks_like_a_request_line_is_left_alone(dev: DevServer) -> None:
    """The second read of a body starts like a LIST request: it is body, not a request."""
    value = "LIST /v1/secret/metadata/ HTTP/1.1\r\n"
    body = json.dumps({"data": {"text": value}}).encode()
    cut = body.index(b"LIST")
    request = _request(dev, "PUT", "/v1/secret/data/d", body)
    head_end = len(request) - len(body)
    replies = await _exchange(
        dev,
        [
            request[: head_end + cut],
            request[head_end + cut :],
            _request(dev, "GET", "/v1/secret/data/d"),
        ],
        answers=2,
    )
    assert replies[0][0] == 200, replies[0]
    assert json.loads(replies[1][1])["data"]["data"] == {"text": value}


async def test_unknown_method_is_a_405_with_errors(dev: DevServer) -> None:
    """A token no route knows: the JSON 405 of the API, not the parser's plain 400."""
    (reply,) = await _exchange(dev, [_request(dev, "FROB", "/v1/secret/data/a")], answers=1)
    status, body = reply
    assert status == 405
    assert json.loads(body)["errors"]


async def test_connect_is_refused_rather_than_left_hanging(dev: DevServer) -> None:
    request = b"CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n"
    (reply,) = await _exchange(dev, [request], answers=1)
    assert 400 <= reply[0] < 500


async def test_an_oversized_split_request_line_is_a_4xx_not_a_hang(dev: DevServer) -> None:
    """A request line over the parser's line limit is refused, split or not."""
    target = "/v1/secret/data/" + "x" * (64 * 1024 + 10)
    request = f"LIST {target} HTTP/1.1\r\nHost: coffer\r\n\r\n".encode()
    (reply,) = await _exchange(dev, [request[:3], request[3:]], answers=1)
    assert 400 <= reply[0] < 500
