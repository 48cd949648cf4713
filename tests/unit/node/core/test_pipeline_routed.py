"""The routed request the pipeline builds in one go: every client field carried over,
the routing fields set, and what the backend sees through a real core."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest

from node.core.core import Core
from node.core.pipeline import Pipeline, request_auth
from node.logical.request import Operation, Request, RequestAuth
from node.logical.response import Response
from node.physical.inmem import InmemBackend
from node.tokens.entry import TokenEntry

ROUTING = {
    "operation",
    "path",
    "namespace",
    "namespace_id",
    "mount_point",
    "mount_accessor",
    "auth",
    "has_sudo",
}


def _client_request() -> Request:
    """A request whose every field differs from its default."""
    return Request(
        operation=Operation.UPDATE,
        path="ns1/secret/data/a",
        data={"k": "v"},
        id="req-1",
        client_token="hvs.client",
        namespace="ns1",
        namespace_id="ns-id",
        remote_addr="10.0.0.1",
        wrap_ttl=60,
        headers={"X-Custom": "1"},
        mount_point="old/",
        mount_accessor="old_accessor",
        auth=RequestAuth(token_key="old", accessor="old", policies=("x",)),
        has_sudo=True,
        forwarded_from="10.0.0.2:51234",
    )


def test_routed_copies_every_field_it_is_not_given() -> None:
    original = _client_request()
    auth = RequestAuth(token_key="k", accessor="a", policies=("root",))
    routed = original.routed(
        operation=Operation.CREATE,
        path="data/a",
        namespace="ns1/",
        namespace_id="abcde",
        mount_point="ns1/secret/",
        mount_accessor="kv_1234",
        auth=auth,
        has_sudo=False,
    )
    names = {f.name for f in dataclasses.fields(Request)}
    # A new Request field must be routed or copied: this lists the copied ones.
    assert names - ROUTING == {
        "data",
        "id",
        "client_token",
        "remote_addr",
        "wrap_ttl",
        "headers",
        "forwarded_from",
    }, "a new Request field: copy it in Request.routed and list it here"
    for name in names - ROUTING:
        assert getattr(routed, name) is getattr(original, name), name
    assert (routed.operation, routed.path, routed.namespace, routed.namespace_id) == (
        Operation.CREATE,
        "data/a",
        "ns1/",
        "abcde",
    )
    assert (routed.mount_point, routed.mount_accessor, routed.auth, routed.has_sudo) == (
        "ns1/secret/",
        "kv_1234",
        auth,
        False,
    )
    # A new value: the client's request is as it was (its fields are read-only to
    # the type checker, tests/unit/sdk/test_record.py).
    assert routed is not original
    assert original == _client_request()


@pytest.fixture
async def dev() -> AsyncIterator[tuple[Core, str]]:
    """An unsealed core with KV v2 at ``secret/``, and its root token."""
    core = Core(InmemBackend())
    init = await core.dev_bootstrap()
    try:
        yield core, init.root_token
    finally:
        await core.close()


def _spy(core: Core, mount: str, method: str) -> list[Request]:
    """Record what the backend mounted at ``mount`` is handed by ``method``."""
    match = core.router.match(mount)
    assert match is not None
    backend: Any = match.backend
    seen: list[Request] = []
    real = getattr(backend, method)

    async def spy(request: Request, *args: Any) -> Any:
        seen.append(request)
        return await real(request, *args)

    backend.__dict__[method] = spy
    return seen


async def test_backend_gets_the_routed_request(dev: tuple[Core, str]) -> None:
    core, token = dev
    handled = _spy(core, "secret/", "handle")
    probed = _spy(core, "secret/", "exists")
    write = Request(
        operation=Operation.UPDATE,
        path="secret/data/routed",
        data={"data": {"a": "b"}},
        id="id-1",
        client_token=token,
        remote_addr="127.0.0.1",
    )
    response = await core.handle(write)
    assert isinstance(response, Response)

    [probe] = probed
    [created] = handled
    # The existence probe sees the update as sent; the backend sees it as a create.
    assert probe.operation is Operation.UPDATE and not probe.has_sudo
    assert created.operation is Operation.CREATE
    for seen in (probe, created):
        assert seen.path == "data/routed"
        assert (seen.mount_point, seen.namespace, seen.namespace_id) == ("secret/", "", "root")
        assert seen.mount_accessor.startswith("kv_")
        assert seen.auth is not None and seen.auth.is_root
        assert (seen.id, seen.data, seen.remote_addr) == ("id-1", write.data, "127.0.0.1")
    assert created.has_sudo  # root's policy grants sudo everywhere

    await core.handle(dataclasses.replace(write, operation=Operation.UPDATE))
    assert [r.operation for r in handled] == [Operation.CREATE, Operation.UPDATE]


def test_the_caller_is_built_again_only_for_another_entry() -> None:
    """``RequestAuth`` is remembered for the last token entry object (entries are
    frozen): the same entry gives the same value, any other entry its own."""
    pipeline = Pipeline(cast(Core, None))
    first = TokenEntry("key-1", "acc-1", ["default"], "token", 1.0, num_uses=3)
    equal = dataclasses.replace(first)
    other = dataclasses.replace(first, policies=["root"], num_uses=0)
    auth = pipeline._request_auth(first)
    assert auth == request_auth(first)
    assert pipeline._request_auth(first) is auth
    assert pipeline._request_auth(other) == request_auth(other) != auth
    assert pipeline._request_auth(equal) == auth


async def test_an_update_without_sudo_hands_on_the_probe(dev: tuple[Core, str]) -> None:
    """When the routed request's fields come out as the probe's (the key exists, no
    sudo), the backend gets the probe itself: equal in every field."""
    core, root = dev

    async def as_root(operation: Operation, path: str, data: dict[str, Any]) -> Response:
        reply = await core.handle(Request(operation, path, data, client_token=root))
        assert isinstance(reply, Response)
        return reply

    rules = 'path "secret/data/*" { capabilities = ["create", "update"] }'
    await as_root(Operation.UPDATE, "sys/policy/writer", {"policy": rules})
    created = await as_root(Operation.UPDATE, "auth/token/create", {"policies": ["writer"]})
    assert created.auth is not None
    token = created.auth.client_token
    handled = _spy(core, "secret/", "handle")
    probed = _spy(core, "secret/", "exists")
    write = Request(Operation.UPDATE, "secret/data/p", {"data": {"a": "b"}}, client_token=token)
    await core.handle(write)
    await core.handle(dataclasses.replace(write, id="second"))
    first, second = handled
    assert first.operation is Operation.CREATE and first is not probed[0]
    assert second is probed[1]
    assert (second.operation, second.has_sudo, second.path, second.id) == (
        Operation.UPDATE,
        False,
        "data/p",
        "second",
    )
    assert second.auth is not None and second.auth.policies == ("default", "writer")
