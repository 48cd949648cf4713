"""AES-256-GCM framing shared by the barrier and the seal.

Frame: version byte, 4-byte key term, 12-byte random nonce, ciphertext+tag.
The associated data is the storage path, binding a ciphertext to its key.
"""

from __future__ import annotations

import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = ["FRAME_VERSION", "DecryptionError", "frame_term", "open_sealed", "seal_value"]

FRAME_VERSION = 1
_HEADER = 1 + 4
_NONCE = 12


class DecryptionError(Exception):
    """A frame failed authentication: wrong key, wrong path or tampering."""


def seal_value(key: bytes, term: int, path: str, plaintext: bytes) -> bytes:
    nonce = os.urandom(_NONCE)
    header = bytes([FRAME_VERSION]) + term.to_bytes(4, "big")
    return header + nonce + AESGCM(key).encrypt(nonce, plaintext, path.encode())


def frame_term(frame: bytes) -> int:
    if len(frame) < _HEADER + _NONCE + 16 or frame[0] != FRAME_VERSION:
        raise DecryptionError("not a barrier frame")
    return int.from_bytes(frame[1:_HEADER], "big")


def open_sealed(key: bytes, path: str, frame: bytes) -> bytes:
    frame_term(frame)
    nonce = frame[_HEADER : _HEADER + _NONCE]
    try:
        return AESGCM(key).decrypt(nonce, frame[_HEADER + _NONCE :], path.encode())
    except InvalidTag as exc:
        raise DecryptionError("authentication failed") from exc
