"""Mutual TLS between Raft peers: TLS contexts from a node's certificate.

Every Raft connection is TLS 1.3 with a certificate on both sides, and each
side requires the other's to chain to the cluster CA (``RaftTLS.ca_pem``),
so a peer without a certificate from this cluster cannot connect, whatever
else it knows. With TLS the engine runs without the Fernet password: TLS
already encrypts and authenticates every message (consensus/config.py).
Peers are addressed by IP and port, so the identity checked is "issued by
this cluster's CA", not a host name.

The certificates themselves come from :mod:`sdk.certs`: a random
cluster CA made at ``sys/init`` and kept in replicated storage sealed under a
key only unsealed nodes hold, and a key pair and certificate per node, issued
by the leader in the join challenge and reissued before they expire
(:mod:`node.cluster.tls_keyring`; consensus/DESIGN.md, "Mutual TLS").
:func:`reload_certificate` swaps a rotated certificate into running contexts.
"""

from __future__ import annotations

import os
import ssl
from pathlib import Path

from cryptography.hazmat.primitives import serialization

from consensus.journal import write_file_atomically
from sdk.certs import RaftTLS, derive_cluster_ca

__all__ = ["node_tls", "reload_certificate", "tls_contexts"]


def node_tls(cluster_secret: bytes, node_id: str, host: str) -> RaftTLS:
    """A fresh key certified by the CA derived from ``cluster_secret``.

    What nodes did before the stored CA; the driver falls back to it only when
    no material is given (clusters initialised before it, test harnesses).
    """
    return derive_cluster_ca(cluster_secret).issue(node_id, host)


def _load_chain(contexts: tuple[ssl.SSLContext, ...], tls: RaftTLS, directory: Path) -> None:
    """Load the node's certificate and key into ``contexts``.

    ``ssl`` loads a certificate chain only from files, so the certificate and
    key are written to ``directory`` (0600 files in a 0700 directory), the key
    encrypted under a random password that exists only in this process's
    memory: no private key is on disk in plaintext.
    """
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    cert_file, key_file = directory / "node.pem", directory / "node-key.pem"
    password = os.urandom(32).hex().encode("ascii")
    key = serialization.load_pem_private_key(tls.key_pem, password=None)
    sealed_key = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(password),
    )
    write_file_atomically(cert_file, tls.cert_pem)
    write_file_atomically(key_file, sealed_key)
    for context in contexts:
        context.load_verify_locations(cadata=tls.ca_pem.decode("ascii"))
        context.load_cert_chain(cert_file, key_file, password=password)


def tls_contexts(tls: RaftTLS, directory: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """(server, client) contexts: TLS 1.3, a certificate required on both sides."""
    contexts = []
    for purpose in (ssl.PROTOCOL_TLS_SERVER, ssl.PROTOCOL_TLS_CLIENT):
        context = ssl.SSLContext(purpose)
        context.minimum_version = ssl.TLSVersion.TLSv1_3
        context.check_hostname = False  # peers are known by IP:port; the CA is the identity
        context.verify_mode = ssl.CERT_REQUIRED
        contexts.append(context)
    _load_chain(tuple(contexts), tls, directory)
    return contexts[0], contexts[1]


def reload_certificate(
    contexts: tuple[ssl.SSLContext, ssl.SSLContext], tls: RaftTLS, directory: Path
) -> None:
    """Present ``tls``'s certificate from the next handshake on (a rotation).

    Connections already open keep the certificate they authenticated with.
    The CA is added to the trust (OpenSSL cannot drop one from a context).
    Call it on the thread that uses the contexts.
    """
    _load_chain(contexts, tls, directory)
