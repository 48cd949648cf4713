"""Before authentication (issue 14, items 5 and 7): without a live token a request
reaches only login and sealed-safe paths; anything else is 403 before routing and
before its body is read, whatever is or is not mounted there; JSON nesting is
bounded while parsing."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from api.app import create_app
from api.json_body import MAX_JSON_DEPTH, decode_bounded, decode_json
from api.listener import ListenerLimits
from api.translate import UNAUTHENTICATED_BODY_LIMIT
from node.core.core import Core
from node.physical.inmem import InmemBackend
from sdk.errors import InvalidRequestError
from tests.api.edge_serving import connection, read_reply, request, send, serving
from tests.api.helpers import dev_call
from tests.conftest import DevServer


@pytest.fixture
async def up(dev: DevServer) -> DevServer:
    """``dev`` with userpass at ``auth/userpass/``, a user, and a namespace ``team``."""
    for path, body in (
        ("sys/auth/userpass", {"type": "userpass"}),
        ("auth/userpass/users/alice", {"password": "pw-alice-1"}),
        ("sys/namespaces/team", {}),
    ):
        status, reply = await dev_call(dev, "POST", path, body)
        assert status in (200, 204), reply
    return dev


@pytest.mark.parametrize("token", [None, "hvs.not-a-token"], ids=["no token", "bad token"])
@pytest.mark.parametrize(
    ("method", "path", "namespace"),
    [
        ("GET", "secret/data/a", ""),  # mounted
        ("GET", "nope/data/a", ""),  # not mounted
        ("LIST", "secret/metadata/", ""),
        ("LIST", "nope/metadata/", ""),
        ("GET", "secret/data/a", "team"),  # namespace exists, mount does not
        ("GET", "secret/data/a", "no-such-namespace"),
        ("GET", "team/secret/data/a", ""),
        ("GET", "no-such-namespace/secret/data/a", ""),
        ("GET", "auth/userpass/users/alice", ""),  # auth mount, not a login path
        ("GET", "auth/nope/users/alice", ""),
        ("PUT", "sys/mounts/kv2", ""),
        ("PUT", "nope/x", ""),
        ("HELP", "nope/x", ""),
        ("HELP", "secret/data/a", ""),
    ],
)
async def test_unauthenticated_requests_are_403_whatever_exists(
    up: DevServer, token: str | None, method: str, path: str, namespace: str
) -> None:
    headers = {"X-Vault-Namespace": namespace} if namespace else {}
    status, body = await dev_call(
        up, method, path, {"type": "kv"} if method == "PUT" else None, token, headers=headers
    )
    assert status == 403, (status, body)
    assert body["errors"] == ["permission denied"]


async def test_login_paths_need_no_token(up: DevServer) -> None:
    status, body = await dev_call(
        up, "POST", "auth/userpass/login/alice", {"password": "pw-alice-1"}, None
    )
    assert status == 200, body
    assert body["auth"]["client_token"]


async def test_a_live_token_still_sees_404_for_what_is_not_mounted(up: DevServer) -> None:
    status, body = await dev_call(up, "GET", "nope/data/a")
    assert status == 404, body


# -- bodies of unauthenticated requests, on the server's own listener -----------------


@pytest.fixture
async def served() -> AsyncIterator[tuple[int, str]]:
    core = Core(InmemBackend())
    init = await core.dev_bootstrap()
    limits = ListenerLimits()
    async with serving(create_app(core, 32 * 1024 * 1024, limits=limits), limits) as port:
        yield port, init.root_token


async def test_a_body_is_not_read_without_a_token(served: tuple[int, str]) -> None:
    """Headers announce 30 MiB; the 403 comes without a byte of it sent."""
    port, _ = served
    head = (
        "PUT /v1/secret/data/a HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {30 * 1024 * 1024}\r\n\r\n"
    ).encode()
    async with connection(port) as (reader, writer):
        await send(writer, head)
        reply = await read_reply(reader)
    assert reply.status == 403, reply
    assert reply.json["errors"] == ["permission denied"]


async def test_unauthenticated_bodies_are_small(served: tuple[int, str]) -> None:
    """A login path reads a body, but no more than the unauthenticated limit."""
    port, _ = served
    body = json.dumps({"password": "x" * UNAUTHENTICATED_BODY_LIMIT}).encode()
    async with connection(port) as (reader, writer):
        await send(writer, request("POST", "/v1/sys/unseal", body=body))
        reply = await read_reply(reader)
    assert reply.status == 413, reply
    assert reply.json["errors"] == ["request body too large"]


async def test_a_smaller_max_request_size_holds_for_unauthenticated_bodies() -> None:
    core = Core(InmemBackend())
    await core.dev_bootstrap()
    limits = ListenerLimits()
    body = json.dumps({"key": "x" * 2000}).encode()
    app = create_app(core, 1000, limits=limits)
    async with serving(app, limits) as port, connection(port) as (reader, writer):
        await send(writer, request("POST", "/v1/sys/unseal", body=body))
        reply = await read_reply(reader)
    assert reply.status == 413, reply


async def test_a_live_token_may_send_a_large_body(served: tuple[int, str]) -> None:
    port, token = served
    body = json.dumps({"data": {"v": "x" * (2 * UNAUTHENTICATED_BODY_LIMIT)}}).encode()
    async with connection(port) as (reader, writer):
        await send(writer, request("PUT", "/v1/secret/data/big", token, body))
        reply = await read_reply(reader)
    assert reply.status == 200, reply


# -- JSON nesting, bounded while parsing ------------------------------------------------


def _nested(depth: int) -> bytes:
    return b'{"a":' * (depth - 1) + b"[]" + b"}" * (depth - 1)


def test_nesting_up_to_the_limit_is_read() -> None:
    value = decode_bounded(_nested(MAX_JSON_DEPTH))
    for _ in range(MAX_JSON_DEPTH - 1):
        value = value["a"]
    assert value == []


@pytest.mark.parametrize(
    "raw",
    [
        _nested(MAX_JSON_DEPTH + 1),
        b"[" * 5_000_000,
        b'{"a":' * 100_000,
        b"\xef\xbb\xbf" + _nested(MAX_JSON_DEPTH + 1),
        _nested(MAX_JSON_DEPTH + 1).replace(b"[]", b'["\\ud800"]'),
        _nested(MAX_JSON_DEPTH + 1).decode().encode("utf-16"),
    ],
    ids=["one level too deep", "5 MB of [", "deep objects", "BOM", "lone surrogate", "UTF-16"],
)
def test_deeper_nesting_is_refused(raw: bytes) -> None:
    with pytest.raises(InvalidRequestError, match="nesting deeper than 500"):
        decode_bounded(raw)


@pytest.mark.parametrize(
    "raw",
    [b"1],[2", b'{"a":1}],[{"b":2}', b"],[", b"[]]", b"[[]"],
    ids=["values", "objects", "empty", "extra close", "extra open"],
)
def test_a_body_cannot_break_out_of_the_padding(raw: bytes) -> None:
    with pytest.raises(ValueError):
        decode_bounded(raw)


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        (b'{"n": 12345678901234567890123}', {"n": 12345678901234567890123}),
        (b"\xef\xbb\xbf{}", {}),
        (b'{"s": "\\ud800", "t": "\\\\ud800"}', {"s": "\ud800", "t": "\\ud800"}),
        ('{"a": [1, {"b": "\u00e9"}]}'.encode("utf-16"), {"a": [1, {"b": "\u00e9"}]}),
        (_nested(MAX_JSON_DEPTH).replace(b"[]", b'["\\ud800"]'), None),
        (b' {"a": [1, 2.5, "x", null, true]} ', {"a": [1, 2.5, "x", None, True]}),
    ],
)
def test_values_read_exactly(raw: bytes, value: object) -> None:
    if value is None:  # as the standard library reads it
        value = json.loads(raw)
    assert decode_bounded(raw) == value


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=12,
)


def _depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


@given(_VALUES, st.integers(0, MAX_JSON_DEPTH + 20), st.sampled_from([b"[]", b"{}"]))
def test_any_value_at_any_depth_reads_as_the_standard_library_or_is_too_deep(
    value: object, wrap: int, brackets: bytes
) -> None:
    """Bodies that open few brackets take the unpadded parse, others the padded one:
    the same answer either way, and the depth limit falls at the same place."""
    opener = b'{"k":' if brackets == b"{}" else b"["
    closer = brackets[1:]
    raw = opener * wrap + json.dumps(value).encode() + closer * wrap
    if wrap + _depth(value) > MAX_JSON_DEPTH:
        with pytest.raises(InvalidRequestError, match="nesting deeper than 500"):
            decode_bounded(raw)
    else:
        assert decode_bounded(raw) == json.loads(raw)


@given(st.binary(max_size=64) | _VALUES.map(lambda v: json.dumps(v).encode()), st.data())
def test_garbage_and_truncated_bodies_read_as_the_codec(raw: bytes, data: st.DataObject) -> None:
    """Shallow bodies read exactly as the codec without a bound reads them (which
    refuses what the standard library would read as ``NaN`` or infinity)."""
    raw = raw[: data.draw(st.integers(0, len(raw)))] + data.draw(st.binary(max_size=4))
    try:
        expected = decode_json(raw)
    except ValueError:
        with pytest.raises(ValueError):
            decode_bounded(raw)
    else:
        assert decode_bounded(raw) == expected
