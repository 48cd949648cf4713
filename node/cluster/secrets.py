"""Keys a cluster derives from its root key, and what they protect.

Everything here is HKDF-SHA256 of the root key, which only a node unsealed
with the cluster's Shamir keys holds, so "knows the key" means "was unsealed
by the cluster's operators":

* the Raft transport secret (``consensus`` stretches it into pysyncobj's
  password): a process without the keys cannot talk to the cluster;
* the join challenge key: a joiner proves it holds the root key by opening a
  random nonce the leader sealed under it;
* the forwarding key (from the transport secret): standbys sign the requests
  they relay (:mod:`node.cluster.relay`), and nodes sign membership
  questions, so neither can be forged by a client;
* the TLS keyring key: the cluster CA and each node's Raft key and
  certificate are sealed under it in replicated storage, and the leader seals
  a joiner's under it in the challenge (:mod:`node.cluster.tls_keyring`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import time

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from node.barrier.aead import DecryptionError, open_sealed, seal_value
from sdk.errors import InvalidRequestError

__all__ = [
    "challenge_key",
    "forwarding_key",
    "index_state_key",
    "new_nonce",
    "open_challenge",
    "raft_secret",
    "raft_tls_key",
    "seal_challenge",
    "sign",
    "verify",
]

#: How long a signed statement stays valid (clock skew between nodes included).
SIGNATURE_WINDOW = 60.0


def _derive(key: bytes, info: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(key)


def raft_secret(root_key: bytes) -> bytes:
    return _derive(root_key, b"coffer raft transport")


def raft_tls_key(root_key: bytes) -> bytes:
    return _derive(root_key, b"coffer raft tls keyring")


def challenge_key(root_key: bytes) -> bytes:
    return _derive(root_key, b"coffer raft join challenge")


def forwarding_key(secret: bytes) -> bytes:
    return _derive(secret, b"coffer request forwarding")


def _aad(server_id: str) -> str:
    return f"raft-join/{server_id}"


def seal_challenge(key: bytes, server_id: str, nonce: bytes) -> str:
    """``key`` is :func:`challenge_key` of the root key."""
    frame = seal_value(key, 0, _aad(server_id), nonce)
    return base64.b64encode(frame).decode("ascii")


def open_challenge(key: bytes, server_id: str, challenge: str) -> bytes:
    try:
        frame = base64.b64decode(challenge, validate=True)
        return open_sealed(key, _aad(server_id), frame)
    except (binascii.Error, ValueError, DecryptionError) as exc:
        raise InvalidRequestError(
            "the leader's join challenge does not open with these unseal keys: "
            "they belong to another cluster"
        ) from exc


def sign(key: bytes, *parts: str, now: float | None = None) -> str:
    """``<unix time>.<hex HMAC>`` over the parts and the time."""
    stamp = str(int(now if now is not None else time.time()))
    mac = hmac.new(key, "\x00".join((stamp, *parts)).encode(), hashlib.sha256).hexdigest()
    return f"{stamp}.{mac}"


def verify(key: bytes, signature: str, *parts: str) -> bool:
    stamp, _, mac = signature.partition(".")
    if not stamp.isdigit() or abs(time.time() - int(stamp)) > SIGNATURE_WINDOW:
        return False
    expected = hmac.new(key, "\x00".join((stamp, *parts)).encode(), hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, mac)


def new_nonce() -> bytes:
    return os.urandom(32)


def index_state_key(forward_key: bytes) -> bytes:
    """Signs the ``X-Vault-Index`` states a node hands out (see ``consistency``)."""
    return _derive(forward_key, b"coffer index state")
