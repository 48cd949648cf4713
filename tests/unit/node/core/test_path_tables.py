"""The core's own backends (``sys/``, ``auth/token/``) are declared one way.

Every row comes from a ``PathGroup``'s ``paths()`` with its handlers as the
group's methods (no closure builders), has help text, and is what the
OpenAPI document shows: each operation and each body field of the row, and
nothing else.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from node.core.core import Core
from node.framework import FrameworkBackend, Path
from node.framework.openapi import render_pattern
from node.logical.request import Operation, Request
from node.physical.inmem import InmemBackend

MOUNTS = ("sys/", "auth/token/")
_METHODS = {
    Operation.READ: "get",
    Operation.LIST: "get",
    Operation.UPDATE: "post",
    Operation.CREATE: "post",
    Operation.PATCH: "patch",
    Operation.DELETE: "delete",
}


@pytest.fixture
async def booted() -> AsyncIterator[tuple[Core, str]]:
    """An unsealed in-memory core and its root token."""
    core = Core(InmemBackend())
    root = (await core.dev_bootstrap()).root_token
    try:
        yield core, root
    finally:
        await core.seal()


def _backend(core: Core, mount: str) -> FrameworkBackend:
    route = core.router.match(mount)
    assert route is not None and isinstance(route.backend, FrameworkBackend)
    return route.backend


async def _document(core: Core, token: str) -> dict[str, Any]:
    request = Request(Operation.READ, "sys/internal/specs/openapi", client_token=token)
    response = await core.handle(request)
    assert response is not None and isinstance(response.raw, dict)
    return response.raw


@pytest.mark.parametrize("mount", MOUNTS)
async def test_every_row_is_declared_by_a_group_with_help(
    booted: tuple[Core, str], mount: str
) -> None:
    rows = _backend(booted[0], mount).paths
    assert rows
    for row in rows:
        assert row.summary, f"{mount}{row.pattern} has no help text"
        for operation, handler in row.operations.items():
            owner = getattr(handler, "__self__", None)
            assert inspect.ismethod(handler) and callable(getattr(owner, "paths", None)), (
                f"{mount}{row.pattern} {operation.value}: not a method of a PathGroup"
            )


def _body_fields(row: Path) -> set[str]:
    captured = set(re.findall(r"\(\?P<(\w+)>", row.pattern))
    return {name for name in row.fields if name not in captured}


@pytest.mark.parametrize("mount", MOUNTS)
async def test_the_openapi_document_is_the_table(booted: tuple[Core, str], mount: str) -> None:
    core, root = booted
    document = await _document(core, root)
    paths = document["paths"]
    for row in _backend(core, mount).paths:
        for template in render_pattern(row.pattern):
            url = "/" + (mount + template.text).strip("/")
            item = paths.get(url)
            assert item is not None, f"{url} is missing from the document"
            methods = {_METHODS[op] for op in row.operations}
            assert methods <= set(item), f"{url}: {sorted(methods - set(item))} undocumented"
            post = item.get("post")
            if post is None or Operation.UPDATE not in row.operations:
                continue
            if "requestBody" not in post:
                assert not _body_fields(row), f"{url}: fields without a request body"
                continue
            reference = post["requestBody"]["content"]["application/json"]["schema"]["$ref"]
            schema = document["components"]["schemas"][reference.split("/")[-1]]
            assert set(schema["properties"]) == _body_fields(row), url
