"""The "never a 500" guarantee: hostile input to every endpoint, in every state.

Each endpoint gets malformed bodies, every field set to values of every wrong
type, odd methods, odd query strings and odd headers, while the server is
uninitialised, sealed and unsealed. Every answer must be below 500, and every
error must carry an ``errors`` list (plus ``Cache-Control: no-store`` and an
``X-Request-Id``, like every response).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from node.core.core import Core
from tests.api.helpers import Reply, call


@dataclass(frozen=True)
class Endpoint:
    path: str
    #: body fields (for writes) or query parameters (for reads) worth fuzzing
    fields: tuple[str, ...] = ()
    writes: bool = True
    reads: bool = False


ENDPOINTS = [
    Endpoint(
        "sys/init",
        (
            "secret_shares",
            "secret_threshold",
            "pgp_keys",
            "root_token_pgp_key",
            "recovery_shares",
            "recovery_threshold",
            "recovery_pgp_keys",
            "stored_shares",
        ),
        reads=True,
    ),
    Endpoint("sys/unseal", ("key", "reset", "migrate", "KEY", "Reset")),
    Endpoint("sys/seal"),
    Endpoint("sys/seal-status", writes=False, reads=True),
    Endpoint(
        "sys/health",
        (
            "standbyok",
            "perfstandbyok",
            "activecode",
            "standbycode",
            "performancestandbycode",
            "drsecondarycode",
            "sealedcode",
            "uninitcode",
        ),
        writes=False,
        reads=True,
    ),
    Endpoint("sys/leader", writes=False, reads=True),
    Endpoint("sys/generate-root/attempt", ("otp", "pgp_key"), reads=True),
    Endpoint("sys/generate-root/update", ("key", "nonce")),
    Endpoint("sys/rotate"),
    Endpoint("sys/key-status", writes=False, reads=True),
    Endpoint("sys/metrics", ("format",), writes=False, reads=True),
    Endpoint("sys/mounts", reads=True, writes=False),
    Endpoint(
        "sys/mounts/fuzz",
        ("type", "description", "config", "options", "local", "seal_wrap", "plugin_name"),
        reads=True,
    ),
    Endpoint("secret/data/x", ("data", "options", "version"), reads=True),
    Endpoint("secret/config", ("max_versions", "cas_required", "delete_version_after"), reads=True),
    Endpoint(
        "secret/metadata/x",
        ("max_versions", "cas_required", "delete_version_after", "custom_metadata"),
        reads=True,
    ),
    Endpoint("secret/delete/x", ("versions",)),
    Endpoint("secret/undelete/x", ("versions",)),
    Endpoint("secret/destroy/x", ("versions",)),
]


def _nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for n in range(depth):
        value = {"k": value} if n % 2 else [value]
    return value


#: JSON values of every type, including extremes, for every field.
VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    -1,
    1.5,
    -0.0,
    1e308,
    -1e308,
    2**63,
    -(2**63) - 1,
    10**100,
    int("9" * 4000),
    "",
    " ",
    "x",
    "true",
    "1",
    "-1",
    "1h",
    "9" * 400 + "h",
    "9" * 5000,
    "é",
    "\u0000",
    "\ud800",
    "\udcff",
    "💥" * 50,
    "a" * 100_000,
    "../../etc",
    [],
    [1],
    ["x"],
    [None],
    [[[]]],
    list(range(5000)),
    {},
    {"a": 1},
    {"": None},
    {"cas": "x", "version": []},
    {"\ud800": "\udfff"},
    _nested(50),
    _nested(450),
]

#: Bodies that are not a JSON object, or not JSON at all.
RAW_BODIES: list[bytes] = [
    b"{",
    b"}",
    b"not json",
    b"[1]",
    b'"x"',
    b"1",
    b"true",
    b"null",
    b"[]",
    b"{}",
    b"\xff\xfe\x00",
    b'{"key": "\xff"}',
    b'{"a": NaN}',
    b'{"a": Infinity}',
    b'{"a": -Infinity}',
    b'{"a": 1' + b"9" * 4400 + b"}",
    b'{"a": 1e99999}',
    b'{"a": "\\ud800"}',
    b'{"a": "\\u0000"}',
    b'{"a": 1, "a": 2}',
    b"\xef\xbb\xbf{}",
    '{"secret_shares": 1}'.encode("utf-16"),
    '{"a": 1}'.encode("utf-32"),
    b"{" * 100_000,
    b"[" * 100_000 + b"]" * 100_000,
    b'{"data": ' + b"[" * 498 + b"]" * 498 + b"}",
    b'{"data": ' + b"[" * 499 + b"]" * 499 + b"}",
    b'{"data": ' + b'{"k": ' * 600 + b"1" + b"}" * 600 + b"}",
    b'{"data": ' + b"[" * 990 + b"]" * 990 + b"}",
    b"\x00" * 10,
    b" \r\n\t ",
    # bodies that are only meaningful as forms (sent with both content types below)
    b"a=%zz",
    b"key=%ff%fe",
    b"=x&&&=",
    b"versions=1&versions=x&versions=",
    b"max_versions=" + b"9" * 5000,
    b"data=x&options=y&version=-1",
    b"secret_shares=1&secret_threshold=1&pgp_keys=a",
    b"reset=maybe&key=",
    b"otp=" + "é".encode() * 28,
    b"type=kv&config=x&options=%00",
]
FORM = "application/x-www-form-urlencoded"

QUERY_VALUES = ["", "x", "-1", "0", "1.5", "true", "9" * 5000, "é", "\u0000", "1e3", "²", "%ff"]
QUERY_NAMES = ["version", "format", "list", "help", "standbyok", "activecode", "cas", "nonce"]
METHODS = ["GET", "HEAD", "PUT", "POST", "DELETE", "LIST", "PATCH", "OPTIONS", "FOO", "HELP"]


@dataclass
class Harness:
    core: Core
    client: TestClient
    state: str
    key: str = ""
    token: str = ""
    failures: list[str] = field(default_factory=list)
    sent: int = 0

    @property
    def auth(self) -> dict[str, str]:
        return {"X-Vault-Token": self.token} if self.token else {}

    def check(self, reply: Reply) -> None:
        self.sent += 1
        problems = []
        if _is_health_report(reply):
            pass  # 501 uninitialised / 503 sealed is the health report, not a failure
        elif reply.status == 503 and self.state != "unsealed":
            pass  # sealed: every path but the sealed-safe ones answers 503 (with errors)
        elif reply.status >= 500:
            problems.append("5xx")
        if not reply.headers.get("X-Request-Id"):
            problems.append("no X-Request-Id")
        if reply.headers.get("Cache-Control") != "no-store":
            problems.append("no Cache-Control: no-store")
        if reply.status >= 400 and reply.method != "HEAD" and not _is_health_report(reply):
            try:
                body = json.loads(reply.raw)
                errors = body.get("errors") if isinstance(body, dict) else None
            except ValueError:
                errors = None
            if not isinstance(errors, list):
                problems.append("no errors list")
        if problems:
            self.failures.append(f"[{self.state}] {', '.join(problems)}: {reply}")

    async def send(self, method: str, path: str, **kwargs: Any) -> None:
        kwargs.setdefault("headers", self.auth)
        reply = await call(self.client, method, "/v1/" + path, **kwargs)
        self.check(reply)
        await self.restore()

    async def restore(self) -> None:
        """Undo state changes fuzzing may cause (sys/seal with a token, a stray unseal)."""
        if self.state == "unsealed" and self.core.sealed:
            await self.core.unseal(self.key)
        elif self.state == "sealed" and not self.core.sealed:
            await self.core.seal()
        assert (await self.core.initialized()) is (self.state != "uninitialised")

    def report(self) -> None:
        shown = "\n".join(self.failures[:25])
        assert not self.failures, f"{len(self.failures)} of {self.sent} requests failed:\n{shown}"


def _is_health_report(reply: Reply) -> bool:
    if "sys/health" not in reply.path or reply.status not in (501, 503):
        return False
    if reply.method == "HEAD":
        return True
    try:
        body = json.loads(reply.raw)
    except ValueError:
        return False
    return isinstance(body, dict) and "initialized" in body and "errors" not in body


STATES = ["uninitialised", "sealed", "unsealed"]


@pytest.fixture(params=STATES)
async def harness(request: pytest.FixtureRequest, fresh_client: tuple[Core, TestClient]) -> Harness:
    core, client = fresh_client
    harness = Harness(core, client, request.param)
    if request.param == "sealed":
        output = await core.initialize(1, 1)
        harness.key, harness.token = output.keys_hex[0], output.root_token
    elif request.param == "unsealed":
        output = await core.dev_bootstrap()
        harness.key, harness.token = output.keys_hex[0], output.root_token
    return harness


def _ids(endpoint: Endpoint) -> str:
    return endpoint.path


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=_ids)
async def test_field_values(harness: Harness, endpoint: Endpoint) -> None:
    """Every field of every endpoint set to every kind of JSON value."""
    for name in endpoint.fields:
        for value in VALUES:
            if endpoint.writes:
                await harness.send("PUT", endpoint.path, json_body={name: value})
            if endpoint.reads and isinstance(value, str) and len(value) < 6000:
                await harness.send("GET", endpoint.path, params={name: value})
        if endpoint.writes:
            # the same values nested one level down, and all fields at once
            await harness.send("PUT", endpoint.path, json_body={name: {name: VALUES}})
    if endpoint.fields and endpoint.writes:
        for value in VALUES:
            await harness.send(
                "POST", endpoint.path, json_body=dict.fromkeys(endpoint.fields, value)
            )
    harness.report()


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=_ids)
async def test_raw_bodies(harness: Harness, endpoint: Endpoint) -> None:
    """Bodies that are not a JSON object, with and without a token and content type."""
    for body in RAW_BODIES:
        for method in ("PUT", "POST", "PATCH"):
            await harness.send(method, endpoint.path, data=body)
        await harness.send("PUT", endpoint.path, data=body, headers={})
        form = {**harness.auth, "Content-Type": FORM}
        await harness.send("PUT", endpoint.path, data=body, headers=form)
        await harness.send("POST", endpoint.path, data=body, headers=form)
        merge = {**harness.auth, "Content-Type": "application/merge-patch+json"}
        await harness.send("PATCH", endpoint.path, data=body, headers=merge)
        await harness.send("GET", endpoint.path, data=body)
        await harness.send("DELETE", endpoint.path, data=body)
    harness.report()


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=_ids)
async def test_methods_and_queries(harness: Harness, endpoint: Endpoint) -> None:
    """Every method, list/help switches, and odd query strings."""
    for method in METHODS:
        await harness.send(method, endpoint.path)
        await harness.send(method, endpoint.path, headers={})
        await harness.send(method, endpoint.path + "/")
        await harness.send(method, endpoint.path + "/extra/segments")
        for params in ({"list": "true"}, {"help": "1"}, {"list": "x", "help": ""}):
            await harness.send(method, endpoint.path, params=params)
    for name in QUERY_NAMES:
        for value in QUERY_VALUES:
            await harness.send("GET", endpoint.path, params={name: value})
        for value in ("", "x", "9" * 5000):
            await harness.send("LIST", endpoint.path, params={name: value})
            await harness.send("DELETE", endpoint.path, params={name: value})
    harness.report()


HEADER_VALUES = ["", " ", "x", "é", "\t", "a" * 4000, "hvs." + "A" * 24, "-1", "9" * 5000]
HEADER_NAMES = [
    "X-Vault-Token",
    "X-Service-Token",
    "Authorization",
    "X-Vault-Wrap-TTL",
    "X-Service-Wrap-TTL",
    "X-Vault-Namespace",
    "X-Vault-Request",
    "Content-Type",
]


@pytest.mark.parametrize(
    "endpoint",
    [e for e in ENDPOINTS if e.path in ("sys/unseal", "sys/key-status", "secret/data/x")],
    ids=_ids,
)
async def test_headers(harness: Harness, endpoint: Endpoint) -> None:
    """Token, wrapping and namespace headers with odd values."""
    for name in HEADER_NAMES:
        for value in HEADER_VALUES:
            headers = {**harness.auth, name: value}
            if name == "Authorization":
                headers = {name: f"Bearer {value}"}
            await harness.send("GET", endpoint.path, headers=headers)
            await harness.send("PUT", endpoint.path, json_body={"data": {}}, headers=headers)
    for ttl in ("1e400s", "999999999999999h", "-5m", "1.5", "5 m", "0"):
        headers = {**harness.auth, "X-Vault-Wrap-TTL": ttl}
        await harness.send("GET", endpoint.path, headers=headers)
    harness.report()


async def _raw_request(harness: Harness, request: bytes) -> None:
    """Send bytes aiohttp's client would refuse to (invalid UTF-8 in a path or header)."""
    server = harness.client.server
    reader, writer = await asyncio.open_connection(server.host, server.port)
    try:
        writer.write(request)
        await writer.drain()
        response = await asyncio.wait_for(reader.read(), timeout=10)
    finally:
        writer.close()
        await writer.wait_closed()
    head, _, body = response.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in header_lines if ": " in line)
    from multidict import CIMultiDict, CIMultiDictProxy

    reply = Reply(
        request.split(b" ", 1)[0].decode(),
        repr(request[:80]),
        int(status_line.split(" ")[1]),
        CIMultiDictProxy(CIMultiDict(headers)),
        body,
    )
    harness.check(reply)
    await harness.restore()


