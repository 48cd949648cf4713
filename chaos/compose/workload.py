"""The client load of :mod:`chaos.workload`, sent through the load balancer.

Each writer thread owns some keys and one keep-alive connection to HAProxy. *Strong*
reads carry ``X-Vault-Inconsistent: forward-active-node`` so HAProxy sends them to
the active node; *any-node* reads may go to a performance standby.
"""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from chaos.checker import ANY, FINAL, STRONG, History
from chaos.workload import Answer, KVWorkload, LoadConfig
from harness.rest import NO_ANSWER, Session

__all__ = ["STRONG_READ_HEADERS", "Client", "Reply", "Workload", "WorkloadConfig"]

#: HAProxy routes a request with this header to the active node (deploy/haproxy).
STRONG_READ_HEADERS = {"X-Vault-Inconsistent": "forward-active-node"}


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    doc: Any
    node: str


class Client:
    """One keep-alive connection (:class:`harness.rest.Session`); any failure drops it
    and raises OSError."""

    def __init__(self, base_url: str, token: str, timeout: float) -> None:
        self._session = Session.to(
            base_url, timeout=timeout, token=token, token_header="X-Vault-Token"
        )

    def close(self) -> None:
        self._session.close()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        try:
            reply = self._session.request(method, path, body, headers=dict(headers or {}))
        except NO_ANSWER as exc:
            raise OSError(f"{type(exc).__name__}: {exc}") from exc
        return Reply(reply.status, reply.doc, reply.headers.get("x-coffer-node", ""))


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadConfig(LoadConfig):
    base_url: str
    token: str
    prefix: str = "run"
    keys: int = 6
    writers: int = 3


class Workload(KVWorkload[Client]):
    """The shared load, each thread on its own keep-alive connection to HAProxy."""

    def __init__(self, config: WorkloadConfig, history: History, t0: float) -> None:
        keys = [f"{config.prefix}/k{i}" for i in range(config.keys)]
        super().__init__(config, history, t0, keys, writers=max(1, min(config.writers, len(keys))))
        self.config: WorkloadConfig = config

    def _client(self) -> Client:
        return Client(self.config.base_url, self.config.token, self.config.timeout)

    # -- how a request travels -------------------------------------------------------

    def send(
        self,
        target: Client,
        method: str,
        path: str,
        body: Any = None,
        consistency: str | None = None,
    ) -> Answer:
        headers = STRONG_READ_HEADERS if consistency in (STRONG, FINAL) else None
        reply = target.request(method, path, body, headers=headers)
        return Answer(reply.status, reply.doc, reply.node)

    @contextlib.contextmanager
    def session(self) -> Iterator[Client]:
        client = self._client()
        try:
            yield client
        finally:
            client.close()

    def write_target(self, session: Client | None) -> Client | None:
        return session

    def read_target(
        self, session: Client | None, rng: random.Random, strong: bool
    ) -> tuple[Client | None, str]:
        return session, STRONG if strong else ANY

    def detail(self, answer: Answer) -> str:
        return json.dumps(answer.doc)[:200]

    def no_answer(self, exc: BaseException) -> str:
        return str(exc)  # the Client's OSError already names the cause

    # -- after recovery --------------------------------------------------------------

    def final_reads(self, deadline: float = 30.0) -> None:
        """One successful strong read per key, recorded as FINAL (retried until ok)."""
        with self.session() as client:
            for key in self.keys:
                until = time.monotonic() + deadline
                while not self.read(client, key, FINAL).ok and time.monotonic() <= until:
                    time.sleep(0.5)

    def node_values(
        self, node_url: str, expected: Mapping[str, int | None], deadline: float = 15.0
    ) -> dict[str, int | None]:
        """What one node's own replica holds for every key, once it caught up (or not)."""
        client = Client(node_url, self.config.token, 5.0)
        try:
            return self.replica_values(client, expected, deadline)
        finally:
            client.close()
