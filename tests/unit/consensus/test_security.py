"""Transport and at-rest hygiene of the Raft backend.

pysyncobj.md section 5: the transport must always be encrypted and
authenticated (mutual TLS, or without it Fernet under the password), bound
to one interface, and the files on disk must be private and free of pickles.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import stat
import struct
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from consensus import RaftBackend, RaftConfig, RaftConfigError
from consensus._vendor.pysyncobj import SyncObjConf
from consensus._vendor.pysyncobj.transport import TCPTransport
from consensus.config import derive_transport_password, to_syncobj_conf
from consensus.dumps import SnapshotStore
from consensus.journal import DurableJournal
from consensus.state import KVState
from consensus.state_machine import ReplicatedStore
from harness.ports import free_port
from harness.raft import TEST_TIMERS, make_config, open_single_node, single_node

MARKER = b"CIPHERTEXT-MARKER-7f3a"


@pytest.fixture
def umask_022() -> Iterator[None]:
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


@pytest.fixture
async def backend(tmp_path: Path) -> AsyncIterator[RaftBackend]:
    async with single_node(tmp_path / "raft") as store:
        yield store


async def wait_for_dump(backend: RaftBackend, path: Path) -> None:
    backend.force_compaction()
    for _ in range(500):
        if path.exists():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("no dump was written")


# -- passwords --------------------------------------------------------------------------


@pytest.mark.parametrize("secret", [b"", b"short", "a string secret" * 4, None])
def test_refuses_to_start_without_key_material(tmp_path: Path, secret: object) -> None:
    with pytest.raises(RaftConfigError, match="cluster_secret"):
        make_config(tmp_path, cluster_secret=secret)


def test_without_tls_the_library_gets_a_password_derived_from_the_secret(
    tmp_path: Path,
) -> None:
    config = make_config(tmp_path)

    conf = to_syncobj_conf(config, journal=None, dump_file=tmp_path / "dump", snapshot_store=None)

    assert conf.password == derive_transport_password(config.cluster_secret)
    assert conf.password != derive_transport_password(os.urandom(32))
    assert config.cluster_secret.hex() not in conf.password
    assert "cluster_secret" not in repr(config)


def observer(address: str, secret: bytes, data_dir: Path) -> ReplicatedStore:
    """A read-only pysyncobj member: the library hands it the whole log."""
    data_dir.mkdir()
    state, journal = KVState(), DurableJournal(data_dir / "journal")
    conf = SyncObjConf(
        password=derive_transport_password(secret),
        connectionRetryTime=0.1,
        journalFile=journal,
        snapshotStore=SnapshotStore(data_dir / "dump", state, journal, 1 << 20),
    )
    return ReplicatedStore(None, [address], conf, state, TCPTransport)


async def observed_keys(store: ReplicatedStore, seconds: float) -> list[str]:
    for _ in range(int(seconds / 0.05)):
        if store.kv.list(""):
            break
        await asyncio.sleep(0.05)
    return store.kv.list("")


async def test_only_the_right_secret_can_read_the_replicated_log(
    backend: RaftBackend, tmp_path: Path
) -> None:
    await backend.put("secret/app", MARKER)
    address = backend.status()["address"]
    # Opening a journal blocks: off the loop, as RaftBackend.open does.
    wrong = await asyncio.to_thread(observer, address, os.urandom(32), tmp_path / "wrong")
    right = await asyncio.to_thread(
        observer, address, backend._config.cluster_secret, tmp_path / "right"
    )
    try:
        assert await observed_keys(right, 10) == ["secret/"], "positive control"
        assert await observed_keys(wrong, 1.5) == []
        assert wrong.raftLastApplied <= 1
    finally:
        for store in (wrong, right):
            await asyncio.to_thread(store.destroy_synchronous)


async def test_a_peer_with_the_wrong_secret_cannot_join(
    backend: RaftBackend, tmp_path: Path
) -> None:
    await backend.put("secret/app", MARKER)
    intruder = await RaftBackend.open(
        make_config(
            tmp_path / "intruder", node_id="intruder", peers={"a": backend.status()["address"]}
        )
    )
    try:
        await asyncio.sleep(1.5)
        assert intruder.leader() is None
        assert await intruder.list("") == []
        assert backend.is_leader()
        assert [server.node_id for server in backend.configuration()] == ["node-1"]
    finally:
        await intruder.close()


# -- network exposure ---------------------------------------------------------------------


async def test_binds_only_the_cluster_address(backend: RaftBackend) -> None:
    port = int(backend.status()["address"].rsplit(":", 1)[1])

    with socket.create_connection(("127.0.0.1", port), timeout=2):
        pass
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.2", port), timeout=2).close()


@pytest.mark.parametrize("address", ["0.0.0.0:8201", "[::]:8201", "127.0.0.1", "host:port"])
def test_wildcard_or_malformed_addresses_are_refused(tmp_path: Path, address: str) -> None:
    with pytest.raises(RaftConfigError):
        make_config(tmp_path, cluster_addr=address)


def test_timer_relations_are_validated(tmp_path: Path) -> None:
    with pytest.raises(RaftConfigError):
        make_config(tmp_path, election_timeout_min=0.02)  # < 3 heartbeats
    with pytest.raises(RaftConfigError):
        make_config(tmp_path, connection_timeout=0.05)
    with pytest.raises(RaftConfigError):
        RaftConfig("n", "127.0.0.1:1", tmp_path, os.urandom(32), peers={"n": "127.0.0.1:2"})
    assert make_config(tmp_path, **TEST_TIMERS).tick_interval == 0.005


@pytest.mark.parametrize("setting", [{"compaction_min_entries": 1}, {"compaction_min_bytes": 0}])
def test_compaction_thresholds_are_validated(tmp_path: Path, setting: dict[str, int]) -> None:
    with pytest.raises(RaftConfigError, match="compaction"):
        make_config(tmp_path, **setting)


# -- at rest ----------------------------------------------------------------------------------


async def test_files_are_0600_in_a_0700_directory(tmp_path: Path, umask_022: None) -> None:
    root = tmp_path / "raft"
    root.mkdir(mode=0o755)
    os.chmod(root, 0o755)
    store = await open_single_node(root)
    try:
        await store.put("a", MARKER)
        await wait_for_dump(store, root / "dump.jsonl")
    finally:
        await store.close()

    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    names = sorted(path.name for path in root.iterdir())
    assert {"dump.jsonl", "journal", "journal.meta", "lock"} <= set(names)
    for path in root.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path.name


async def test_dump_is_our_json_and_holds_values_only_as_given(
    backend: RaftBackend, tmp_path: Path
) -> None:
    values = {f"secret/{n}": MARKER + os.urandom(8) for n in range(50)}
    for key, value in values.items():
        await backend.put(key, value)
    dump = tmp_path / "raft" / "dump.jsonl"

    await wait_for_dump(backend, dump)

    blob = dump.read_bytes()
    records = [json.loads(line) for line in blob.splitlines()]
    assert records[0]["format"] == "coffer-raft-snapshot"
    assert records[0]["kind"] == "dump"
    assert MARKER not in blob
    assert not blob.startswith((b"\x80", b"\x1f\x8b"))
    kv = {key: value for record in records for key, value, _ in record.get("kv", [])}
    assert set(kv) == set(values)
    journal = (tmp_path / "raft" / "journal").read_bytes()
    assert MARKER not in journal, "journal entries carry base64 JSON commands only"


async def test_a_second_process_cannot_open_the_same_data(
    backend: RaftBackend, tmp_path: Path
) -> None:
    from sdk.errors import StorageError

    with pytest.raises(StorageError, match="in use"):
        await RaftBackend.open(make_config(tmp_path / "raft"))


# -- the raft port under hostile bytes (issue 14 item 4) --------------------------------------


@contextlib.asynccontextmanager
async def three_nodes(tmp_path: Path) -> AsyncIterator[list[RaftBackend]]:
    """A real 3-node cluster in this process, on loopback, with calm timers."""
    secret = os.urandom(32)
    addresses = {f"n{i}": f"127.0.0.1:{free_port()}" for i in range(3)}
    calm = {
        "heartbeat_interval": 0.05,
        "election_timeout_min": 1.0,
        "election_timeout_max": 2.0,
        "connection_timeout": 2.0,
        "leader_step_down_timeout": 2.0,
    }
    nodes: list[RaftBackend] = []
    try:
        for node_id, address in addresses.items():
            config = RaftConfig(
                node_id,
                address,
                tmp_path / node_id,
                secret,
                peers={k: v for k, v in addresses.items() if k != node_id},
                **calm,
            )
            nodes.append(await RaftBackend.open(config))
        for node in nodes:
            await node.wait_for_leader(20)
        yield nodes
    finally:
        for node in nodes:
            await node.close()


def refused(address: str, payload: bytes) -> bool:
    """Send ``payload`` on a raw connection; True if the node closed it."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(payload)
        try:
            while chunk := sock.recv(4096):
                del chunk  # a node answers nothing before a valid handshake
        except ConnectionResetError:
            pass
    return True


