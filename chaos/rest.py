"""Plain ``http.client`` requests to a Coffer API, and what came back.

The standard library on purpose: the chaos tool and the real-process tests must see
exactly what a server sent (status, headers, bytes), with no client library retrying,
redirecting or decoding in between. One copy, shared by :mod:`chaos.process.cluster`
and the tests (``tests/cluster/servers.py``, ``tests/integration/conftest.py``).
"""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass
from typing import Any

__all__ = ["SERVICE_TOKEN", "Reply", "call", "send"]

#: Coffer's own token header (it takes ``X-Vault-Token`` too).
SERVICE_TOKEN = "X-Service-Token"


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    headers: dict[str, str]  # names lower-cased
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def errors(self) -> list[str]:
        """The ``errors`` list of an error envelope (asserts that it is one)."""
        doc = self.json
        assert isinstance(doc, dict), doc
        assert "errors" in doc, doc
        errors = doc["errors"]
        assert isinstance(errors, list), doc
        return errors

    def __repr__(self) -> str:
        return f"Reply(status={self.status}, body={self.body[:500]!r})"


def send(
    conn: http.client.HTTPConnection,
    method: str,
    path: str,
    body: Any = None,
    *,
    token: str | None = None,
    token_header: str = SERVICE_TOKEN,
    headers: dict[str, str] | None = None,
    raw: bytes | None = None,
) -> Reply:
    """One request on ``conn``, which stays open if the server keeps it alive.

    ``body`` is sent as JSON, ``raw`` as given; a ``Content-Type`` in ``headers`` wins.
    """
    sent = dict(headers or {})
    payload = raw
    if body is not None:
        payload = json.dumps(body).encode()
        sent.setdefault("Content-Type", "application/json")
    if token is not None:
        sent[token_header] = token
    conn.request(method, path, body=payload, headers=sent)
    response = conn.getresponse()
    data = response.read()
    return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, data)


def call(
    port: int,
    method: str,
    path: str,
    body: Any = None,
    *,
    timeout: float,
    token: str | None = None,
    token_header: str = SERVICE_TOKEN,
    headers: dict[str, str] | None = None,
    raw: bytes | None = None,
    source: str | None = None,
) -> Reply:
    """One request to ``127.0.0.1:port`` on a fresh connection, closed before returning.

    ``source`` binds the client end to that local IP; the rest is as for :func:`send`.
    Raises OSError or ``http.client.HTTPException`` when the server does not answer.
    """
    conn = http.client.HTTPConnection(
        "127.0.0.1", port, timeout=timeout, source_address=(source, 0) if source else None
    )
    try:
        return send(
            conn,
            method,
            path,
            body,
            token=token,
            token_header=token_header,
            headers=headers,
            raw=raw,
        )
    finally:
        conn.close()