@pytest.mark.parametrize(
    "target",
    [
        b"/v1/secret/data/\xff\xfe",
        b"/v1/secret/data/x?version=\xff",
        b"/v1/sys/health?activecode=\xff",
        b"/v1/sys/metrics?format=\xc3\x28",
        b"/v1/secret/metadata/\xed\xa0\x80?list=true",
        b"/v1/sys/key-status",
        b"/v1/sys/unseal",
        b"/v1/\xff",
    ],
)
@pytest.mark.parametrize(
    "extra_header", [b"", b"X-Vault-Token: \xff\xfe\r\n", b"Authorization: Bearer \x80\r\n"]
)
async def test_invalid_utf8_on_the_wire(
    harness: Harness, target: bytes, extra_header: bytes
) -> None:
    token = f"X-Vault-Token: {harness.token}\r\n".encode() if harness.token else b""
    for method, body in ((b"GET", b""), (b"PUT", b'{"key": "\xff"}')):
        request = (
            method + b" " + target + b" HTTP/1.1\r\nHost: x\r\n"
            + (extra_header or token)
            + b"Content-Type: application/json\r\n"
            + b"Content-Length: " + str(len(body)).encode() + b"\r\n"
            + b"Connection: close\r\n\r\n" + body
        )  # fmt: skip
        await _raw_request(harness, request)
    harness.report()


async def test_corrupt_content_encoding(harness: Harness) -> None:
    for path in (b"/v1/sys/unseal", b"/v1/sys/init", b"/v1/secret/data/x"):
        for encoding in (b"gzip", b"deflate"):
            request = (
                b"PUT " + path + b" HTTP/1.1\r\nHost: x\r\n"
                + (f"X-Vault-Token: {harness.token}\r\n".encode() if harness.token else b"")
                + b"Content-Encoding: " + encoding + b"\r\n"
                + b"Content-Length: 5\r\nConnection: close\r\n\r\nabcde"
            )  # fmt: skip
            await _raw_request(harness, request)
    harness.report()
