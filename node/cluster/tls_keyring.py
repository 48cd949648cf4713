"""The Raft TLS keyring in replicated storage: the cluster CA and each node's certificate.

As Vault keeps its raft TLS keyring in raft storage under the barrier, the
records here are sealed (AES-GCM, the storage path as associated data) under
:func:`~node.cluster.secrets.raft_tls_key` of the root key, so only a node
unsealed with the cluster's keys reads them, and a sealed node can still read
its own record from its replica's files before it starts Raft:

* ``core/raft/tls/ca``: the cluster CA, created by the first node at init;
* ``core/raft/tls/nodes/<node id>``: that node's key pair and certificate.

The leader issues a joiner's record in the join challenge, sealed the same
way, and stores it once the joiner answered (:mod:`node.cluster.cluster`).
Certificates are valid for ``certs.NODE_LIFETIME``; the active node reissues
every member's at half-life (:func:`renew`, run by ``tls_keeper``), and a
node that starts with a record past half-life issues itself a new one
(:func:`material_at_start`).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import logging

from cryptography import x509

from node.barrier.aead import DecryptionError, open_sealed, seal_value
from sdk.certs import (
    ClusterCA,
    RaftTLS,
    create_cluster_ca,
    derive_cluster_ca,
    issued_by,
)
from sdk.errors import RevisionMismatchError, StorageError
from sdk.physical import PhysicalBackend, Put

__all__ = [
    "CA_PATH",
    "NODE_PREFIX",
    "ensure_ca",
    "host_of",
    "issue_at_init",
    "material_at_start",
    "needs_renewal",
    "open_node",
    "renew",
    "seal_node",
]

log = logging.getLogger("coffer.cluster.tls")

CA_PATH = "core/raft/tls/ca"
NODE_PREFIX = "core/raft/tls/nodes/"
#: A certificate with less than this share of its validity left is reissued.
RENEW_AT = 0.5


def host_of(address: str) -> str:
    """The host part of ``host:port`` (an IPv6 host loses its brackets)."""
    return address.rpartition(":")[0].strip("[]")


def _seal(key: bytes, path: str, fields: dict[str, bytes]) -> bytes:
    body = json.dumps({name: value.decode("ascii") for name, value in fields.items()})
    return seal_value(key, 0, path, body.encode())


def _open(key: bytes, path: str, blob: bytes, names: tuple[str, ...]) -> list[bytes]:
    try:
        body = json.loads(open_sealed(key, path, blob))
        return [body[name].encode("ascii") for name in names]
    except (DecryptionError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise StorageError(f"the raft TLS record {path} does not open with this root key") from exc


def seal_ca(key: bytes, ca: ClusterCA) -> bytes:
    return _seal(key, CA_PATH, {"cert": ca.cert_pem, "key": ca.key_pem})


def open_ca(key: bytes, blob: bytes) -> ClusterCA:
    cert, private = _open(key, CA_PATH, blob, ("cert", "key"))
    return ClusterCA(cert, private)


def seal_node(key: bytes, node_id: str, tls: RaftTLS) -> bytes:
    fields = {"ca": tls.ca_pem, "cert": tls.cert_pem, "key": tls.key_pem}
    return _seal(key, NODE_PREFIX + node_id, fields)


def open_node(key: bytes, node_id: str, blob: bytes) -> RaftTLS:
    ca, cert, private = _open(key, NODE_PREFIX + node_id, blob, ("ca", "cert", "key"))
    return RaftTLS(ca, cert, private)


def needs_renewal(tls: RaftTLS, ca: ClusterCA, now: datetime.datetime | None = None) -> bool:
    """Past ``RENEW_AT`` of its validity, or not issued by (and trusting) ``ca``."""
    cert = x509.load_pem_x509_certificate(tls.cert_pem)
    start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
    moment = now or datetime.datetime.now(datetime.UTC)
    if end - moment < (end - start) * RENEW_AT:
        return True
    return tls.ca_pem != ca.cert_pem or not issued_by(tls.cert_pem, ca.cert_pem)


async def material_at_start(
    storage: PhysicalBackend, key: bytes, node_id: str, host: str
) -> RaftTLS | None:
    """This node's material, read before Raft starts (a sealed node reads its own files).

    A record past half-life (the node was down while the active node would
    have renewed it) is replaced by a certificate the node issues itself from
    the stored CA: it holds the root key, so it may. None: the cluster has no
    stored CA yet (initialised before it); the derived CA stands in.
    """
    ca_entry = await storage.get(CA_PATH)
    ca = None if ca_entry is None else _stale_ca(key, ca_entry.value)
    if ca is None:
        return None
    entry = await storage.get(NODE_PREFIX + node_id)
    if entry is not None:
        with contextlib.suppress(StorageError):  # unreadable: issue a new one
            tls = open_node(key, node_id, entry.value)
            if not needs_renewal(tls, ca):
                return tls
    return ca.issue(node_id, host)


async def issue_at_init(
    storage: PhysicalBackend, key: bytes, node_id: str, cluster_addr: str
) -> RaftTLS:
    """Create the cluster CA and the first node's material, and store both (init)."""
    ca = create_cluster_ca()
    tls = ca.issue(node_id, host_of(cluster_addr))
    await storage.put(CA_PATH, seal_ca(key, ca))
    await storage.put(NODE_PREFIX + node_id, seal_node(key, node_id, tls))
    return tls


