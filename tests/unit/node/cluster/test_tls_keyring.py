"""The Raft TLS keyring (sdk/certs.py, tls_keyring.py): what the cluster CA
issues, how the records are sealed, what a node starts with, and renewal."""

from __future__ import annotations

import asyncio
import base64
import datetime
import os
import socket
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.x509.oid import ExtendedKeyUsageOID

from consensus.driver import ConsensusDriver
from harness.ports import free_port
from harness.raft import TEST_TIMERS
from node.cluster.join import Challenges
from node.cluster.secrets import raft_secret, raft_tls_key
from node.cluster.storage import RaftStorage
from node.cluster.tls_keeper import TLSKeeper
from node.cluster.tls_keyring import (
    CA_PATH,
    NODE_PREFIX,
    ensure_ca,
    issue_at_init,
    material_at_start,
    needs_renewal,
    open_node,
    renew,
    seal_node,
)
from node.physical.inmem import InmemBackend
from sdk.certs import (
    NODE_LIFETIME,
    certificate_node_id,
    create_cluster_ca,
    derive_cluster_ca,
    issued_by,
    not_after,
)
from sdk.errors import StorageError

NOW = datetime.datetime.now(datetime.UTC)


def test_a_node_certificate_names_the_node_and_chains_only_to_its_cluster_ca() -> None:
    ca, other = create_cluster_ca(), create_cluster_ca()
    first, second = ca.issue("node-1", "10.0.0.1"), ca.issue("node-2")
    cert = x509.load_pem_x509_certificate(first.cert_pem)
    assert certificate_node_id(first.cert_pem) == "node-1"
    assert cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value == (
        x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH])
    )
    assert cert.not_valid_after_utc - cert.not_valid_before_utc <= NODE_LIFETIME + (
        datetime.timedelta(minutes=5)
    )
    assert issued_by(first.cert_pem, ca.cert_pem)
    assert not issued_by(first.cert_pem, other.cert_pem)
    with pytest.raises((ValueError, InvalidSignature)):
        cert.verify_directly_issued_by(x509.load_pem_x509_certificate(other.cert_pem))
    # Each node has its own key pair.
    assert first.key_pem != second.key_pem
    assert x509.load_pem_x509_certificate(second.cert_pem).public_key() != cert.public_key()
    # Two clusters' CAs are unrelated (random keys, not derived from anything).
    assert (
        x509.load_pem_x509_certificate(ca.cert_pem).public_key()
        != x509.load_pem_x509_certificate(other.cert_pem).public_key()
    )


def test_a_node_record_opens_only_with_the_clusters_key_and_for_its_node() -> None:
    key, wrong = raft_tls_key(os.urandom(32)), raft_tls_key(os.urandom(32))
    tls = create_cluster_ca().issue("node-2")
    sealed = seal_node(key, "node-2", tls)
    assert tls.key_pem not in sealed and b"PRIVATE KEY" not in sealed
    assert open_node(key, "node-2", sealed) == tls
    with pytest.raises(StorageError):
        open_node(wrong, "node-2", sealed)  # another cluster's root key
    with pytest.raises(StorageError):
        open_node(key, "node-3", sealed)  # bound to node-2's path: no replay for another id


async def test_init_stores_the_ca_and_the_first_node_sealed_and_a_restart_reads_them() -> None:
    storage, key = InmemBackend(), raft_tls_key(os.urandom(32))
    assert await material_at_start(storage, key, "node-1", "10.0.0.1") is None  # no CA yet
    tls = await issue_at_init(storage, key, "node-1", "10.0.0.1:8201")
    for path in (CA_PATH, NODE_PREFIX + "node-1"):
        entry = await storage.get(path)
        assert entry is not None and b"PRIVATE KEY" not in entry.value
    assert await material_at_start(storage, key, "node-1", "10.0.0.1") == tls
    # A node without a record of its own (or a stale one) issues itself one from the CA.
    mine = await material_at_start(storage, key, "node-9", "10.0.0.9")
    assert mine is not None and certificate_node_id(mine.cert_pem) == "node-9"
    assert issued_by(mine.cert_pem, tls.ca_pem)


