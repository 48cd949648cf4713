"""The client load both chaos runners drive: KV v2 writes and reads, every op recorded.

Each key has exactly one writer, which writes 1, 2, 3, ... and never reuses a value
(a failed write's value is skipped), as :mod:`chaos.checker` expects. Readers pick
keys at random and send half their reads as *strong* and half as *any-node* reads.
Every op carries the KV v2 version the server gave the write (or the read saw),
which the checker orders by.

The runners differ only in where a request goes and how it travels: the compose
runner keeps one connection per thread to the load balancer
(:mod:`chaos.compose.workload`), the process runner picks a node per request
(:mod:`chaos.process.workload`). A subclass says that in :meth:`KVWorkload.send`
and the ``*_target`` methods; the loop and the recording live here, once.
"""

from __future__ import annotations

import abc
import http.client
import json
import random
import threading
import time
from collections.abc import Mapping
from contextlib import AbstractContextManager, suppress
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from chaos.checker import ANY, History, Op

__all__ = ["FAILURES", "Answer", "KVWorkload", "LoadConfig", "parse_doc", "value_of", "version_of"]

#: What a request to a node that is down, sealed or answering nonsense may raise.
FAILURES = (OSError, http.client.HTTPException, KeyError, TypeError, ValueError)
#: What a request that got no answer at all raises.
_NO_ANSWER = (OSError, http.client.HTTPException)

T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadConfig:
    """What both runners' loads take; each runner's config adds its own."""

    mount: str = "chaos"
    keys: int = 4
    readers: int = 2
    #: Pause between one thread's operations (keeps CPU for the servers).
    pause: float = 0.02
    timeout: float = 10.0
    seed: int = 1


@dataclass(frozen=True, slots=True)
class Answer:
    """A reply, as the recorder needs it."""

    status: int
    #: The JSON body (None if empty or not JSON).
    doc: Any
    #: The node that answered ("" if unknown).
    node: str
    body: bytes = b""
    #: False when a read sent as strong was answered by a node that was not active.
    authoritative: bool = True


def parse_doc(body: bytes) -> Any:
    """A reply body as JSON, None if it is empty or not JSON."""
    try:
        return json.loads(body) if body else None
    except ValueError:
        return None


def value_of(doc: Any) -> int:
    value = doc["data"]["data"]["v"]
    if not isinstance(value, int):
        raise ValueError(f"not an integer: {value!r}")
    return value


def version_of(doc: Any, *path: str) -> int | None:
    """KV v2's version number at ``path`` in a reply, if it is there."""
    try:
        for part in path:
            doc = doc[part]
    except (KeyError, TypeError):
        return None
    return doc if isinstance(doc, int) else None