HOSTILE = [
    struct.pack(">I", 2**31) + b"A" * 65536,  # the 2 GiB prefix of issue 14
    struct.pack(">I", 2**32 - 1),
    struct.pack("<i", -5) + b"x" * 100,
    struct.pack(">I", 4097) + b"x" * 4097,  # over the pre-handshake cap
    struct.pack(">I", 12) + b"not a token!",  # not Fernet
    b"\x80\x02cos\nsystem\n" * 50,  # a pickle
]


async def test_hostile_frames_close_the_connection_and_leave_the_leader_alone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with three_nodes(tmp_path) as nodes:
        await nodes[0].put("before", b"1")
        leader = nodes[0].leader()
        terms = [node.status()["term"] for node in nodes]

        with caplog.at_level(logging.WARNING, logger="consensus._vendor.pysyncobj"):
            for node in nodes:
                for payload in HOSTILE:
                    assert await asyncio.to_thread(refused, node.status()["address"], payload)
        # Each connection was closed because its frame was refused (not by a timeout).
        closed = [
            r.getMessage() for r in caplog.records if "closing a raft connection" in r.getMessage()
        ]
        assert len(closed) == len(HOSTILE) * len(nodes), closed
        assert sum("exceeds the cap" in message for message in closed) == 5 * len(nodes)

        revision = await nodes[1].put("after", b"2")
        for node in nodes:
            await node.wait_for_index(revision, 10)
            assert await node.get("after") is not None
        assert [node.status()["term"] for node in nodes] == terms
        assert nodes[2].leader() == leader


def _silent_client(address: str) -> bytes:
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        try:
            return sock.recv(1)  # b"" once the node closes it
        except ConnectionResetError:
            return b""


async def test_a_connection_that_never_identifies_itself_is_closed(backend: RaftBackend) -> None:
    """Nothing is sent, so no socket event ever fires on the node's side: only the
    transport's own clock (connection_timeout, 0.5 s here) can end it."""
    closed = await asyncio.to_thread(_silent_client, backend.status()["address"])
    assert closed == b""
    assert backend.is_leader()