async def test_a_record_past_half_life_is_replaced_at_start() -> None:
    storage, key = InmemBackend(), raft_tls_key(os.urandom(32))
    await issue_at_init(storage, key, "node-1", "10.0.0.1:8201")
    ca = await ensure_ca(storage, key, os.urandom(32))
    old = ca.issue("node-1", now=NOW - NODE_LIFETIME * 0.6)
    assert needs_renewal(old, ca) and not needs_renewal(ca.issue("node-1"), ca)
    await storage.put(NODE_PREFIX + "node-1", seal_node(key, "node-1", old))
    fresh = await material_at_start(storage, key, "node-1", "10.0.0.1")
    assert fresh is not None and fresh != old
    assert not_after(fresh.cert_pem) > not_after(old.cert_pem)


async def test_renew_reissues_what_needs_it_and_drops_removed_members() -> None:
    storage, key = InmemBackend(), raft_tls_key(os.urandom(32))
    await issue_at_init(storage, key, "node-1", "10.0.0.1:8201")
    ca = await ensure_ca(storage, key, os.urandom(32))
    aging = ca.issue("node-2", now=NOW - NODE_LIFETIME * 0.6)
    foreign = create_cluster_ca().issue("node-4")  # not from this cluster's CA
    for node_id, tls in (("node-2", aging), ("node-3", ca.issue("node-3")), ("node-4", foreign)):
        await storage.put(NODE_PREFIX + node_id, seal_node(key, node_id, tls))
    members = {
        "node-1": "10.0.0.1:8201",
        "node-2": "10.0.0.2:8201",
        "node-4": "10.0.0.4:8201",
        "node-5": "10.0.0.5:8201",  # joined, record not stored yet
    }
    before = await storage.get(NODE_PREFIX + "node-1")
    assert await renew(storage, key, ca, members) == ["node-2", "node-4", "node-5"]
    assert await storage.get(NODE_PREFIX + "node-1") == before  # fresh: untouched
    assert await storage.get(NODE_PREFIX + "node-3") is None  # removed from the cluster
    for node_id in ("node-2", "node-4", "node-5"):
        entry = await storage.get(NODE_PREFIX + node_id)
        assert entry is not None
        tls = open_node(key, node_id, entry.value)
        assert not needs_renewal(tls, ca) and certificate_node_id(tls.cert_pem) == node_id
    assert await renew(storage, key, ca, members) == []  # nothing left to do
    # Half a lifetime later every certificate is renewed again.
    later = NOW + NODE_LIFETIME * 0.6
    assert await renew(storage, key, ca, members, now=later) == sorted(members)


async def test_a_cluster_from_before_the_stored_ca_adopts_the_ca_its_nodes_derive() -> None:
    storage, key, secret = InmemBackend(), raft_tls_key(os.urandom(32)), os.urandom(32)
    adopted = await ensure_ca(storage, key, secret)
    derived = derive_cluster_ca(secret)
    assert x509.load_pem_x509_certificate(adopted.cert_pem).public_key() == (
        x509.load_pem_x509_certificate(derived.cert_pem).public_key()
    )
    # The certificates nodes still issue themselves from the derived CA stay trusted.
    assert issued_by(derived.issue("old-node").cert_pem, adopted.cert_pem)
    assert await ensure_ca(storage, key, os.urandom(32)) == adopted  # stored once


async def test_a_ca_sealed_under_another_root_key_gives_way_to_the_derived_one() -> None:
    """A cluster that became a replication secondary runs on its primary's root key;
    a CA its active node stored under its own key in the meantime cannot be opened,
    so unsealing falls back to the CA derived from the new root key, and the active
    node stores that one in its place."""
    storage, secret = InmemBackend(), os.urandom(32)
    old_key, new_key = raft_tls_key(os.urandom(32)), raft_tls_key(secret)
    await issue_at_init(storage, old_key, "node-1", "10.0.0.1:8201")
    assert await material_at_start(storage, new_key, "node-1", "10.0.0.1") is None
    adopted = await ensure_ca(storage, new_key, secret)
    assert x509.load_pem_x509_certificate(adopted.cert_pem).public_key() == (
        x509.load_pem_x509_certificate(derive_cluster_ca(secret).cert_pem).public_key()
    )
    mine = await material_at_start(storage, new_key, "node-1", "10.0.0.1")
    assert mine is not None and issued_by(mine.cert_pem, adopted.cert_pem)


