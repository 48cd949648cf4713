"""Encoding of unseal-key shares as the reference does: hex or base64."""

from __future__ import annotations

import base64
import binascii

from sdk.errors import InvalidRequestError

__all__ = ["decode_key", "encode_b64", "encode_hex"]


def encode_hex(share: bytes) -> str:
    return share.hex()


def encode_b64(share: bytes) -> str:
    return base64.b64encode(share).decode()


#: Shortest and longest key the reference accepts: a 128- to 256-bit key, plus the one
#: byte of a Shamir share's x coordinate.
MIN_KEY_BYTES = 16
MAX_KEY_BYTES = 32 + 1


def decode_key(text: str) -> bytes:
    """Accept a share as hex, falling back to base64, as the reference does.

    Hex that decodes to a length no key can have is tried as base64 instead (a
    base64 string can also be valid hex); the decoded length is then checked.
    """
    text = text.strip()
    if not text:
        raise InvalidRequestError("'key' must not be empty")
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if not MIN_KEY_BYTES <= len(key) <= MAX_KEY_BYTES:
        try:
            key = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise InvalidRequestError("'key' must be a valid hex or base64 string") from exc
    if len(key) < MIN_KEY_BYTES:
        raise InvalidRequestError(f"key is shorter than minimum {MIN_KEY_BYTES} bytes")
    if len(key) > MAX_KEY_BYTES:
        raise InvalidRequestError(f"key is longer than maximum {MAX_KEY_BYTES} bytes")
    return key
