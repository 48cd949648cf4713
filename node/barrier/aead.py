"""AES-256-GCM framing shared by the barrier and the seal.

Frame: version byte, 4-byte key term, 12-byte random nonce, ciphertext+tag.
The associated data is the storage path, binding a ciphertext to its key.

``seal_value``/``open_sealed`` take raw key bytes (one-off uses: the seal, the
keyring); the barrier's hot path uses ``seal_with``/``open_with`` with the
``AESGCM`` its keyring keeps per term, so the key schedule is built once.

Nonces come from ``sdk.random_pool``: kernel randomness fetched ahead, each
byte handed out once. GCM needs a nonce unique, not secret, and ``os.urandom``
releases the GIL, which hands it to a waiting Raft thread twice per KV write
(docs/performance.md, "Seventh pass").
"""

from __future__ import annotations

import struct

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from sdk.random_pool import random_bytes

__all__ = [
    "FRAME_VERSION",
    "DecryptionError",
    "frame_term",
    "open_sealed",
    "open_with",
    "seal_value",
    "seal_with",
]

FRAME_VERSION = 1
_HEADER = 1 + 4
_NONCE = 12
#: Version byte and key term (unsigned, big-endian); ``Struct.pack`` refuses a term
#: that does not fit, as ``int.to_bytes`` did.
_FRAME_HEADER = struct.Struct(">BI")


class DecryptionError(Exception):
    """A frame failed authentication: wrong key, wrong path or tampering."""


def seal_with(cipher: AESGCM, term: int, path: str, plaintext: bytes) -> bytes:
    nonce = random_bytes(_NONCE)
    return (
        _FRAME_HEADER.pack(FRAME_VERSION, term)
        + nonce
        + cipher.encrypt(nonce, plaintext, path.encode())
    )


def seal_value(key: bytes, term: int, path: str, plaintext: bytes) -> bytes:
    return seal_with(AESGCM(key), term, path, plaintext)


def frame_term(frame: bytes) -> int:
    if len(frame) < _HEADER + _NONCE + 16 or frame[0] != FRAME_VERSION:
        raise DecryptionError("not a barrier frame")
    return int.from_bytes(frame[1:_HEADER], "big")


def open_with(cipher: AESGCM, path: str, frame: bytes) -> bytes:
    frame_term(frame)
    nonce = frame[_HEADER : _HEADER + _NONCE]
    try:
        return cipher.decrypt(nonce, frame[_HEADER + _NONCE :], path.encode())
    except InvalidTag as exc:
        raise DecryptionError("authentication failed") from exc


def open_sealed(key: bytes, path: str, frame: bytes) -> bytes:
    return open_with(AESGCM(key), path, frame)