def test_a_challenge_keeps_the_material_issued_with_it_until_answered() -> None:
    challenges, nonce, newer = Challenges(), os.urandom(32), os.urandom(32)
    challenges.remember("node-2", nonce, "10.0.0.2")
    challenges.attach("node-2", nonce, b"sealed-material")
    assert challenges.check("node-2", base64.b64encode(nonce).decode()) == b"sealed-material"
    # Material issued for a challenge that was replaced meanwhile is not attached.
    challenges.remember("node-2", newer, "10.0.0.2")
    challenges.attach("node-2", nonce, b"stale")
    assert challenges.check("node-2", base64.b64encode(newer).decode()) == b""


def _served_certificate(address: str) -> bytes:
    """The certificate (PEM) a node presents on its Raft port (read before it refuses us)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    host, port = address.rsplit(":", 1)
    with (
        socket.create_connection((host, int(port)), timeout=10) as raw,
        context.wrap_socket(raw, do_handshake_on_connect=False) as tls,
    ):
        tls.do_handshake()
        der = tls.getpeercert(binary_form=True)
        assert der is not None
        return ssl.DER_cert_to_PEM_cert(der).encode()


async def _presents(address: str, cert_pem: bytes) -> None:
    wanted = x509.load_pem_x509_certificate(cert_pem)
    for _ in range(200):
        served = await asyncio.to_thread(_served_certificate, address)
        if x509.load_pem_x509_certificate(served) == wanted:
            return
        await asyncio.sleep(0.05)
    pytest.fail("the node does not present the expected certificate")


async def test_the_active_node_renews_an_aging_certificate_and_the_node_presents_it(
    tmp_path: Path,
) -> None:
    """Init, sweep and reload on a real replica: the keeper's whole rotation path."""
    address = f"127.0.0.1:{free_port()}"
    driver = ConsensusDriver("n1", address, tmp_path / "n1", overrides=dict(TEST_TIMERS))
    storage, root_key = RaftStorage(driver), os.urandom(32)
    key = raft_tls_key(root_key)
    storage.begin_staging()
    first = await issue_at_init(storage, key, "n1", address)
    replica = await driver.open(raft_secret(root_key), peers={}, tls=first)
    # Not active for its own loop: the sweeps below are the test's, so the loop's first
    # sweep cannot renew the aging record before the test's sweep looks for it.
    keeper = TLSKeeper(storage, "n1", address, is_active=lambda: False)
    try:
        storage.attach(replica)
        await replica.wait_for_leader(10)
        await storage.flush_staging()
        keeper.keep(root_key)
        keeper.presenting(first)
        keeper.start(replica)
        await _presents(address, first.cert_pem)
        assert await keeper.sweep() == []  # fresh: nothing to do
        # Our record ages past half-life (as if 18 of its 30 days went by): the
        # node presents what is stored, and the next sweep renews it.
        ca = await ensure_ca(storage, key, os.urandom(32))
        aging = ca.issue("n1", now=NOW - NODE_LIFETIME * 0.6)
        await storage.put(NODE_PREFIX + "n1", seal_node(key, "n1", aging))
        await _presents(address, aging.cert_pem)
        assert await keeper.sweep() == ["n1"]
        entry = await storage.get(NODE_PREFIX + "n1")
        assert entry is not None
        renewed = open_node(key, "n1", entry.value)
        assert not needs_renewal(renewed, ca) and renewed.cert_pem != aging.cert_pem
        await _presents(address, renewed.cert_pem)
        # The replica still commits (it talks to itself only, but through the new state).
        await storage.put("after", b"v")
    finally:
        await keeper.stop()
        await storage.detach()
