"""The stream's frames: a 4-byte big-endian length, then one JSON object.

Bytes from the network are parsed here and nowhere else. The length is
checked before anything of the frame is buffered, so a peer can make the
other side hold at most :data:`MAX_FRAME` bytes; a frame that is not one JSON
object with a string ``type`` ends the connection (:class:`FrameError`).
Values inside are base64 (ciphertext only, never plaintext).
"""

from __future__ import annotations

import base64
import binascii
import struct
from typing import Any

from sdk import jsoncodec

__all__ = ["MAX_FRAME", "FrameDecoder", "FrameError", "b64", "encode", "unb64"]

MAX_FRAME = 16 * 1024 * 1024
_HEADER = struct.Struct(">I")


class FrameError(ValueError):
    """The peer sent something that is not a frame of this protocol."""


def encode(message: dict[str, Any]) -> bytes:
    body = jsoncodec.dumps(message)
    if len(body) > MAX_FRAME:
        raise FrameError(f"frame of {len(body)} bytes is over the {MAX_FRAME}-byte cap")
    return _HEADER.pack(len(body)) + body


class FrameDecoder:
    """Feed it whatever the socket gave; it returns every complete message."""

    def __init__(self, max_frame: int = MAX_FRAME) -> None:
        self._buffer = bytearray()
        self._max = max_frame
        self._need: int | None = None

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        self._buffer += data
        out: list[dict[str, Any]] = []
        while True:
            if self._need is None:
                if len(self._buffer) < _HEADER.size:
                    return out
                (length,) = _HEADER.unpack_from(self._buffer)
                if length > self._max:
                    raise FrameError(f"frame of {length} bytes is over the {self._max}-byte cap")
                del self._buffer[: _HEADER.size]
                self._need = length
            if len(self._buffer) < self._need:
                return out
            body = bytes(self._buffer[: self._need])
            del self._buffer[: self._need]
            self._need = None
            out.append(_decode(body))

    @property
    def pending(self) -> int:
        """Bytes held for an incomplete frame."""
        return len(self._buffer)


def _decode(body: bytes) -> dict[str, Any]:
    try:
        message = jsoncodec.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise FrameError("frame is not JSON") from exc
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise FrameError("frame is not an object with a type")
    return message


def b64(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


def unb64(value: Any) -> bytes:
    if not isinstance(value, str):
        raise FrameError("expected a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise FrameError("bad base64") from exc
