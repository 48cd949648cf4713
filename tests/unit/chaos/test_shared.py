"""The pieces the chaos runners and the real-process tests share: the KV load loop
(``chaos.workload``), the HTTP helpers (``harness.rest``) and the launcher helpers
(``harness.process``, ``harness.wait``). No server runs here: the load talks to
scripted targets."""

from __future__ import annotations

import contextlib
import http.client
import json
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from chaos.checker import ANY, FINAL, STRONG, History, check
from chaos.measures import (
    Fault,
    Sample,
    Thresholds,
    active_timeline,
    caught_up,
    evaluate,
    leader_changes,
    longest_gap,
    measure,
)
from chaos.process.__main__ import END, START, markdown_table, results_block
from chaos.process.context import Settings
from chaos.process.runner import ScenarioResult
from chaos.record import replace_block
from chaos.sampler import Sampler
from chaos.workload import Answer, KVWorkload, LoadConfig
from harness.process import child_env
from harness.rest import Reply, send
from harness.wait import wait_until


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
        wait_until(lambda: len(load.history.ops) >= 30, 20, "30 writes")
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

    assert wait_until(flaky, 10, "flaky", every=0) == 42
    with pytest.raises(AssertionError, match="timed out after 0s waiting for nothing"):
        wait_until(lambda: None, 0, "nothing", error=AssertionError)
    empty: dict[str, int] = {}
    with pytest.raises(KeyError):
        wait_until(lambda: empty["x"], 10, "a key", retry_on=(OSError,))


def test_child_env_strips_the_given_prefixes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COFFER_ADDR", "x")
    monkeypatch.setenv("VAULT_TOKEN", "y")
    monkeypatch.setenv("PYTHONPATH", "z")

    default = child_env()
    stricter = child_env(strip=("COFFER_", "VAULT_", "PYTHON"))

    assert "COFFER_ADDR" not in default and default["VAULT_TOKEN"] == "y"
    assert "VAULT_TOKEN" not in stricter and "PYTHONPATH" not in stricter
    assert default["PYTHONUNBUFFERED"] == stricter["PYTHONUNBUFFERED"] == "1"


# -- per-fault measures (chaos.measures) on synthetic polls and histories ----------------


def polls(*rows: tuple[float, str, int, int | None, int | None, bool | None]) -> list[Sample]:
    return [Sample(t, node, code, applied, committed, is_self) for t, node, code, applied,
            committed, is_self in rows]  # fmt: skip


def test_the_write_gap_counts_only_gaps_overlapping_the_fault() -> None:
    acked = [0.5, 1.0, 4.0, 4.5, 9.0, 9.2]  # 1.0..4.0 before the fault, 4.5..9.0 across it
    assert longest_gap(acked, 5.0, 6.0, (0.0, 10.0)) == (4.5, (4.5, 9.0))
    # A gap that ends exactly when the fault starts is not the fault's.
    assert longest_gap([1.0, 5.0, 5.5], 5.0, 5.2, (0.0, 6.0)) == (0.5, (5.0, 5.5))
    # Nothing acknowledged after the fault: the gap runs to the end of the load.
    assert longest_gap([1.0, 2.0], 3.0, 4.0, (0.0, 12.0)) == (10.0, (2.0, 12.0))


def test_leadership_changes_are_counted_only_after_the_heal() -> None:
    samples = polls(
        (1.0, "n1", 200, None, None, None), (1.0, "n2", 473, None, None, None),
        (2.0, "n1", 0, None, None, None), (2.1, "n2", 200, None, None, None),  # failover
        (5.0, "n1", 473, None, None, None),  # healed at 4.0: n1 back as a standby
        (6.0, "n1", 200, None, None, None),  # both claim: nobody is named
        (6.2, "n2", 473, None, None, None),  # n1 took over again: 1 change
        (7.0, "n1", 0, None, None, None),    # no one active for a moment ...
        (7.2, "n1", 200, None, None, None),  # ... the same node again: no change
        (9.0, "n2", 200, None, None, None), (9.1, "n1", 473, None, None, None),  # n2: 2nd
    )  # fmt: skip
    assert leader_changes(samples, after=4.0) == [(6.2, "n1"), (9.1, "n2")]
    assert leader_changes(samples, after=4.0, until=8.0) == [(6.2, "n1")]
    assert leader_changes(samples, after=0.5) == [(2.1, "n2"), (6.2, "n1"), (9.1, "n2")]
    assert [a for a, _ in active_timeline(samples)][:3] == [1.0, 2.0, 2.1]


