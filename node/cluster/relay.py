"""The signature a standby puts on a request it forwards to the active node.

The active node believes a forwarded request's client address (for
``token_bound_cidrs``) and its "I was forwarded" mark (a node that is no
longer active answers "not active" so the sender retries elsewhere) only
when the signature checks. It covers everything that decides what the
request does: the client address, method, path, query, a SHA-256 of the
body, the token, the namespace header, a timestamp and a random nonce, so a
captured forwarded request can neither be altered nor replayed:

* the timestamp must be within :data:`SKEW` seconds of the receiver's clock;
* the nonce is remembered for twice that (every timestamp still accepted),
  and a second use is refused;
* the MAC is checked before the nonce is remembered, so only cluster
  members (holders of the forwarding key) can add to that memory.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["SKEW", "NonceLedger", "RelayRefusedError", "Relayed", "body_digest", "sign_relayed"]

#: How far a forwarded request's timestamp may be from the receiver's clock.
SKEW = 30.0
_VERSION = "v1"
_NONCE_BYTES = 16


class RelayRefusedError(Exception):
    """The forwarding signature does not hold; ``str()`` says why (no secrets)."""


def body_digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


@dataclass(frozen=True, slots=True)
class Relayed:
    """The fields of a forwarded request that its signature covers."""

    client: str
    method: str
    path: str
    query: str
    body_sha256: str
    token: str = field(repr=False)
    namespace: str

    def message(self, stamp: str, nonce: str) -> bytes:
        # A JSON array: unambiguous whatever the fields contain.
        fields = [
            _VERSION,
            stamp,
            nonce,
            self.client,
            self.method.upper(),
            self.path,
            self.query,
            self.body_sha256,
            self.token,
            self.namespace,
        ]
        return json.dumps(fields, separators=(",", ":")).encode()


def _mac(key: bytes, message: bytes) -> str:
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def sign_relayed(
    key: bytes, relayed: Relayed, *, now: float | None = None, nonce: str | None = None
) -> str:
    """``v1.<unix seconds>.<nonce>.<hex HMAC-SHA256>``; a fresh nonce unless given."""
    stamp = str(int(time.time() if now is None else now))
    nonce = nonce or os.urandom(_NONCE_BYTES).hex()
    return f"{_VERSION}.{stamp}.{nonce}.{_mac(key, relayed.message(stamp, nonce))}"


class NonceLedger:
    """Nonces of accepted forwarded requests, each kept until its timestamp is stale."""

    def __init__(self, skew: float = SKEW, clock: Callable[[], float] = time.monotonic) -> None:
        self.skew = skew
        self._clock = clock
        # Insertion order is expiry order (every entry lives 2 * skew from receipt).
        self._seen: dict[str, float] = {}

    def __len__(self) -> int:
        return len(self._seen)

    def verify(self, key: bytes, signature: str, relayed: Relayed) -> None:
        """Accept ``signature`` once, or raise :class:`RelayRefusedError`."""
        version, stamp, nonce, mac = _split(signature)
        if version != _VERSION:
            raise RelayRefusedError("unknown forwarding signature version")
        if not stamp.isdigit() or abs(time.time() - int(stamp)) > self.skew:
            raise RelayRefusedError("stale forwarding timestamp")
        if not hmac.compare_digest(_mac(key, relayed.message(stamp, nonce)), mac):
            raise RelayRefusedError("forwarding signature does not match the request")
        now = self._clock()
        self._prune(now)
        if nonce in self._seen:
            raise RelayRefusedError("forwarded request replayed")
        self._seen[nonce] = now + 2 * self.skew

    def _prune(self, now: float) -> None:
        seen = self._seen
        while seen:
            oldest = next(iter(seen))
            if seen[oldest] > now:
                break
            del seen[oldest]

    def clear(self) -> None:
        self._seen.clear()


def _split(signature: str) -> tuple[str, str, str, str]:
    parts = signature.split(".")
    if len(parts) != 4 or not all(parts):
        raise RelayRefusedError("malformed forwarding signature")
    return parts[0], parts[1], parts[2], parts[3]
