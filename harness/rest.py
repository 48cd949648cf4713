"""Plain ``http.client`` requests to a Coffer API, and what came back.

The standard library on purpose: the chaos tool, clusterctl, the benchmarks and the
real-process tests must see exactly what a server sent (status, headers, bytes),
with no client library retrying, redirecting, reading proxy variables or decoding
in between; and clusterctl runs with any Python 3.11, nothing installed.
"""

from __future__ import annotations

import http.client
import json
import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

__all__ = ["NO_ANSWER", "SERVICE_TOKEN", "Reply", "Session", "call", "connect", "fetch", "send"]

#: Coffer's own token header (it takes ``X-Vault-Token`` too).
SERVICE_TOKEN = "X-Service-Token"

#: What a request raises when the server did not answer (refused, reset, timed out, cut).
NO_ANSWER: tuple[type[BaseException], ...] = (OSError, http.client.HTTPException)


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    headers: dict[str, str]  # names lower-cased
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def doc(self) -> Any:
        """The body as JSON, or None when it is empty or not JSON (for tools, not asserts)."""
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            return None

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


def connect(
    host: str,
    port: int,
    *,
    timeout: float,
    tls: ssl.SSLContext | None = None,
    source: str | None = None,
) -> http.client.HTTPConnection:
    """A connection the caller closes; HTTPS when ``tls`` is given; ``source`` binds the
    client end to that local IP."""
    bind = (source, 0) if source else None
    if tls is not None:
        return http.client.HTTPSConnection(
            host, port, timeout=timeout, context=tls, source_address=bind
        )
    return http.client.HTTPConnection(host, port, timeout=timeout, source_address=bind)


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
    host: str = "127.0.0.1",
    token: str | None = None,
    token_header: str = SERVICE_TOKEN,
    headers: dict[str, str] | None = None,
    raw: bytes | None = None,
    source: str | None = None,
    tls: ssl.SSLContext | None = None,
) -> Reply:
    """One request to ``host:port`` on a fresh connection, closed before returning.

    The rest is as for :func:`connect` and :func:`send`. Raises one of
    :data:`NO_ANSWER` when the server does not answer.
    """
    conn = connect(host, port, timeout=timeout, tls=tls, source=source)
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


def fetch(
    method: str,
    url: str,
    body: Any = None,
    *,
    timeout: float,
    token: str | None = None,
    token_header: str = SERVICE_TOKEN,
    headers: dict[str, str] | None = None,
    raw: bytes | None = None,
    tls: ssl.SSLContext | None = None,
) -> Reply:
    """:func:`call` by URL (``http://host:port/path?query``); HTTPS needs ``tls``."""
    parts = urlsplit(url)
    if parts.scheme == "https" and tls is None:
        raise ValueError(f"{url}: an https URL needs a TLS context")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return call(
        parts.port or (443 if parts.scheme == "https" else 80),
        method,
        path,
        body,
        timeout=timeout,
        host=parts.hostname or "127.0.0.1",
        token=token,
        token_header=token_header,
        headers=headers,
        raw=raw,
        tls=tls if parts.scheme == "https" else None,
    )


class Session:
    """One kept-alive connection to ``host:port``: a load generator's client.

    A request that gets no answer drops the connection (the next one reconnects)
    and raises; a reply with ``Connection: close`` drops it too.
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        timeout: float,
        token: str | None = None,
        token_header: str = SERVICE_TOKEN,
    ) -> None:
        self.host = host
        self.port = port
        self.timeout = timeout
        self.token = token
        self.token_header = token_header
        self._conn: http.client.HTTPConnection | None = None

    @classmethod
    def to(cls, url: str, **kwargs: Any) -> Session:
        parts = urlsplit(url)
        return cls(parts.hostname or "127.0.0.1", parts.port or 80, **kwargs)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
    ) -> Reply:
        if self._conn is None:
            self._conn = connect(self.host, self.port, timeout=self.timeout)
        try:
            reply = send(
                self._conn,
                method,
                path,
                body,
                token=self.token,
                token_header=self.token_header,
                headers=headers,
                raw=raw,
            )
        except NO_ANSWER:
            self.close()
            raise
        if reply.headers.get("connection", "").lower() == "close":
            self.close()
        return reply