class KVWorkload(abc.ABC, Generic[T]):
    """Writer and reader threads over ``keys``; ``T`` is what a request is sent to."""

    def __init__(
        self, config: LoadConfig, history: History, t0: float, keys: list[str], writers: int
    ) -> None:
        self.config = config
        self.history = history
        self.t0 = t0
        self.keys = keys
        self.writers = writers
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def now(self) -> float:
        return time.monotonic() - self.t0

    def _path(self, key: str) -> str:
        return f"/v1/{self.config.mount}/data/{key}"

    # -- what a runner says ----------------------------------------------------------

    @abc.abstractmethod
    def send(
        self, target: T, method: str, path: str, body: Any = None, consistency: str | None = None
    ) -> Answer:
        """One request; ``consistency`` is what a read is sent as (None for other requests)."""

    @abc.abstractmethod
    def session(self) -> AbstractContextManager[T | None]:
        """What one thread holds for its whole life (a connection), if anything."""

    @abc.abstractmethod
    def write_target(self, session: T | None) -> T | None:
        """Where the next write goes (None: nowhere to send it now)."""

    @abc.abstractmethod
    def read_target(
        self, session: T | None, rng: random.Random, strong: bool
    ) -> tuple[T | None, str]:
        """Where the next read goes, and the consistency it is sent as."""

    @abc.abstractmethod
    def detail(self, answer: Answer) -> str:
        """The error recorded for a reply that was not a success."""

    def target_name(self, target: T) -> str:
        """The node a request went to, recorded when no answer says it."""
        return ""

    def no_answer(self, exc: BaseException) -> str:
        """The error recorded for a write that got no answer."""
        return f"{type(exc).__name__}: {exc}"

    # -- operations ------------------------------------------------------------------

    def write(self, target: T, key: str, value: int) -> bool:
        start = self.now()
        try:
            answer = self.send(target, "POST", self._path(key), {"data": {"v": value}})
        except _NO_ANSWER as exc:
            self.history.record(
                kind="write", key=key, value=value, start=start, end=self.now(), ok=False,
                node=self.target_name(target), error=self.no_answer(exc)[:200],
            )  # fmt: skip
            return False
        ok = answer.status in (200, 204)
        self.history.record(
            kind="write", key=key, value=value, start=start, end=self.now(), ok=ok,
            node=answer.node, status=answer.status, error="" if ok else self.detail(answer),
            version=version_of(answer.doc, "data", "version") if ok else None,
        )  # fmt: skip
        return ok

    def read(self, target: T, key: str, consistency: str) -> Op:
        """Record one read and return it. ``consistency`` is what the read was sent as."""
        start = self.now()
        value: int | None = None
        version: int | None = None
        ok, error, status, node = False, "", 0, self.target_name(target)
        try:
            answer = self.send(target, "GET", self._path(key), consistency=consistency)
            status, node = answer.status, answer.node
            if consistency != ANY and not answer.authoritative:
                consistency = ANY  # a standby answered: it may have been stale
            if answer.status == 200:
                value, ok = value_of(answer.doc), True
                version = version_of(answer.doc, "data", "metadata", "version")
            elif answer.status == 404 and not (answer.doc or {}).get("errors"):
                ok = True  # KV v2: no such key (yet)
            else:
                error = self.detail(answer)
        except FAILURES as exc:
            error = f"{type(exc).__name__}: {exc}"[:200]
        return self.history.record(
            kind="read", key=key, value=value, start=start, end=self.now(), ok=ok,
            consistency=consistency, node=node, status=status, error=error, version=version,
        )  # fmt: skip

    def replica_values(
        self, target: T, expected: Mapping[str, int | None], deadline: float
    ) -> dict[str, int | None]:
        """What ``target`` answers for every key, once it matches ``expected`` (or not)."""
        values: dict[str, int | None] = {}
        until = time.monotonic() + deadline
        for key in self.keys:
            while True:
                value: int | None = None
                with suppress(*FAILURES):
                    answer = self.send(target, "GET", self._path(key))
                    value = value_of(answer.doc) if answer.status == 200 else None
                values[key] = value
                if value == expected.get(key) or time.monotonic() > until:
                    break
                time.sleep(0.2)
        return values

    # -- threads ---------------------------------------------------------------------

    def _writer(self, keys: list[str]) -> None:
        counters = dict.fromkeys(keys, 0)
        with self.session() as session:
            while not self._stop.is_set():
                for key in keys:
                    counters[key] += 1
                    target = self.write_target(session)
                    if target is None or not self.write(target, key, counters[key]):
                        self._stop.wait(0.1)  # back off while nothing accepts writes
                    self._stop.wait(self.config.pause)
                    if self._stop.is_set():
                        break

    def _reader(self, seed: int) -> None:
        rng = random.Random(seed)
        with self.session() as session:
            while not self._stop.is_set():
                target, consistency = self.read_target(session, rng, rng.random() < 0.5)
                if target is not None:
                    self.read(target, rng.choice(self.keys), consistency)
                self._stop.wait(self.config.pause)

    def start(self) -> None:
        """``writers`` threads, each owning every ``writers``-th key, and the readers."""
        for n in range(self.writers):
            owned = self.keys[n :: self.writers]
            self._threads.append(threading.Thread(target=self._writer, args=(owned,)))
        for n in range(self.config.readers):
            seed = self.config.seed * 1000 + n
            self._threads.append(threading.Thread(target=self._reader, args=(seed,)))
        for thread in self._threads:
            thread.daemon = True
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(self.config.timeout + 5)
