"""HTTP conventions every endpoint follows (the Vault-compatible API contract).

Errors carry ``{"errors": [...]}``; successes are the envelope or an empty 204;
every response has ``Cache-Control: no-store`` and an ``X-Request-Id``; LIST and
``?list=true`` are the same; PUT and POST are the same; malformed input is a 4xx.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from node.core.core import Core
from tests.api.helpers import ENVELOPE_KEYS, Reply, assert_envelope, assert_error, call
from tests.conftest import DevServer

TWO_MIB = 2 * 1024 * 1024


async def _mixed_replies(dev: DevServer) -> list[Reply]:
    """One of each kind of response: envelope, 204, raw JSON, text, and every error class."""
    client, auth = dev.client, dev.auth
    await call(client, "PUT", "/v1/secret/data/a", json_body={"data": {"k": "v"}}, headers=auth)
    merge_patch = {**auth, "Content-Type": "text/plain"}
    return [
        await call(client, "GET", "/v1/secret/data/a", headers=auth),  # 200 envelope
        await call(client, "PUT", "/v1/secret/config", json_body={}, headers=auth),  # 204
        await call(client, "GET", "/v1/sys/seal-status"),  # raw JSON
        await call(client, "GET", "/v1/sys/health"),
        await call(client, "HEAD", "/v1/sys/health"),
        await call(client, "GET", "/v1/sys/metrics", params={"format": "prometheus"}, headers=auth),
        await call(client, "PUT", "/v1/secret/data/a", data="{", headers=auth),  # 400
        await call(client, "GET", "/v1/sys/key-status"),  # 403
        await call(client, "GET", "/v1/nope", headers=auth),  # 404
        await call(client, "GET", "/nope"),  # 404 outside /v1
        await call(client, "DELETE", "/v1/sys/init"),  # 405
        await call(client, "PUT", "/v1/secret/data/a", data="x" * TWO_MIB, headers=auth),  # 413
        await call(client, "PATCH", "/v1/secret/data/a", data="{}", headers=merge_patch),  # 415
    ]


async def test_every_response_has_no_store_and_a_request_id(dev: DevServer) -> None:
    replies = await _mixed_replies(dev)
    sealed = await call(dev.client, "PUT", "/v1/sys/seal", headers=dev.auth)
    replies += [sealed, await call(dev.client, "GET", "/v1/secret/data/a", headers=dev.auth)]

    assert replies[-1].status == 503
    seen: set[str] = set()
    for reply in replies:
        assert reply.headers.get("Cache-Control") == "no-store", str(reply)
        request_id = reply.headers.get("X-Request-Id")
        assert request_id, str(reply)
        assert request_id not in seen, "request ids must be unique"
        seen.add(request_id)


async def test_every_error_has_an_errors_list(dev: DevServer) -> None:
    replies = await _mixed_replies(dev)

    statuses = {r.status for r in replies}
    assert {400, 403, 404, 405, 413, 415} <= statuses
    for reply in replies:
        if reply.status >= 400 and reply.method != "HEAD":
            assert reply.headers["Content-Type"].startswith("application/json"), str(reply)
            assert reply.errors is not None
        assert reply.status < 500, str(reply)


async def test_success_is_the_envelope(dev: DevServer) -> None:
    written = await call(
        dev.client, "PUT", "/v1/secret/data/e", json_body={"data": {"a": 1}}, headers=dev.auth
    )
    read = await call(dev.client, "GET", "/v1/secret/data/e", headers=dev.auth)

    for reply in (written, read):
        body = assert_envelope(reply)
        assert set(body) == ENVELOPE_KEYS
        assert reply.headers["Content-Type"].startswith("application/json")
        assert body["lease_id"] == ""
        assert body["renewable"] is False
        assert body["lease_duration"] == 0
        assert body["wrap_info"] is None
        assert body["auth"] is None
        assert "errors" not in body
    assert read.data["data"] == {"a": 1}


async def test_204_has_an_empty_body(dev: DevServer) -> None:
    replies = [
        await call(dev.client, "PUT", "/v1/secret/config", json_body={}, headers=dev.auth),
        await call(dev.client, "PUT", "/v1/sys/rotate", headers=dev.auth),
        await call(dev.client, "DELETE", "/v1/secret/metadata/none", headers=dev.auth),
    ]

    for reply in replies:
        assert reply.status == 204, str(reply)
        assert reply.raw == b""
        assert reply.headers.get("Content-Length") in (None, "0")


async def test_list_verb_and_list_query_are_the_same(dev: DevServer) -> None:
    for name in ("b", "a", "dir/c", "dir/d/e"):
        reply = await call(
            dev.client, "PUT", f"/v1/secret/data/{name}", json_body={"data": {"x": 1}},
            headers=dev.auth,
        )  # fmt: skip
        assert reply.status == 200, str(reply)

    for path in ("/v1/secret/metadata/", "/v1/secret/metadata", "/v1/secret/metadata/dir"):
        by_verb = await call(dev.client, "LIST", path, headers=dev.auth)
        by_query = await call(dev.client, "GET", path, params={"list": "true"}, headers=dev.auth)

        assert_envelope(by_verb)
        assert_envelope(by_query)
        assert by_verb.data["keys"] == by_query.data["keys"]
    root = await call(dev.client, "LIST", "/v1/secret/metadata/", headers=dev.auth)
    assert root.data["keys"] == ["a", "b", "dir/"]


@pytest.mark.parametrize("value", ["true", "1", "t", "TRUE", ""])
async def test_list_query_truthy_values(dev: DevServer, value: str) -> None:
    await call(
        dev.client, "PUT", "/v1/secret/data/k", json_body={"data": {"x": 1}}, headers=dev.auth
    )

    reply = await call(
        dev.client, "GET", "/v1/secret/metadata/", params={"list": value}, headers=dev.auth
    )

    assert reply.status == 200, str(reply)
    assert reply.data["keys"] == ["k"]


async def test_list_false_is_a_read(dev: DevServer) -> None:
    await call(
        dev.client, "PUT", "/v1/secret/data/k", json_body={"data": {"x": 1}}, headers=dev.auth
    )

    reply = await call(
        dev.client, "GET", "/v1/secret/metadata/k", params={"list": "false"}, headers=dev.auth
    )

    assert reply.status == 200, str(reply)
    assert reply.data["current_version"] == 1


async def test_put_and_post_are_synonyms(dev: DevServer) -> None:
    first = await call(
        dev.client, "PUT", "/v1/secret/data/s", json_body={"data": {"n": 1}}, headers=dev.auth
    )
    second = await call(
        dev.client, "POST", "/v1/secret/data/s", json_body={"data": {"n": 2}}, headers=dev.auth
    )

    assert assert_envelope(first)["data"]["version"] == 1
    assert assert_envelope(second)["data"]["version"] == 2
    assert set(first.data) == set(second.data)
    read = await call(dev.client, "GET", "/v1/secret/data/s", headers=dev.auth)
    assert read.data["data"] == {"n": 2}
    for method in ("PUT", "POST"):
        reply = await call(dev.client, method, "/v1/sys/rotate", headers=dev.auth)
        assert reply.status == 204, str(reply)
    status = await call(dev.client, "GET", "/v1/sys/key-status", headers=dev.auth)
    assert status.data["term"] == 3


@pytest.mark.parametrize("method", ["PUT", "POST"])
async def test_put_and_post_on_sealed_safe_endpoints(
    fresh_client: tuple[Core, TestClient], method: str
) -> None:
    _, client = fresh_client

    init = await call(
        client, method, "/v1/sys/init", json_body={"secret_shares": 1, "secret_threshold": 1}
    )
    assert init.status == 200, str(init)
    unsealed = await call(client, method, "/v1/sys/unseal", json_body={"key": init.body["keys"][0]})

    assert unsealed.status == 200, str(unsealed)
    assert unsealed.body["sealed"] is False


@pytest.mark.parametrize(
    "body", ["{", "{'a': 1}", '{"a": }', '{"a": 1,}', "not json", '{"a": 1} trailing', "\x00"]
)
@pytest.mark.parametrize(
    "path", ["/v1/secret/data/x", "/v1/sys/init", "/v1/sys/unseal", "/v1/kv/x", "/v1/sys/rotate"]
)
async def test_malformed_json_is_400(dev: DevServer, path: str, body: str) -> None:
    reply = await call(dev.client, "PUT", path, data=body, headers=dev.auth)

    assert_error(reply, 400)


@pytest.mark.parametrize("body", ["[1]", '"x"', "1", "true", "null", "[]", '[{"data": {}}]'])
@pytest.mark.parametrize("path", ["/v1/secret/data/x", "/v1/sys/init", "/v1/sys/unseal"])
async def test_non_object_json_is_400(dev: DevServer, path: str, body: str) -> None:
    reply = await call(dev.client, "PUT", path, data=body, headers=dev.auth)

    assert_error(reply, 400, "JSON object")


async def test_empty_body_is_an_empty_object(dev: DevServer) -> None:
    reply = await call(dev.client, "PUT", "/v1/secret/data/x", data="", headers=dev.auth)

    assert_error(reply, 400, "no data provided")


@pytest.mark.parametrize(
    "path", ["/v1/secret/data/x", "/v1/sys/init", "/v1/sys/unseal", "/v1/sys/mounts/big"]
)
async def test_body_over_max_request_size_is_413(dev: DevServer, path: str) -> None:
    payload = json.dumps({"data": {"blob": "x" * TWO_MIB}})

    reply = await call(dev.client, "PUT", path, data=payload, headers=dev.auth)

    assert_error(reply, 413, "too large")


async def test_body_over_max_request_size_is_413_while_sealed(
    fresh_client: tuple[Core, TestClient],
) -> None:
    _, client = fresh_client

    for path in ("/v1/sys/init", "/v1/sys/unseal", "/v1/secret/data/x"):
        reply = await call(client, "PUT", path, data=b"{" + b" " * TWO_MIB + b"}")
        assert reply.status in (413, 503), str(reply)
        assert reply.errors is not None
    init = await call(client, "PUT", "/v1/sys/init", data=b"{" + b" " * TWO_MIB + b"}")
    assert_error(init, 413)


async def test_body_just_under_the_limit_is_accepted(dev: DevServer) -> None:
    blob = "x" * (1024 * 1024 - 100)
    payload = json.dumps({"data": {"blob": blob}})
    assert len(payload) < 1024 * 1024

    reply = await call(dev.client, "PUT", "/v1/secret/data/big", data=payload, headers=dev.auth)

    assert reply.status == 200, str(reply)


@pytest.mark.parametrize("path", ["/v1/nope", "/v1/nope/deeper", "/v1/", "/v1/secretx/data/a"])
async def test_unknown_path_under_v1_is_404(dev: DevServer, path: str) -> None:
    reply = await call(dev.client, "GET", path, headers=dev.auth)

    assert_error(reply, 404)


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "LIST"])
@pytest.mark.parametrize("path", ["/nope", "/", "/v2/sys/health", "/v1"])
async def test_unknown_path_outside_v1_is_404(dev: DevServer, path: str, method: str) -> None:
    reply = await call(dev.client, method, path, headers=dev.auth)

    assert_error(reply, 404)


@pytest.mark.parametrize("path", ["/v1/cubbyhole/a%0Ab", "/nope%0A", "/%0D%0A"])
async def test_a_path_with_a_line_break_is_the_apis_404(dev: DevServer, path: str) -> None:
    """Beyond every route's ``.*``: the fallback takes it, not aiohttp's text 404
    (the OpenAPI fuzz found these)."""
    reply = await call(dev.client, "GET", path, headers=dev.auth)

    assert_error(reply, 404)


async def test_the_asterisk_target_is_the_apis_404(dev: DevServer) -> None:
    """``OPTIONS *`` matches no path pattern at all; the edge still answers it."""
    assert dev.client.port is not None
    reader, writer = await asyncio.open_connection("127.0.0.1", dev.client.port)
    try:
        writer.write(b"OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answer = await reader.read()
    finally:
        writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 404 ")
    assert b"\r\nServer: Coffer\r\n" in head and b"\r\nX-Request-Id: " in head
    assert json.loads(body) == {"errors": ["unsupported path"]}


async def test_unknown_path_outside_v1_is_404_even_sealed(
    fresh_client: tuple[Core, TestClient],
) -> None:
    _, client = fresh_client

    assert_error(await call(client, "GET", "/nope"), 404)


_WRONG_METHODS = [
    ("DELETE", "/v1/sys/init"),
    ("PATCH", "/v1/sys/init"),
    ("LIST", "/v1/sys/init"),
    ("HEAD", "/v1/sys/init"),
    ("PUT", "/v1/sys/seal-status"),
    ("DELETE", "/v1/sys/seal-status"),
    ("GET", "/v1/sys/unseal"),
    ("DELETE", "/v1/sys/unseal"),
    ("PUT", "/v1/sys/health"),
    ("POST", "/v1/sys/health"),
    ("DELETE", "/v1/sys/leader"),
    ("PUT", "/v1/sys/leader"),
]


@pytest.mark.parametrize(("method", "path"), _WRONG_METHODS)
async def test_wrong_method_on_sealed_safe_endpoint_is_405(
    dev: DevServer, method: str, path: str
) -> None:
    reply = await call(dev.client, method, path, headers=dev.auth)

    assert reply.status == 405, str(reply)
    if method != "HEAD":
        assert reply.errors is not None


@pytest.mark.parametrize(("method", "path"), _WRONG_METHODS)
async def test_wrong_method_on_sealed_safe_endpoint_is_405_while_sealed(
    fresh_client: tuple[Core, TestClient], method: str, path: str
) -> None:
    _, client = fresh_client

    reply = await call(client, method, path)

    assert reply.status == 405, str(reply)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("DELETE", "/v1/sys/key-status"),
        ("PUT", "/v1/sys/key-status"),
        ("GET", "/v1/sys/rotate"),
        ("GET", "/v1/sys/seal"),
        ("DELETE", "/v1/secret/config"),
        ("LIST", "/v1/secret/data/x"),
        ("GET", "/v1/secret/delete/x"),
    ],
)
async def test_wrong_method_on_a_logical_path_is_405(
    dev: DevServer, method: str, path: str
) -> None:
    reply = await call(dev.client, method, path, headers=dev.auth)

    assert_error(reply, 405)


@pytest.mark.parametrize("method", ["OPTIONS", "TRACE", "FOO"])
async def test_unknown_http_method_is_405(dev: DevServer, method: str) -> None:
    reply = await call(dev.client, method, "/v1/secret/data/x", headers=dev.auth)

    assert_error(reply, 405)


@pytest.mark.parametrize("content_type", [None, "application/json", "text/plain"])
async def test_patch_without_merge_patch_content_type_is_415(
    dev: DevServer, content_type: str | None
) -> None:
    headers = dict(dev.auth)
    if content_type:
        headers["Content-Type"] = content_type

    reply = await call(
        dev.client, "PATCH", "/v1/secret/data/x", data='{"data": {"a": 1}}', headers=headers
    )

    assert_error(reply, 415, "merge-patch")


async def test_patch_with_merge_patch_content_type_is_not_415(dev: DevServer) -> None:
    headers = {**dev.auth, "Content-Type": "application/merge-patch+json"}

    reply = await call(
        dev.client, "PATCH", "/v1/secret/data/x", data='{"data": {"a": 1}}', headers=headers
    )

    assert reply.status != 415
    assert reply.status < 500
    if reply.status >= 400:
        assert reply.errors is not None


def _token_headers(token: str) -> list[dict[str, str]]:
    return [
        {"X-Service-Token": token},
        {"X-Vault-Token": token},
        {"Authorization": f"Bearer {token}"},
        {"Authorization": f"bearer {token}"},
        {"X-Vault-Token": f"  {token}  "},
    ]


async def test_every_token_header_spelling_works(dev: DevServer) -> None:
    for headers in _token_headers(dev.token):
        reply = await call(dev.client, "GET", "/v1/sys/key-status", headers=headers)
        assert reply.status == 200, f"{headers}: {reply}"
        written = await call(
            dev.client, "PUT", "/v1/secret/data/t", json_body={"data": {"a": 1}}, headers=headers
        )
        assert written.status == 200, f"{headers}: {written}"


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"X-Vault-Token": ""},
        {"X-Vault-Token": "hvs.wrong"},
        {"X-Service-Token": "root"},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer hvs.wrong"},
        {"Authorization": "Basic dXNlcjpwYXNz"},
        {"X-Vault-Token": "é"},
    ],
)
async def test_missing_or_bad_token_is_403(dev: DevServer, headers: dict[str, str]) -> None:
    for method, path, body in [
        ("GET", "/v1/sys/key-status", None),
        ("GET", "/v1/secret/data/a", None),
        ("PUT", "/v1/secret/data/a", {"data": {"a": 1}}),
        ("LIST", "/v1/secret/metadata/", None),
        ("PUT", "/v1/sys/rotate", None),
        ("GET", "/v1/sys/mounts", None),
    ]:
        reply = await call(dev.client, method, path, json_body=body, headers=headers)
        assert_error(reply, 403, "permission denied")


async def test_authorization_bearer_is_used_only_without_a_token_header(dev: DevServer) -> None:
    headers = {"X-Vault-Token": "hvs.wrong", "Authorization": f"Bearer {dev.token}"}

    reply = await call(dev.client, "GET", "/v1/sys/key-status", headers=headers)

    assert_error(reply, 403)


async def test_bad_token_cannot_seal(dev: DevServer) -> None:
    reply = await call(dev.client, "PUT", "/v1/sys/seal", headers={"X-Vault-Token": "hvs.nope"})

    assert_error(reply, 403)
    assert not dev.core.sealed


_SEALED_REQUESTS: list[tuple[str, str, Any]] = [
    ("GET", "/v1/secret/data/a", None),
    ("PUT", "/v1/secret/data/a", {"data": {"a": 1}}),
    ("LIST", "/v1/secret/metadata/", None),
    ("GET", "/v1/secret/config", None),
    ("GET", "/v1/sys/key-status", None),
    ("PUT", "/v1/sys/rotate", None),
    ("PUT", "/v1/sys/seal", None),
    ("GET", "/v1/sys/mounts", None),
    ("POST", "/v1/sys/mounts/kv1", {"type": "kv"}),
    ("GET", "/v1/sys/metrics", None),
    ("GET", "/v1/sys/generate-root/attempt", None),
    ("PUT", "/v1/sys/generate-root/attempt", {}),
    ("PUT", "/v1/sys/generate-root/update", {"key": "aa", "nonce": "n"}),
    ("GET", "/v1/nope", None),
    ("GET", "/v1/sys/leader", None),
]


@pytest.mark.parametrize(("method", "path", "body"), _SEALED_REQUESTS)
async def test_sealed_answers_503_everywhere_but_the_sealed_safe_endpoints(
    dev: DevServer, method: str, path: str, body: Any
) -> None:
    sealed = await call(dev.client, "PUT", "/v1/sys/seal", headers=dev.auth)
    assert sealed.status == 204, str(sealed)

    reply = await call(dev.client, method, path, json_body=body, headers=dev.auth)

    assert_error(reply, 503)


@pytest.mark.parametrize(("method", "path", "body"), _SEALED_REQUESTS)
async def test_uninitialised_answers_503_everywhere_but_the_sealed_safe_endpoints(
    fresh_client: tuple[Core, TestClient], method: str, path: str, body: Any
) -> None:
    _, client = fresh_client

    reply = await call(client, method, path, json_body=body)

    assert_error(reply, 503)


async def test_sealed_safe_endpoints_answer_while_sealed(
    fresh_client: tuple[Core, TestClient],
) -> None:
    _, client = fresh_client

    assert (await call(client, "GET", "/v1/sys/init")).status == 200
    assert (await call(client, "GET", "/v1/sys/seal-status")).status == 200
    assert (await call(client, "GET", "/v1/sys/health")).status == 501
    unseal = await call(client, "PUT", "/v1/sys/unseal", json_body={"reset": True})
    assert unseal.status < 500