def test_without_a_leader_at_the_heal_the_first_one_named_after_is_no_change() -> None:
    samples = polls((1.0, "n1", 0, None, None, None), (3.0, "n2", 200, None, None, None))
    assert leader_changes(samples, after=2.0) == []


def test_catch_up_is_when_the_last_node_reached_the_leaders_commit_of_half_a_second_before() -> (
    None
):
    samples = polls(
        (0.0, "n1", 200, 100, 100, True), (0.0, "n2", 473, 100, 100, False),
        (0.0, "n3", 473, 40, 40, False),                                  # cut off
        (10.0, "n1", 200, 900, 900, True), (10.2, "n2", 473, 905, 905, False),
        (10.1, "n3", 473, 40, 40, False),                                 # healed at 10.0
        (10.4, "n1", 200, 950, 950, True),
        (10.6, "n3", 473, 899, 899, False),  # short of 900 (leader at 10.0)
        (10.8, "n3", 473, 940, 940, False),  # 900 reached (10.4's 950 is too recent)
    )  # fmt: skip
    assert caught_up(samples, healed=10.0) == (0.8, [])
    assert caught_up(samples, healed=10.0, until=10.7) == (None, ["n3"])
    # Half a second of grace is a parameter: with none, 940 is short of 950.
    assert caught_up(samples, healed=10.0, grace=0.0) == (None, ["n3"])


def test_a_node_that_never_answers_after_the_heal_never_caught_up() -> None:
    samples = polls((1.0, "n1", 200, 10, 10, True), (1.0, "n2", 0, None, None, None))
    assert caught_up(samples, healed=0.5) == (None, ["n2"])


def test_measures_of_one_fault_and_the_thresholds_they_break() -> None:
    samples = polls(
        (1.0, "n1", 200, 10, 10, True), (1.0, "n2", 473, 10, 10, False),
        (3.0, "n1", 473, 12, 12, False),  # cut off at 2.0: it steps down
        (4.0, "n2", 200, 40, 40, True),   # the majority's leader (a change before the heal)
        (6.0, "n2", 200, 50, 50, True), (6.0, "n1", 473, 12, 12, False),  # healed at 5.0
        (7.0, "n1", 200, 45, 45, True), (7.1, "n2", 473, 50, 50, False),  # n1 deposes n2
        (8.0, "n1", 200, 50, 50, True),   # and has caught up
    )  # fmt: skip
    fault = Fault("partition-active", "n1", 2.0, 5.0, until=9.0)
    stale = [(1.0, 9.0), (3.0, 1.5), (4.0, 2.5), (9.5, 7.0)]  # (sent at, seconds superseded)
    m = measure(fault, acked_ends=[1.0, 1.5, 6.0, 6.5], span=(0.0, 10.0), samples=samples,
                stale=stale)  # fmt: skip
    assert (m.unavailable_seconds, m.unavailable_window) == (4.5, (1.5, 6.0))
    assert m.leader_changes == [(7.1, "n1")]
    assert (m.catch_up_seconds, m.lagging) == (3.0, [])
    assert m.max_staleness == 2.5  # only reads sent between the fault and the end of watching
    failures = evaluate([m], Thresholds(), max_staleness=9.0)
    assert len(failures) == 3 and "writes stopped 4.50s" in failures[0]
    assert "1 leadership change(s)" in failures[1]
    assert "9.00s stale" in failures[2]
    relaxed = Thresholds(unavailable_seconds=5, leader_changes_after_heal=1,
                         staleness_seconds=10)  # fmt: skip
    assert evaluate([m], relaxed, max_staleness=9.0) == []
    slow = Thresholds(catch_up_seconds=2.0, staleness_seconds=10, unavailable_seconds=5,
                      leader_changes_after_heal=1)  # fmt: skip
    assert evaluate([m], slow, max_staleness=0.0) == [
        "partition-active on n1: every node caught up after 3.00s (bound 2s)"
    ]
    m.catch_up_seconds, m.lagging = None, ["n1"]
    assert evaluate([m], slow, max_staleness=0.0) == [
        "partition-active on n1: n1 not caught up in the 4.0s watched after the heal (bound 2s)"
    ]


