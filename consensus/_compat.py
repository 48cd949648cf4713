"""The small, version-guarded seams where consensus reaches into pysyncobj.

Everything else uses public hooks (``transportClass``, ``SyncObjConf``,
``addOnTickCallback``, ``doTick``). These three cannot:

1. **Journal injection.** ``SyncObj.__init__`` builds its journal with the
   module-level ``createJournal(conf.journalFile)`` and reads term, vote and
   commit index from it right there. We wrap that function once so that a
   ``Journal`` *instance* passed as ``journalFile`` is used as is; any other
   value still gets the library's own journal.
2. **Dump store.** The library's ``Serializer`` is replaced on the instance
   (``_SyncObj__serializer``) before the first tick; see :mod:`consensus.dumps`.
3. **Pipe notifier fds.** With ``appendEntriesUseBatch=False`` the library
   opens a pipe it never closes; we close it when the node stops.
4. **Outgoing source address.** ``TcpConnection.connect`` creates and connects
   its socket in one call, so a node's outgoing Raft connections would leave
   from whatever address the kernel picks (127.0.0.1 on loopback) instead of
   its cluster address. The module's ``socket`` name is replaced once by a shim
   that binds a new socket to the address the calling thread asked for (see
   :func:`bind_outgoing`); every other attribute is the real module.

Importing this module fails on any pysyncobj version these were not checked
against, so an upgrade is a deliberate act (re-read the seams, the follower
fix in :mod:`consensus.follower` and pysyncobj.md, then extend the set).
"""

from __future__ import annotations

import contextlib
import os
import socket as _socket
import threading
import types
from collections.abc import Iterator
from typing import Any

import pysyncobj.journal as _journal
import pysyncobj.serializer as _serializer
import pysyncobj.syncobj as _syncobj
import pysyncobj.tcp_connection as _tcp_connection
import pysyncobj.transport as _transport
from pysyncobj.version import VERSION

__all__ = [
    "SUPPORTED_VERSIONS",
    "bind_outgoing",
    "close_pipe_notifier",
    "install_journal_hook",
    "install_snapshot_store",
]

SUPPORTED_VERSIONS = frozenset({"0.3.17"})
_SERIALIZER_METHODS = (
    "checkSerializing",
    "serialize",
    "deserialize",
    "getTransmissionData",
    "setTransmissionData",
    "cancelTransmisstion",
)
_TRANSPORT_METHODS = ("_onMessageReceived", "_onUtilityMessage", "send")


def _check() -> None:
    if VERSION not in SUPPORTED_VERSIONS:
        raise ImportError(
            f"consensus was verified against pysyncobj {sorted(SUPPORTED_VERSIONS)}, "
            f"found {VERSION}; re-check consensus._compat before allowing it"
        )
    missing = [name for name in _SERIALIZER_METHODS if not hasattr(_serializer.Serializer, name)]
    missing += [name for name in _TRANSPORT_METHODS if not hasattr(_transport.TCPTransport, name)]
    if not callable(getattr(_syncobj, "createJournal", None)):
        missing.append("syncobj.createJournal")
    if not hasattr(_tcp_connection, "socket"):
        missing.append("tcp_connection.socket")
    if missing:
        raise ImportError(f"pysyncobj {VERSION} lacks what consensus patches: {missing}")


_check()
_library_create_journal = _syncobj.createJournal


def _create_journal(journal_file: Any) -> Any:
    if isinstance(journal_file, _journal.Journal):
        return journal_file
    return _library_create_journal(journal_file)


def install_journal_hook() -> None:
    """Let ``SyncObjConf(journalFile=<Journal>)`` inject a journal (idempotent)."""
    current = _syncobj.createJournal
    if current is _create_journal:
        return
    if current is not _library_create_journal:
        raise RuntimeError("pysyncobj.syncobj.createJournal was replaced by someone else")
    _syncobj.createJournal = _create_journal


def install_snapshot_store(sync_obj: Any, store: Any) -> None:
    """Swap the library's Serializer for ours; only valid before the first tick."""
    attribute = "_SyncObj__serializer"
    current = getattr(sync_obj, attribute, None)
    if not isinstance(current, _serializer.Serializer):
        raise RuntimeError("pysyncobj's serializer attribute is not where it was checked")
    for name in _SERIALIZER_METHODS:
        if not callable(getattr(store, name, None)):
            raise TypeError(f"{type(store).__name__} lacks {name}")
    setattr(sync_obj, attribute, store)


def close_pipe_notifier(sync_obj: Any) -> None:
    notifier = getattr(sync_obj, "_SyncObj__pipeNotifier", None)
    if notifier is None:
        return
    for name in ("_PipeNotifier__pipeR", "_PipeNotifier__pipeW"):
        fd = getattr(notifier, name, None)
        if isinstance(fd, int):
            with contextlib.suppress(OSError):
                os.close(fd)
            setattr(notifier, name, None)


_outgoing = threading.local()


class _SocketShim(types.ModuleType):
    """The ``socket`` module, except that ``socket()`` binds to the calling
    thread's chosen source host (port 0) when one is set."""

    def __getattr__(self, name: str) -> Any:
        return getattr(_socket, name)

    @staticmethod
    def socket(*args: Any, **kwargs: Any) -> _socket.socket:
        sock = _socket.socket(*args, **kwargs)
        host = getattr(_outgoing, "host", None)
        if host:
            # On failure connect from the kernel's choice rather than not at all.
            with contextlib.suppress(OSError):
                sock.bind((host, 0))
        return sock


@contextlib.contextmanager
def bind_outgoing(host: str) -> Iterator[None]:
    """Sockets pysyncobj creates in this block (this thread) leave from ``host``."""
    if not isinstance(_tcp_connection.socket, _SocketShim):
        _tcp_connection.socket = _SocketShim("socket")
    previous = getattr(_outgoing, "host", None)
    _outgoing.host = host
    try:
        yield
    finally:
        _outgoing.host = previous
