"""Index states for read-after-write on performance standbys (the reference's
``X-Vault-Index`` / ``X-Vault-Inconsistent``).

The active node tells a client which index its request reached; the client
sends it back, and a node that has not applied that index yet waits a moment,
then forwards the request to the active node or refuses it with 412, as the
client chose. The state has the reference's shape, so its Go client can merge
and compare states unchanged: ``base64("v1:<cluster id>:<index>:0:<hex HMAC>")``
with the HMAC (SHA-256, under a key derived from the forwarding key) over
everything before the last colon. The replicated index is always 0: there is
no replication between clusters. A plain decimal index (``X-Coffer-Index``'s
value) is accepted too, unsigned: forging one only makes that request wait.
"""

from __future__ import annotations

import base64
import binascii
import enum
import hashlib
import hmac
from collections.abc import Iterable

from sdk.errors import InvalidRequestError

__all__ = ["Inconsistent", "encode_state", "parse_inconsistent", "required_index"]

_VERSION = "v1"
#: Longest state or decimal index read (a bound for hostile input).
_MAX_LENGTH = 512
_MAX_INDEX = 2**63 - 1


class Inconsistent(enum.Enum):
    """What a node does when it cannot reach the requested index in time."""

    FAIL = "fail"
    FORWARD = "forward-active-node"


def parse_inconsistent(raw: str) -> Inconsistent:
    """The ``X-*-Inconsistent`` header; absent means ``fail`` (the reference's default)."""
    value = raw.strip().lower()
    if not value:
        return Inconsistent.FAIL
    for mode in Inconsistent:
        if value == mode.value:
            return mode
    raise InvalidRequestError(
        f"invalid X-Vault-Inconsistent value {raw!r}: expected 'forward-active-node' or 'fail'"
    )


def _mac(key: bytes, state: str) -> str:
    # ``hmac.new``, not the one-shot ``hmac.digest``: as fast for a short state, and
    # it keeps the GIL (the one-shot call releases it, once per reply on Raft).
    return hmac.new(key, state.encode(), hashlib.sha256).hexdigest()


def encode_state(key: bytes, cluster_id: str, index: int) -> str:
    """The opaque state a reply carries in ``X-Vault-Index``."""
    state = f"{_VERSION}:{cluster_id}:{index}:0"
    return base64.b64encode(f"{state}:{_mac(key, state)}".encode()).decode("ascii")


def _decode_state(raw: str, key: bytes | None, cluster_id: str) -> int:
    bad = InvalidRequestError(f"invalid X-Vault-Index header {raw[:64]!r}")
    try:
        decoded = base64.b64decode(raw, validate=True).decode("ascii")
    except (binascii.Error, ValueError) as exc:
        raise bad from exc
    state, _, mac = decoded.rpartition(":")
    pieces = state.split(":")
    if len(pieces) != 4 or pieces[0] != _VERSION or not all(p.isdigit() for p in pieces[2:]):
        raise bad
    if pieces[1] != cluster_id:
        raise InvalidRequestError("the X-Vault-Index header belongs to another cluster")
    if key is not None and not hmac.compare_digest(_mac(key, state), mac):
        raise InvalidRequestError("the X-Vault-Index header's signature does not match")
    return int(pieces[2])


def _one(raw: str, key: bytes | None, cluster_id: str) -> int:
    text = raw.strip()
    if len(text) > _MAX_LENGTH:
        raise InvalidRequestError("the X-Vault-Index header is too long")
    index = int(text) if text.isascii() and text.isdigit() else _decode_state(text, key, cluster_id)
    if index > _MAX_INDEX:
        raise InvalidRequestError("the X-Vault-Index header's index is out of range")
    return index


def required_index(values: Iterable[str], key: bytes | None, cluster_id: str) -> int | None:
    """The highest index the request's headers ask for (None: no requirement).

    Each value may hold several states separated by commas (one header line
    per state, or joined by a proxy); the request needs all of them, so the
    highest counts. ``key`` None skips the HMAC check (no key yet).
    """
    found: int | None = None
    for value in values:
        for part in value.split(","):
            if part.strip():
                index = _one(part, key, cluster_id)
                found = index if found is None else max(found, index)
    return found
