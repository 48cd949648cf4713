"""Mutual TLS between Raft peers (consensus/pki.py and the vendored transport).

Nodes with certificates from one cluster CA form a cluster; a peer whose
certificate comes from another CA, or that has none, cannot connect, even
when it knows the transport password.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import socket
import ssl
import struct
import warnings
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization

from consensus import RaftBackend, RaftConfig
from consensus._vendor.pysyncobj import SyncObjConf
from consensus._vendor.pysyncobj.poller import createPoller
from consensus._vendor.pysyncobj.tcp_connection import TcpConnection, wrapConnected
from consensus._vendor.pysyncobj.tcp_server import TcpServer
from consensus._vendor.pysyncobj.transport import TCPTransport
from consensus.dumps import SnapshotStore
from consensus.journal import DurableJournal
from consensus.pki import node_tls, tls_contexts
from consensus.state import KVState
from consensus.state_machine import ReplicatedStore
from harness.ports import free_port
from sdk.certs import ClusterCA, RaftTLS, create_cluster_ca, derive_cluster_ca

CALM = {
    "heartbeat_interval": 0.05,
    "election_timeout_min": 1.0,
    "election_timeout_max": 2.0,
    "connection_timeout": 2.0,
    "leader_step_down_timeout": 2.0,
}


def material(ca: ClusterCA, node_id: str) -> RaftTLS:
    return ca.issue(node_id, "127.0.0.1")


@contextlib.asynccontextmanager
async def tls_cluster(
    tmp_path: Path, secret: bytes, ca: ClusterCA, *, derived: bool = False
) -> AsyncIterator[list[RaftBackend]]:
    """Three nodes; ``derived``: material as the driver makes it (``node_tls``)."""
    addresses = {f"n{i}": f"127.0.0.1:{free_port()}" for i in range(3)}
    nodes: list[RaftBackend] = []
    try:
        for node_id, address in addresses.items():
            peers = {k: v for k, v in addresses.items() if k != node_id}
            config = RaftConfig(
                node_id, address, tmp_path / node_id, secret, peers=peers,
                tls=node_tls(secret, node_id, "127.0.0.1") if derived else material(ca, node_id),
                **CALM,
            )  # fmt: skip
            nodes.append(await RaftBackend.open(config))
        for node in nodes:
            await node.wait_for_leader(20)
        yield nodes
    finally:
        for node in nodes:
            await node.close()


async def test_nodes_with_certificates_from_the_cluster_ca_replicate(tmp_path: Path) -> None:
    async with tls_cluster(tmp_path, os.urandom(32), create_cluster_ca()) as nodes:
        revision = await nodes[1].put("over-tls", b"v")
        for node in nodes:
            await node.wait_for_index(revision, 10)
            assert await node.get("over-tls") is not None
            # TLS alone guards the link: no Fernet per message inside it.
            assert node._node._obj.encryptor is None
        for node in nodes:
            # The watcher's cheap view says what the full status says.
            for _ in range(100):
                connected, leader, commit, applied = node.link_view()
                status = node.status()
                if len(connected) == 2 and connected == {
                    peer["address"] for peer in status["peers"] if peer["connected"]
                }:
                    break
                await asyncio.sleep(0.05)
            assert connected == {peer["address"] for peer in status["peers"]}
            assert leader == status["leader"] == node.leader().address
            assert commit >= revision and applied >= revision


async def test_a_peer_with_a_foreign_certificate_cannot_connect_even_with_the_password(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    secret = os.urandom(32)
    async with tls_cluster(tmp_path, secret, create_cluster_ca()) as nodes:
        await nodes[0].put("secret/app", b"x")
        leader_before = nodes[0].leader()
        term_before = nodes[0].status()["term"]
        # pysyncobj dials only peers whose address sorts below its own.
        targets = [nodes[0].status()["address"], nodes[1].status()["address"]]
        for _ in range(1000):
            address = f"127.0.0.1:{free_port()}"
            if address > max(targets):
                break
        else:
            pytest.skip("no free port sorts above the cluster's")
        intruder_config = RaftConfig(
            "intruder", address, tmp_path / "intruder", secret,
            peers={"n0": nodes[0].status()["address"], "n1": nodes[1].status()["address"]},
            tls=material(create_cluster_ca("other"), "intruder"), **CALM,
        )  # fmt: skip
        with caplog.at_level(logging.WARNING, logger="consensus._vendor.pysyncobj"):
            intruder = await RaftBackend.open(intruder_config)
            try:
                await asyncio.sleep(3)
                assert intruder.leader() is None
                assert await intruder.list("") == []
                assert not any(intruder.status()["connected"].values())
                assert intruder.link_view()[:2] == (frozenset(), None)
            finally:
                await intruder.close()
        assert any("TLS handshake failed" in r.getMessage() for r in caplog.records)
        assert nodes[2].leader() == leader_before
        assert nodes[0].status()["term"] == term_before


def _connect(address: str, context: ssl.SSLContext | None, payload: bytes) -> bytes:
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        if context is None:
            raw.sendall(payload)
            try:
                return raw.recv(4096)
            except ConnectionResetError:
                return b""  # closed with unread data: refused all the same
        # Handshake inside the block: a failing wrap_socket would leak its SSLSocket.
        with context.wrap_socket(raw, do_handshake_on_connect=False) as tls:
            tls.do_handshake()
            tls.sendall(payload)
            return tls.recv(4096)


async def test_a_client_without_a_certificate_or_without_tls_is_refused(tmp_path: Path) -> None:
    ca = create_cluster_ca()
    async with tls_cluster(tmp_path, os.urandom(32), ca) as nodes:
        address = nodes[0].status()["address"]
        anonymous = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        anonymous.check_hostname = False
        anonymous.load_verify_locations(cadata=ca.cert_pem.decode())
        with pytest.raises((ssl.SSLError, ConnectionError)):
            # TLS 1.3: the server's refusal of the missing certificate arrives on read.
            await asyncio.to_thread(_connect, address, anonymous, b"\x00\x00\x00\x04abcd")
        assert await asyncio.to_thread(_connect, address, None, b"\x00\x00\x00\x04abcd") == b""
        revision = await nodes[0].put("still-fine", b"v")
        await nodes[2].wait_for_index(revision, 10)


def test_the_derived_cluster_ca_is_the_same_on_every_node_and_only_for_that_secret() -> None:
    secret, other = os.urandom(32), os.urandom(32)
    ca_a, ca_b = (x509.load_pem_x509_certificate(derive_cluster_ca(secret).cert_pem) for _ in "ab")
    # Same key, name, serial and validity (ECDSA signatures differ, so the bytes do).
    assert ca_a.public_key() == ca_b.public_key()
    assert (ca_a.subject, ca_a.serial_number) == (ca_b.subject, ca_b.serial_number)
    mine = x509.load_pem_x509_certificate(node_tls(secret, "n1", "127.0.0.1").cert_pem)
    mine.verify_directly_issued_by(ca_a)
    mine.verify_directly_issued_by(ca_b)
    with pytest.raises((ValueError, InvalidSignature)):
        mine.verify_directly_issued_by(
            x509.load_pem_x509_certificate(derive_cluster_ca(other).cert_pem)
        )


async def test_nodes_opened_by_the_driver_talk_tls_and_keep_no_plaintext_key(
    tmp_path: Path,
) -> None:
    secret = os.urandom(32)
    ca = derive_cluster_ca(secret)
    async with tls_cluster(tmp_path, secret, ca, derived=True) as nodes:
        revision = await nodes[0].put("k", b"v")
        await nodes[2].wait_for_index(revision, 10)
    key_file = tmp_path / "n0" / "tls" / "node-key.pem"
    assert b"BEGIN ENCRYPTED PRIVATE KEY" in key_file.read_bytes()
    assert b"BEGIN PRIVATE KEY" not in key_file.read_bytes()


def _client(tmp_path: Path, tls: RaftTLS | None, trust: bytes | None = None) -> ssl.SSLContext:
    """A client context presenting ``tls`` (None: no certificate), trusting ``trust``."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    if trust is None:
        context.verify_mode = ssl.CERT_NONE
    else:
        context.load_verify_locations(cadata=trust.decode())
    if tls is not None:
        cert, key = tmp_path / "client.pem", tmp_path / "client-key.pem"
        cert.write_bytes(tls.cert_pem)
        key.write_bytes(tls.key_pem)
        context.load_cert_chain(cert, key)
    return context


