"""A TCP listener on loopback that collects the lines it receives, per connection.

For the audit tests' ``socket`` devices; ``stop`` makes the listener gone (no
more connections accepted, the open ones closed), as a crashed collector.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

__all__ = ["LineListener", "listening"]


class LineListener:
    def __init__(self, port: int = 0) -> None:
        #: (connection number, line without its newline), in arrival order.
        self.received: list[tuple[int, bytes]] = []
        self._sock = socket.create_server(("127.0.0.1", port))
        self.port: int = self._sock.getsockname()[1]
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def lines(self) -> list[bytes]:
        with self._lock:
            return [line for _, line in self.received]

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with self._lock:
                number = len(self._conns)
                self._conns.append(conn)
            threading.Thread(target=self._read, args=(conn, number), daemon=True).start()

    def _read(self, conn: socket.socket, number: int) -> None:
        buffer = b""
        with contextlib.suppress(OSError):
            while chunk := conn.recv(65536):
                buffer += chunk
                *done, buffer = buffer.split(b"\n")
                with self._lock:
                    self.received.extend((number, line) for line in done)

    def stop(self) -> None:
        # shutdown first: a close alone leaves the socket listening while accept() blocks on it
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()
        self._thread.join(5)


@contextlib.contextmanager
def listening(port: int = 0) -> Iterator[LineListener]:
    listener = LineListener(port)
    try:
        yield listener
    finally:
        listener.stop()