def test_a_stall_after_the_heal_belongs_to_the_fault_until_the_observation_ends() -> None:
    acked = [0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 7.0, 7.5, 8.5, 9.0, 14.0, 14.5]
    fault = Fault("partition-active", "n1", 1.2, 2.2, until=8.0)
    m = measure(fault, acked_ends=acked, span=(0.0, 15.0), samples=[])
    assert (m.unavailable_seconds, m.unavailable_window) == (4.0, (3.0, 7.0))  # not 9..14
    short = Fault("partition-active", "n1", 1.2, 2.2, until=2.9)
    assert measure(short, acked_ends=acked, span=(0.0, 15.0), samples=[]).unavailable_seconds == 0.5


def test_the_leaders_applied_index_counts_when_it_is_ahead_of_its_committed_one() -> None:
    samples = polls((1.0, "n1", 200, 120, 100, True), (1.6, "n1", 200, 121, 101, True),
                    (2.0, "n2", 473, 110, 100, False),   # short of the leader's 120
                    (2.5, "n2", 473, 121, 121, False))  # fmt: skip
    assert caught_up(samples, healed=1.5) == (1.0, [])


def test_the_sampler_polls_every_node_and_records_a_failed_poll_as_no_answer() -> None:
    def leader(timeout: float) -> tuple[int, dict[str, Any]]:
        return 200, {"is_self": True, "raft_applied_index": 5, "raft_committed_index": 4}

    def down(timeout: float) -> tuple[int, None]:
        raise ConnectionRefusedError("down")

    history = History()
    sampler = Sampler({"n1": leader, "n2": down}, history, time.monotonic(), every=0.01)
    sampler.start()
    try:
        wait_until(
            lambda: {s.node for s in history.samples} == {"n1", "n2"}, 20, "both nodes polled"
        )
    finally:
        sampler.stop()
    by_node = {s.node: s for s in history.samples}
    n1, n2 = by_node["n1"], by_node["n2"]
    assert (n1.code, n1.applied, n1.committed, n1.is_self) == (200, 5, 4, True)
    assert (n2.code, n2.applied, n2.committed, n2.is_self) == (0, None, None, None)


def test_the_results_table_has_one_row_per_fault_and_tells_slow_from_unsafe() -> None:
    h = History()
    for value, at in ((1, 0.0), (2, 5.0)):
        h.record(kind="write", key="k", value=value, start=at, end=at + 0.1, ok=True,
                 version=value)  # fmt: skip
    h.record(kind="read", key="k", value=2, start=6.0, end=6.1, ok=True, consistency=FINAL,
             version=2)  # fmt: skip
    fault = Fault("freeze-active", "node1", 1.0, 2.0, until=4.0)
    report = check(h, faults=[fault], samples=[], thresholds=Thresholds())
    result = ScenarioResult("freeze-active", Settings(), 1, report, nodes_back=True)

    table = markdown_table([result])

    assert result.safe and not result.ok and result.verdict == "THRESHOLDS NOT MET"
    row = table.splitlines()[2]
    assert row.startswith("| freeze-active | 2 | 0 | 0 | 0 | 4.90 s | 0 | never |"), row
    assert row.endswith("| THRESHOLDS NOT MET |")
    doc = json.loads(json.dumps(result.to_dict()))  # what --json prints
    assert (doc["safe"], doc["thresholds_ok"], doc["ok"]) == (True, False, False)
    assert doc["faults"][0]["unavailable_seconds"] == 4.9
    assert doc["threshold_failures"][0].startswith("freeze-active on node1: writes stopped 4.90s")


def test_record_replaces_only_the_block_between_the_markers(tmp_path: Path) -> None:
    h = History()
    h.record(kind="write", key="k", value=1, start=0.0, end=0.1, ok=True, version=1)
    h.record(kind="read", key="k", value=1, start=1.0, end=1.1, ok=True, consistency=FINAL,
             version=1)  # fmt: skip
    result = ScenarioResult("flap-link", Settings(), 1, check(h), nodes_back=True, error="boom")
    doc = tmp_path / "chaos.md"
    doc.write_text(f"# Before\n\n{START}\nold numbers\n{END}\n\nAfter.\n")

    replace_block(doc, results_block([result], "python -m chaos process flap-link",
                                     Settings()), START, END)  # fmt: skip

    text = doc.read_text()
    assert text.startswith("# Before\n\n" + START) and text.endswith(END + "\n\nAfter.\n")
    assert "old numbers" not in text and "python -m chaos process flap-link" in text
    assert "| flap-link | 1 | 0 | 0 | 0 | — | — | — | 0.00 s | FAILED |" in text
    assert "- flap-link: boom" in text
