"""The pieces the chaos runners and the real-process tests share: the KV load loop
(``chaos.workload``), the HTTP helpers (``chaos.rest``) and the launcher helpers
(``chaos.launch``). No server runs here: the load talks to scripted targets."""

from __future__ import annotations

import contextlib
import http.client
import random
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from chaos import launch
from chaos.checker import ANY, FINAL, STRONG, History
from chaos.rest import Reply, send
from chaos.workload import Answer, KVWorkload, LoadConfig


class Target:
    """A node that answers from a script: a function of (method, path, body)."""

    def __init__(self, name: str, answer: Callable[[str, str, Any], Answer]) -> None:
        self.name = name
        self.answer = answer
        self.requests: list[tuple[str, str, Any, str | None]] = []

    def send(self, method: str, path: str, body: Any, consistency: str | None) -> Answer:
        self.requests.append((method, path, body, consistency))
        return self.answer(method, path, body)


class Load(KVWorkload[Target]):
    def __init__(self, target: Target, keys: list[str], writers: int = 1) -> None:
        config = LoadConfig(readers=0, pause=0.0, timeout=1.0)
        super().__init__(config, History(), time.monotonic(), keys, writers)
        self.target = target

    def send(
        self,
        target: Target,
        method: str,
        path: str,
        body: Any = None,
        consistency: str | None = None,
    ) -> Answer:
        return target.send(method, path, body, consistency)

    def session(self) -> contextlib.nullcontext[None]:
        return contextlib.nullcontext()

    def write_target(self, session: Target | None) -> Target | None:
        return self.target

    def read_target(
        self, session: Target | None, rng: random.Random, strong: bool
    ) -> tuple[Target | None, str]:
        return self.target, STRONG if strong else ANY

    def detail(self, answer: Answer) -> str:
        return answer.body.decode()

    def target_name(self, target: Target) -> str:
        return target.name


def kv_read(value: int, version: int, *, authoritative: bool = True) -> Answer:
    doc = {"data": {"data": {"v": value}, "metadata": {"version": version}}}
    return Answer(200, doc, "node1", authoritative=authoritative)


@pytest.mark.parametrize("sent_as", [STRONG, FINAL])
def test_a_strong_read_a_standby_answered_is_recorded_as_any_node(sent_as: str) -> None:
    load = Load(Target("node2", lambda *_: kv_read(7, 3, authoritative=False)), ["k"])

    op = load.read(load.target, "k", sent_as)

    assert (op.ok, op.value, op.version, op.consistency) == (True, 7, 3, ANY)
    assert load.target.requests == [("GET", "/v1/chaos/data/k", None, sent_as)]


def test_an_authoritative_read_keeps_its_consistency() -> None:
    load = Load(Target("node1", lambda *_: kv_read(7, 3)), ["k"])

    assert load.read(load.target, "k", STRONG).consistency == STRONG


def test_a_missing_key_is_a_successful_read_of_nothing_but_an_error_is_not() -> None:
    missing = Load(Target("n", lambda *_: Answer(404, {"errors": []}, "n")), ["k"])
    refused = Load(Target("n", lambda *_: Answer(404, {"errors": ["no"]}, "n", b"no")), ["k"])

    found = missing.read(missing.target, "k", ANY)
    failed = refused.read(refused.target, "k", ANY)

    assert (found.ok, found.value) == (True, None)
    assert (failed.ok, failed.status, failed.error) == (False, 404, "no")


def test_a_write_without_an_answer_is_recorded_against_the_node_it_went_to() -> None:
    def refuse(*_: Any) -> Answer:
        raise ConnectionRefusedError("refused")

    load = Load(Target("node3", refuse), ["k"])

    assert load.write(load.target, "k", 1) is False
    (op,) = load.history.ops
    assert (op.kind, op.ok, op.node, op.value) == ("write", False, "node3", 1)
    assert op.error == "ConnectionRefusedError: refused"


