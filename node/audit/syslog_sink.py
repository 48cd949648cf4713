"""The ``syslog`` device: one datagram per line to the local syslog socket.

The message is the classic local form, ``<PRI>TAG[PID]: LINE``, sent on a
unix datagram socket (``/dev/log`` unless the ``address`` option names
another) with the standard library's facility codes. It is sent directly
rather than through ``logging.handlers.SysLogHandler.emit``, which swallows
errors, because a line that was not recorded must fail the write (fail
closed). The socket is non-blocking: a full syslog queue is a failed write,
not a stalled server.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from logging.handlers import SysLogHandler

__all__ = ["SyslogSink"]


class SyslogSink:
    def __init__(self, facility: str = "AUTH", tag: str = "coffer", address: str = "") -> None:
        self.facility = SysLogHandler.facility_names[facility.lower()]
        self.tag = tag
        self.address = address or "/dev/log"
        self._socket: socket.socket | None = None

    async def check(self) -> None:
        """Nothing: the syslog socket is opened on first use (and again after a failure)."""

    async def write(self, line: bytes) -> None:
        priority = (self.facility << 3) | SysLogHandler.LOG_INFO
        message = f"<{priority}>{self.tag}[{os.getpid()}]: ".encode() + line.rstrip(b"\n")
        try:
            if self._socket is None:
                # Connecting may block briefly: off the event loop.
                self._socket = await asyncio.to_thread(self._open)
            self._socket.send(message)
        except OSError:
            self._reset()
            raise

    def reopen(self) -> None:
        self._reset()

    async def close(self) -> None:
        self._reset()

    def _open(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            sock.connect(self.address)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        return sock

    def _reset(self) -> None:
        sock, self._socket = self._socket, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.close()