def _served_certificate(address: str, context: ssl.SSLContext) -> bytes:
    """The certificate (DER) the node at ``address`` presents in a handshake."""
    host, port = address.rsplit(":", 1)
    with (
        socket.create_connection((host, int(port)), timeout=10) as raw,
        context.wrap_socket(raw, do_handshake_on_connect=False) as tls,
    ):
        tls.do_handshake()
        served = tls.getpeercert(binary_form=True)
        assert served is not None
        return served


async def test_a_rotated_certificate_is_presented_from_the_next_handshake(
    tmp_path: Path,
) -> None:
    ca = create_cluster_ca()
    async with tls_cluster(tmp_path, os.urandom(32), ca) as nodes:
        address = nodes[0].status()["address"]
        client = _client(tmp_path, ca.issue("probe"), trust=ca.cert_pem)
        before = await asyncio.to_thread(_served_certificate, address, client)
        renewed = ca.issue("n0", "127.0.0.1")
        wanted = x509.load_pem_x509_certificate(renewed.cert_pem).public_bytes(
            serialization.Encoding.DER
        )
        assert before != wanted
        nodes[0].reload_tls(renewed)
        for _ in range(100):
            if await asyncio.to_thread(_served_certificate, address, client) == wanted:
                break
            await asyncio.sleep(0.05)
        else:
            pytest.fail("the node kept presenting its old certificate")
        # Peers that reconnect accept the renewed certificate: the cluster keeps working.
        revision = await nodes[0].put("after-rotation", b"v")
        await nodes[2].wait_for_index(revision, 10)
        key_file = tmp_path / "n0" / "tls" / "node-key.pem"
        assert b"BEGIN ENCRYPTED PRIVATE KEY" in key_file.read_bytes()