def test_writers_own_their_keys_and_never_reuse_a_value() -> None:
    lock = threading.Lock()
    calls = {"n": 0}

    def every_third_fails(method: str, path: str, body: Any) -> Answer:
        with lock:
            calls["n"] += 1
            n = calls["n"]
        if n % 3 == 0:
            raise TimeoutError("slow")
        return Answer(200, {"data": {"version": n}}, "node1")

    load = Load(Target("node1", every_third_fails), ["a", "b", "c"], writers=2)
    load.start()
    try:
        launch.wait_until(lambda: len(load.history.ops) >= 30, 20, "30 writes")
    finally:
        load.stop()

    values: dict[str, list[int]] = {}
    for op in load.history.ops:
        values.setdefault(op.key, []).append(op.value or 0)
    assert set(values) == {"a", "b", "c"}
    for key, seen in values.items():
        assert seen == list(range(1, len(seen) + 1)), key  # failed values are skipped
    assert any(not op.ok for op in load.history.ops)


def test_replica_values_give_none_for_what_a_node_cannot_answer() -> None:
    def answer(method: str, path: str, body: Any) -> Answer:
        if path.endswith("/a"):
            return kv_read(5, 1)
        raise OSError("down")

    load = Load(Target("node1", answer), ["a", "b"])

    assert load.replica_values(load.target, {"a": 5, "b": None}, deadline=5) == {
        "a": 5,
        "b": None,
    }


class FakeConnection:
    def __init__(self) -> None:
        self.sent: tuple[str, str, bytes | None, dict[str, str]] | None = None

    def request(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> None:
        self.sent = (method, path, body, headers)

    def getresponse(self) -> Any:
        class Response:
            status = 204

            def getheaders(self) -> list[tuple[str, str]]:
                return [("X-Coffer-Index", "9")]

            def read(self) -> bytes:
                return b""

        return Response()


def test_send_puts_the_token_in_the_named_header_and_keeps_a_given_content_type() -> None:
    conn = FakeConnection()

    reply = send(
        conn,  # type: ignore[arg-type]
        "PATCH",
        "/v1/x",
        {"a": 1},
        token="t",
        token_header="X-Vault-Token",
        headers={"Content-Type": "application/merge-patch+json"},
    )

    assert conn.sent == (
        "PATCH",
        "/v1/x",
        b'{"a": 1}',
        {"Content-Type": "application/merge-patch+json", "X-Vault-Token": "t"},
    )
    assert reply == Reply(204, {"x-coffer-index": "9"}, b"")


def test_send_without_a_token_sends_no_token_header() -> None:
    conn = FakeConnection()

    send(conn, "GET", "/v1/sys/health")  # type: ignore[arg-type]

    assert conn.sent == ("GET", "/v1/sys/health", None, {})


def test_wait_until_retries_only_what_it_is_told_and_fails_with_the_callers_error() -> None:
    attempts: list[int] = []

    def flaky() -> int | None:
        attempts.append(1)
        if len(attempts) < 3:
            raise http.client.RemoteDisconnected("not yet")
        return 42

    assert launch.wait_until(flaky, 10, "flaky", every=0) == 42
    with pytest.raises(AssertionError, match="timed out after 0s waiting for nothing"):
        launch.wait_until(lambda: None, 0, "nothing", error=AssertionError)
    empty: dict[str, int] = {}
    with pytest.raises(KeyError):
        launch.wait_until(lambda: empty["x"], 10, "a key", retry_on=(OSError,))


def test_child_env_strips_the_given_prefixes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COFFER_ADDR", "x")
    monkeypatch.setenv("VAULT_TOKEN", "y")
    monkeypatch.setenv("PYTHONPATH", "z")

    default = launch.child_env()
    stricter = launch.child_env(strip=("COFFER_", "VAULT_", "PYTHON"))

    assert "COFFER_ADDR" not in default and default["VAULT_TOKEN"] == "y"
    assert "VAULT_TOKEN" not in stricter and "PYTHONPATH" not in stricter
    assert default["PYTHONUNBUFFERED"] == stricter["PYTHONUNBUFFERED"] == "1"
