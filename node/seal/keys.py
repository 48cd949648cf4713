"""Encoding of unseal-key shares as the reference does: hex or base64."""

from __future__ import annotations

import base64
import binascii

from node.errors import InvalidRequestError

__all__ = ["decode_key", "encode_b64", "encode_hex"]


def encode_hex(share: bytes) -> str:
    return share.hex()


def encode_b64(share: bytes) -> str:
    return base64.b64encode(share).decode()


def decode_key(text: str) -> bytes:
    """Accept a share as hex, falling back to base64, as the reference does."""
    text = text.strip()
    if not text:
        raise InvalidRequestError("'key' must not be empty")
    try:
        return bytes.fromhex(text)
    except ValueError:
        pass
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidRequestError("'key' must be a valid hex or base64 string") from exc
