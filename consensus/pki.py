"""Mutual TLS between Raft peers: a cluster CA and the node certificates it issues.

Every Raft connection is TLS 1.3 with a certificate on both sides, and each
side requires the other's to chain to the cluster CA (``RaftTLS.ca_pem``),
so a peer without a certificate from this cluster cannot connect, whatever
else it knows (the Fernet password included; it stays inside TLS for now).
Peers are addressed by IP and port, so the identity checked is "issued by
this cluster's CA", not a host name.

This module makes the CA and issues certificates (ECDSA P-256). In production
(:func:`node_tls`, used by :mod:`consensus.driver`) the CA key is derived
with HKDF from the cluster secret every unsealed node already holds (the same
secret the transport password comes from), so every member can issue its own
certificate at start-up and nothing new has to be stored or distributed; a
node gets that secret only through the join challenge. See consensus/DESIGN.md
("Mutual TLS") for what this does not give yet (per-node revocation).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from consensus.journal import write_file_atomically

__all__ = [
    "RaftTLS",
    "create_cluster_ca",
    "derive_cluster_ca",
    "issue_node_certificate",
    "node_tls",
    "tls_contexts",
]

_CA_DAYS = 3650
_NODE_DAYS = 365
_NODE_USAGES = [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]


@dataclass(frozen=True, slots=True)
class RaftTLS:
    """A node's TLS material for the Raft transport (PEM)."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes = field(repr=False)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


_CA_INFO = b"coffer/raft/cluster-ca-key/v1"
#: A derived CA's certificate is the same on every node: fixed serial and validity.
_DERIVED_SERIAL = 1
_DERIVED_FROM = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
_DERIVED_UNTIL = datetime.datetime(2120, 1, 1, tzinfo=datetime.UTC)


def create_cluster_ca(cluster_name: str = "coffer") -> tuple[bytes, bytes]:
    """A new self-signed cluster CA with a random key: (certificate PEM, key PEM)."""
    now = _now()
    return _ca(
        ec.generate_private_key(ec.SECP256R1()),
        cluster_name,
        x509.random_serial_number(),
        now - datetime.timedelta(minutes=5),
        now + datetime.timedelta(days=_CA_DAYS),
    )


def derive_cluster_ca(cluster_secret: bytes) -> tuple[bytes, bytes]:
    """The cluster CA whose key is HKDF-SHA256 of the cluster secret (same on every node)."""
    order = int("FFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551", 16)
    raw = HKDF(algorithm=hashes.SHA256(), length=48, salt=None, info=_CA_INFO).derive(
        cluster_secret
    )
    key = ec.derive_private_key(int.from_bytes(raw, "big") % (order - 1) + 1, ec.SECP256R1())
    return _ca(key, "coffer", _DERIVED_SERIAL, _DERIVED_FROM, _DERIVED_UNTIL)


def node_tls(cluster_secret: bytes, node_id: str, host: str) -> RaftTLS:
    """This node's TLS material: a fresh key, certified by the derived cluster CA."""
    ca_cert, ca_key = derive_cluster_ca(cluster_secret)
    cert, key = issue_node_certificate(ca_cert, ca_key, node_id, host)
    return RaftTLS(ca_cert, cert, key)


def _ca(
    key: ec.EllipticCurvePrivateKey,
    cluster_name: str,
    serial: int,
    not_before: datetime.datetime,
    not_after: datetime.datetime,
) -> tuple[bytes, bytes]:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{cluster_name} raft cluster CA")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(serial)
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def issue_node_certificate(
    ca_cert_pem: bytes, ca_key_pem: bytes, node_id: str, host: str, *, days: int = _NODE_DAYS
) -> tuple[bytes, bytes]:
    """A certificate for one node, for client and server use: (cert PEM, key PEM)."""
    ca_cert = x509.load_pem_x509_certificate(ca_cert_pem)
    ca_key = serialization.load_pem_private_key(ca_key_pem, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError("the cluster CA key must be an EC key")
    key = ec.generate_private_key(ec.SECP256R1())
    try:
        san: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        san = x509.DNSName(host)
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, node_id)]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName([san]), critical=False)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def tls_contexts(tls: RaftTLS, directory: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """(server, client) contexts: TLS 1.3, a certificate required on both sides.

    ``ssl`` loads a certificate chain only from files, so the node's
    certificate and key are written to ``directory`` (0600 files in a 0700
    directory), the key encrypted under a random password that exists only in
    this process's memory: no private key is on disk in plaintext.
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
    contexts = []
    for purpose in (ssl.PROTOCOL_TLS_SERVER, ssl.PROTOCOL_TLS_CLIENT):
        context = ssl.SSLContext(purpose)
        context.minimum_version = ssl.TLSVersion.TLSv1_3
        context.check_hostname = False  # peers are known by IP:port; the CA is the identity
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(cadata=tls.ca_pem.decode("ascii"))
        context.load_cert_chain(cert_file, key_file, password=password)
        contexts.append(context)
    return contexts[0], contexts[1]
