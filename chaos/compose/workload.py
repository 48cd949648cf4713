"""The client load: KV v2 writes and reads through the load balancer, every op recorded.

Each key has exactly one writer thread, which writes 1, 2, 3, ... and never reuses a
value (a failed write's value is skipped), as :mod:`chaos.checker` expects. Readers
pick keys at random and alternate between *strong* reads, which carry
``X-Vault-Inconsistent: forward-active-node`` so HAProxy sends them to the active
node, and *any-node* reads, which HAProxy may send to a performance standby.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import random
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from chaos.checker import ANY, FINAL, STRONG, History

__all__ = ["STRONG_READ_HEADERS", "Client", "Reply", "Workload", "WorkloadConfig"]

#: HAProxy routes a request with this header to the active node (deploy/haproxy).
STRONG_READ_HEADERS = {"X-Vault-Inconsistent": "forward-active-node"}


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    doc: Any
    node: str


class Client:
    """One keep-alive HTTP connection; any failure drops it and raises OSError."""

    def __init__(self, base_url: str, token: str, timeout: float) -> None:
        parts = urlsplit(base_url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.token = token
        self.timeout = timeout
        self._conn: http.client.HTTPConnection | None = None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        if self._conn is None:
            self._conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        sent = {"X-Vault-Token": self.token, **(headers or {})}
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            sent["Content-Type"] = "application/json"
        try:
            self._conn.request(method, path, body=payload, headers=sent)
            response = self._conn.getresponse()
            raw = response.read()
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            raise OSError(f"{type(exc).__name__}: {exc}") from exc
        if response.getheader("Connection", "").lower() == "close":
            self.close()
        try:
            doc = json.loads(raw) if raw else None
        except ValueError:
            doc = None
        return Reply(response.status, doc, response.getheader("X-Coffer-Node", ""))


@dataclass(frozen=True, slots=True)
class WorkloadConfig:
    base_url: str
    token: str
    mount: str = "chaos"
    prefix: str = "run"
    keys: int = 6
    writers: int = 3
    readers: int = 2
    #: Pause between one thread's operations: keeps 2 cores free for the cluster.
    pause: float = 0.02
    timeout: float = 10.0
    seed: int = 1


def _value_of(doc: Any) -> int | None:
    value = doc["data"]["data"]["v"]
    if not isinstance(value, int):
        raise ValueError(f"not an integer: {value!r}")
    return value


def _version(doc: Any, *path: str) -> int | None:
    """KV v2's version number at ``path`` in a reply, if it is there."""
    try:
        for part in path:
            doc = doc[part]
    except (KeyError, TypeError):
        return None
    return doc if isinstance(doc, int) else None


class Workload:
    def __init__(self, config: WorkloadConfig, history: History, t0: float) -> None:
        self.config = config
        self.history = history
        self.t0 = t0
        self.keys = [f"{config.prefix}/k{i}" for i in range(config.keys)]
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def now(self) -> float:
        return time.monotonic() - self.t0

    def _path(self, key: str) -> str:
        return f"/v1/{self.config.mount}/data/{key}"

    def _client(self) -> Client:
        return Client(self.config.base_url, self.config.token, self.config.timeout)

    # -- operations ------------------------------------------------------------------

    def write(self, client: Client, key: str, value: int) -> bool:
        start = self.now()
        try:
            reply = client.request("POST", self._path(key), {"data": {"v": value}})
        except OSError as exc:
            self.history.record(
                kind="write", key=key, value=value, start=start, end=self.now(), ok=False,
                error=str(exc)[:200],
            )  # fmt: skip
            return False
        ok = reply.status in (200, 204)
        error = "" if ok else json.dumps(reply.doc)[:200]
        self.history.record(
            kind="write", key=key, value=value, start=start, end=self.now(), ok=ok,
            node=reply.node, status=reply.status, error=error,
            version=_version(reply.doc, "data", "version") if ok else None,
        )  # fmt: skip
        return ok

    def read(self, client: Client, key: str, consistency: str) -> int | None:
        """Record one read; returns the value (None if absent or failed)."""
        start = self.now()
        headers = STRONG_READ_HEADERS if consistency in (STRONG, FINAL) else None
        value: int | None = None
        version: int | None = None
        ok, error, status, node = False, "", 0, ""
        try:
            reply = client.request("GET", self._path(key), headers=headers)
            status, node = reply.status, reply.node
            if reply.status == 200:
                value, ok = _value_of(reply.doc), True
                version = _version(reply.doc, "data", "metadata", "version")
            elif reply.status == 404 and not (reply.doc or {}).get("errors"):
                ok = True  # KV v2: no such key (yet)
            else:
                error = json.dumps(reply.doc)[:200]
        except (OSError, KeyError, TypeError, ValueError) as exc:
            error = f"{type(exc).__name__}: {exc}"[:200]
        self.history.record(
            kind="read", key=key, value=value, start=start, end=self.now(), ok=ok,
            consistency=consistency, node=node, status=status, error=error, version=version,
        )  # fmt: skip
        return value

    # -- threads ---------------------------------------------------------------------

    def _writer(self, keys: list[str]) -> None:
        client = self._client()
        counters = dict.fromkeys(keys, 0)
        try:
            while not self._stop.is_set():
                for key in keys:
                    counters[key] += 1
                    if not self.write(client, key, counters[key]):
                        self._stop.wait(0.1)  # back off while there is no active node
                    self._stop.wait(self.config.pause)
                    if self._stop.is_set():
                        break
        finally:
            client.close()

    def _reader(self, seed: int) -> None:
        client = self._client()
        rng = random.Random(seed)
        try:
            while not self._stop.is_set():
                consistency = STRONG if rng.random() < 0.5 else ANY
                self.read(client, rng.choice(self.keys), consistency)
                self._stop.wait(self.config.pause)
        finally:
            client.close()

    def start(self) -> None:
        writers = max(1, min(self.config.writers, len(self.keys)))
        for n in range(writers):
            owned = self.keys[n::writers]
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

    # -- after recovery --------------------------------------------------------------

    def final_reads(self, deadline: float = 30.0) -> None:
        """One successful strong read per key, recorded as FINAL (retried until ok)."""
        client = self._client()
        try:
            for key in self.keys:
                until = time.monotonic() + deadline
                while True:
                    before = len(self.history.ops)
                    self.read(client, key, FINAL)
                    if self.history.ops[before].ok or time.monotonic() > until:
                        break
                    time.sleep(0.5)
        finally:
            client.close()

    def node_values(
        self, node_url: str, expected: Mapping[str, int | None], deadline: float = 15.0
    ) -> dict[str, int | None]:
        """What one node's own replica holds for every key, once it caught up (or not)."""
        client = Client(node_url, self.config.token, 5.0)
        values: dict[str, int | None] = {}
        until = time.monotonic() + deadline
        try:
            for key in self.keys:
                while True:
                    value: int | None = None
                    with contextlib.suppress(OSError, KeyError, TypeError, ValueError):
                        reply = client.request("GET", self._path(key))
                        value = _value_of(reply.doc) if reply.status == 200 else None
                    values[key] = value
                    if value == expected.get(key) or time.monotonic() > until:
                        break
                    time.sleep(0.2)
        finally:
            client.close()
        return values
