"""The ``file`` device: append lines to a file, ``stdout``, or nowhere (``discard``).

Writes run on a worker thread (a slow disk must not stall the event loop),
one at a time per file under a lock, each line in a single ``os.write`` on a
descriptor opened with ``O_APPEND``. ``reopen`` (SIGHUP) only marks the file:
the next write closes the old descriptor and opens the path afresh, so after
a rename the lines already written stay in the renamed file and the next
ones go to the new one; no line is lost or split between them.
"""

from __future__ import annotations

import asyncio
import os
import threading

__all__ = ["FileSink"]

_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)


class FileSink:
    def __init__(self, path: str, mode: str = "") -> None:
        self.path = path
        #: The file's permissions; "0000" (or "0") leaves whatever they are.
        self._mode = int(mode, 8) if mode else 0o600
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._stale = False

    async def check(self) -> None:
        if self.path not in ("stdout", "discard"):
            await asyncio.to_thread(self._locked_open)

    async def write(self, line: bytes) -> None:
        if self.path == "discard":
            return
        await asyncio.to_thread(self._write, line)

    def reopen(self) -> None:
        self._stale = True

    async def close(self) -> None:
        await asyncio.to_thread(self._locked_close)

    # -- on the worker thread -------------------------------------------------------

    def _write(self, line: bytes) -> None:
        with self._lock:
            if self.path == "stdout":
                _write_all(1, line)
                return
            if self._fd is None or self._stale:
                self._close()
                self._open()
            assert self._fd is not None
            try:
                _write_all(self._fd, line)
            except OSError:
                self._close()  # reopened on the next write
                raise

    def _locked_open(self) -> None:
        with self._lock:
            if self._fd is None:
                self._open()

    def _locked_close(self) -> None:
        with self._lock:
            self._close()

    def _open(self) -> None:
        fd = os.open(self.path, _FLAGS, self._mode or 0o600)
        try:
            if self._mode:
                os.fchmod(fd, self._mode)
        except OSError:
            os.close(fd)
            raise
        self._fd, self._stale = fd, False

    def _close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