async def ensure_ca(storage: PhysicalBackend, key: bytes, legacy_secret: bytes) -> ClusterCA:
    """The stored CA; a cluster initialised before it stores the CA its nodes derive
    from ``legacy_secret``, so their certificates stay trusted. A record sealed under
    another root key (:func:`_stale_ca`) is replaced the same way."""
    entry = await storage.get(CA_PATH)
    if entry is not None and (ca := _stale_ca(key, entry.value)) is not None:
        return ca
    ca = derive_cluster_ca(legacy_secret)
    try:
        await storage.commit(
            [Put(CA_PATH, seal_ca(key, ca), expect=entry.revision if entry else 0)]
        )
    except RevisionMismatchError:
        entry = await storage.get(CA_PATH)  # another active node stored it first
        if entry is None:
            raise
        return open_ca(key, entry.value)
    return ca


def _stale_ca(key: bytes, blob: bytes) -> ClusterCA | None:
    """The CA in ``blob``, or None when it was sealed under another root key.

    That happens to a cluster that became a replication secondary: it takes its
    primary's root key, and its active node may have stored a CA under its own
    key between the wipe and the seal. Such a record protects nothing (this
    root key cannot have written it); the CA derived from this root key stands
    in, as for a cluster initialised before CAs were stored, and every node of
    the cluster derives the same one.
    """
    try:
        return open_ca(key, blob)
    except StorageError:
        log.warning(
            "the stored raft CA was sealed under another root key; using the derived CA",
            extra={"event": "cluster.tls_stale_ca"},
        )
        return None


async def renew(
    storage: PhysicalBackend,
    key: bytes,
    ca: ClusterCA,
    members: dict[str, str],
    now: datetime.datetime | None = None,
) -> list[str]:
    """Reissue the record of every member (node id -> address) that needs it and
    drop the records of nodes no longer members; returns the renewed node ids."""
    renewed = []
    for node_id, address in sorted(members.items()):
        entry = await storage.get(NODE_PREFIX + node_id)
        if entry is not None:
            try:
                if not needs_renewal(open_node(key, node_id, entry.value), ca, now):
                    continue
            except StorageError:
                pass  # unreadable: replace it
        tls = ca.issue(node_id, host_of(address), now=now)
        await storage.put(NODE_PREFIX + node_id, seal_node(key, node_id, tls))
        renewed.append(node_id)
    for node_id in await storage.list(NODE_PREFIX):
        if node_id not in members:
            await storage.delete(NODE_PREFIX + node_id)
    return renewed
