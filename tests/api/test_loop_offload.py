"""Large bodies and large policies are parsed in a worker thread, not on the event
loop (issue 14, item 5); small ones stay on the loop (a thread hop costs more than
they do)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

import api.translate
import node.policy.store
from tests.api.helpers import dev_call
from tests.conftest import DevServer


def _recording(target: Any, seen: list[str]) -> Any:
    def wrapper(*args: Any) -> Any:
        seen.append(threading.current_thread().name)
        return target(*args)

    return wrapper


@pytest.mark.parametrize("size", [100, 2 * api.translate.OFF_LOOP_BYTES])
async def test_large_bodies_are_parsed_off_the_loop(
    dev: DevServer, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    seen: list[str] = []
    parse = api.translate._parse_json_object
    monkeypatch.setattr(api.translate, "_parse_json_object", _recording(parse, seen))
    status, body = await dev_call(dev, "PUT", "secret/data/big", {"data": {"v": "x" * size}})
    assert status == 200, body
    status, body = await dev_call(dev, "GET", "secret/data/big")
    assert body["data"]["data"]["v"] == "x" * size
    on_loop = threading.main_thread().name
    assert seen and all((name == on_loop) == (size < api.translate.OFF_LOOP_BYTES) for name in seen)


def _policy(lines: int) -> str:
    return "\n".join(f'path "p/{n}/*" {{ capabilities = ["read"] }}' for n in range(lines))


@pytest.mark.parametrize("lines", [3, 2_000])
async def test_large_policies_are_parsed_off_the_loop(
    dev: DevServer, monkeypatch: pytest.MonkeyPatch, lines: int
) -> None:
    seen: list[str] = []
    parse = node.policy.store.parse_policy
    monkeypatch.setattr(node.policy.store, "parse_policy", _recording(parse, seen))
    status, body = await dev_call(dev, "PUT", "sys/policies/acl/big", {"policy": _policy(lines)})
    assert status == 204, body
    status, body = await dev_call(dev, "GET", "sys/policies/acl/big")
    assert body["data"]["policy"] == _policy(lines)
    large = len(_policy(lines)) > node.policy.store.OFF_LOOP_CHARS
    on_loop = threading.main_thread().name
    assert seen and all((name == on_loop) != large for name in seen)