async def test_a_certificate_for_another_node_cannot_take_a_members_place(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A valid certificate from this cluster's CA is still refused at a member's
    address when it names another node: the node id in the certificate is checked."""
    secret, ca = os.urandom(32), create_cluster_ca()
    async with tls_cluster(tmp_path, secret, ca) as nodes:
        address = nodes[2].status()["address"]
        peers = {"n0": nodes[0].status()["address"], "n1": nodes[1].status()["address"]}
        await nodes[2].close()
        # n2 may have led: the write waits until the others have elected one of them.
        for _ in range(400):
            leader = nodes[0].leader()
            if leader is not None and leader.address != address:
                break
            await asyncio.sleep(0.05)
        revision = await nodes[0].put("while-n2-is-away", b"v")
        impostor_config = RaftConfig(
            "n2", address, tmp_path / "impostor", secret, peers=peers,
            tls=material(ca, "n9"), **CALM,
        )  # fmt: skip
        with caplog.at_level(logging.WARNING, logger="consensus.transport"):
            impostor = await RaftBackend.open(impostor_config)
            try:
                await asyncio.sleep(3)
                assert impostor.leader() is None
                assert await impostor.get("while-n2-is-away") is None
            finally:
                await impostor.close()
        assert any("refusing a raft peer" in r.getMessage() for r in caplog.records)
        # n2 itself, with its own certificate, comes back and catches up.
        own_config = RaftConfig(
            "n2", address, tmp_path / "n2", secret, peers=peers,
            tls=material(ca, "n2"), **CALM,
        )  # fmt: skip
        nodes[2] = await RaftBackend.open(own_config)
        await nodes[2].wait_for_index(revision, 20)
        assert await nodes[2].get("while-n2-is-away") is not None


def read_only_observer(tmp_path: Path, tls: RaftTLS, address: str) -> ReplicatedStore:
    """pysyncobj's read-only member (no address of its own) presenting ``tls``."""
    server, client = tls_contexts(tls, tmp_path / "observer-tls")
    data_dir = tmp_path / "observer"
    data_dir.mkdir()
    state, journal = KVState(), DurableJournal(data_dir / "journal")
    conf = SyncObjConf(
        connectionRetryTime=0.1,
        journalFile=journal,
        snapshotStore=SnapshotStore(data_dir / "dump", state, journal, 1 << 20),
        sslServerContext=server,
        sslClientContext=client,
    )
    return ReplicatedStore(None, [address], conf, state, TCPTransport)


async def test_a_read_only_peer_with_a_cluster_certificate_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Inside TLS there is no transport password, so a certificate from the
    cluster CA (a removed member's, still valid) must not be enough to follow
    the log as pysyncobj's read-only member."""
    ca = create_cluster_ca()
    async with tls_cluster(tmp_path, os.urandom(32), ca) as nodes:
        await nodes[0].put("secret/app", b"ciphertext")
        leader = next(node for node in nodes if node.is_leader())
        address = leader.status()["address"]  # the one that would send it the log
        with caplog.at_level(logging.WARNING, logger="consensus.transport"):
            observer = await asyncio.to_thread(
                read_only_observer, tmp_path, material(ca, "n-removed"), address
            )
            try:
                await asyncio.sleep(1.5)
                assert observer.kv.list("") == []
            finally:
                await asyncio.to_thread(observer.destroy_synchronous)
        assert any("refused a read-only raft peer" in r.getMessage() for r in caplog.records)


def _reset(sock: socket.socket) -> None:
    """Close ``sock`` with an RST (linger 0) instead of a FIN."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


@contextlib.contextmanager
def resource_warnings() -> Iterator[list[warnings.WarningMessage]]:
    """The ResourceWarnings raised inside the block, collected at its end."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        found: list[warnings.WarningMessage] = []
        yield found
        gc.collect()
    found += [w for w in caught if issubclass(w.category, ResourceWarning)]


def _open_tls_sockets_on(port: int) -> list[ssl.SSLSocket]:
    gc.collect()
    found = []
    for candidate in gc.get_objects():
        if isinstance(candidate, ssl.SSLSocket) and candidate.fileno() != -1:
            with contextlib.suppress(OSError):
                if candidate.getsockname()[1] == port:
                    found.append(candidate)
    return found


def test_a_connection_reset_before_it_is_accepted_leaves_no_socket_open(tmp_path: Path) -> None:
    """CPython's wrap_socket (before 3.12, gh-113280) leaked the SSLSocket it made
    for a connection the peer had already reset; the node then warned of an
    unclosed socket at its next garbage collection (seen in CI under load)."""
    server_context, _ = tls_contexts(material(create_cluster_ca(), "n0"), tmp_path / "tls")
    poller = createPoller("auto")
    accepted: list[TcpConnection] = []
    port = free_port()
    server = TcpServer(poller, "127.0.0.1", port, accepted.append, sslContext=server_context)
    server.bind()
    try:
        _reset(socket.create_connection(("127.0.0.1", port)))
        poller.poll(1)  # accepts the reset connection and refuses it
        assert accepted == []
        # The refusal's log record holds the exception (and so, before the fix, the
        # leaked socket): look for a descriptor still open rather than its warning.
        assert _open_tls_sockets_on(port) == []
        with socket.create_connection(("127.0.0.1", port)):
            poller.poll(1)  # the server still takes a live peer
        assert len(accepted) == 1
    finally:
        for conn in accepted:
            conn.disconnect()
        server.unbind()


def test_wrapping_a_socket_whose_peer_reset_it_raises_and_keeps_the_descriptor(
    tmp_path: Path,
) -> None:
    """The outgoing side wraps once TCP connects: a reset in between is an OSError
    that leaves the plain socket owning its descriptor, for the caller to close."""
    _, client_context = tls_contexts(material(create_cluster_ca(), "n1"), tmp_path / "tls")
    with socket.create_server(("127.0.0.1", 0)) as listener:
        with resource_warnings() as leaked:
            client = socket.create_connection(listener.getsockname())
            accepted, _ = listener.accept()
            _reset(accepted)
            client.setblocking(False)
            with pytest.raises(OSError):
                wrapConnected(client_context, client, serverSide=False)
            assert client.fileno() != -1
            client.close()
        assert leaked == []
