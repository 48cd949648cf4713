"""A node's own Raft data, read without networking, and its founding peers.

A sealed node must find ``core/seal-config`` and ``core/root-key`` before it
can derive the transport password, and that password is needed to start the
replica. :func:`read_local_state` therefore rebuilds the key space from this
node's dump and journal (our formats, see :mod:`consensus.snapshot` and
:mod:`consensus.journal`) on the calling thread, without a socket. Journal
entries past the dump are applied whether or not they were committed: the
caller only reads write-once keys from it, and the real replica replaces it
as soon as the node unseals.

pysyncobj rebuilds membership from the peers a node was *first* started with
plus the membership entries in its log, so those founding peers are stored in
``peers.json`` and passed again on every later start.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from consensus.commands import CommandError, decode_command
from consensus.journal import DurableJournal, write_file_atomically
from consensus.snapshot import SnapshotError, decode_snapshot
from consensus.state import KVState
from sdk.errors import StorageError

__all__ = [
    "REMOVED_MARKER",
    "discard_raft_data",
    "has_raft_data",
    "load_founding_peers",
    "mark_removed",
    "read_local_state",
    "store_founding_peers",
    "was_removed",
]

_PEERS_FILE = "peers.json"
#: Present once this node was removed from its cluster; it must not serve again.
REMOVED_MARKER = "removed"
_REGULAR = 0  # pysyncobj's _COMMAND_TYPE.REGULAR


def has_raft_data(data_dir: Path) -> bool:
    """Whether this node ever ran a replica here (bootstrapped or joined)."""
    return (data_dir / "journal").exists() or (data_dir / "dump.jsonl").exists()


def discard_raft_data(data_dir: Path) -> None:
    """Remove a replica that never became a member (a join that failed part-way)."""
    for name in ("journal", "journal.meta", "dump.jsonl", _PEERS_FILE):
        (data_dir / name).unlink(missing_ok=True)


def was_removed(data_dir: Path) -> bool:
    return (data_dir / REMOVED_MARKER).exists()


def mark_removed(data_dir: Path) -> None:
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    write_file_atomically(data_dir / REMOVED_MARKER, b"removed from the raft cluster\n")


def store_founding_peers(data_dir: Path, peers: dict[str, str]) -> None:
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    write_file_atomically(data_dir / _PEERS_FILE, json.dumps({"peers": peers}).encode())


def load_founding_peers(data_dir: Path) -> dict[str, str]:
    try:
        raw = json.loads((data_dir / _PEERS_FILE).read_bytes())
    except FileNotFoundError:
        return {}
    except ValueError as exc:
        raise StorageError(f"corrupt {data_dir / _PEERS_FILE}: {exc}") from exc
    peers = raw.get("peers") if isinstance(raw, dict) else None
    if not isinstance(peers, dict):
        raise StorageError(f"corrupt {data_dir / _PEERS_FILE}")
    return {str(node_id): str(address) for node_id, address in peers.items()}


def _command_blob(entry: bytes) -> bytes | None:
    """A regular entry is its type byte and our command bytes (journal format 2)."""
    if not entry or entry[0] != _REGULAR:
        return None  # no-op, membership or version entries
    return entry[1:]


def read_local_state(data_dir: Path) -> KVState:
    """The key space as this node's files hold it (blocking: run off the loop)."""
    state = KVState()
    dump = data_dir / "dump.jsonl"
    try:
        with open(dump, "rb") as stream:
            image, _ = decode_snapshot(stream)
        state.load(image)
    except FileNotFoundError:
        pass
    except (OSError, SnapshotError) as exc:
        raise StorageError(f"cannot read the raft dump at {dump}: {exc}") from exc
    journal_path = data_dir / "journal"
    if not journal_path.exists():
        return state
    if not os.access(journal_path, os.R_OK | os.W_OK):
        raise StorageError(f"cannot open the raft journal at {journal_path}")
    try:
        journal = DurableJournal(journal_path)
    except (OSError, ValueError) as exc:
        raise StorageError(f"cannot read the raft journal at {journal_path}: {exc}") from exc
    try:
        for raw, index, _term in list(journal):
            if index <= state.applied_index:
                continue
            blob = _command_blob(raw)
            if blob is None:
                continue
            try:
                command = decode_command(blob)
            except CommandError:
                continue
            state.apply(index, command)
    finally:
        journal._destroy()
    return state
