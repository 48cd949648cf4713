"""X.509 for the Raft transport: the cluster CA and the node certificates it issues.

Plain certificate making, no storage and no sockets: :mod:`node.cluster.tls_keyring`
keeps the CA and each node's material in replicated storage, and
``consensus.pki`` turns a :class:`RaftTLS` into TLS contexts. It is a leaf of the
``sdk`` because both sides need it: ``node.cluster`` issues and rotates the
certificates, ``consensus.driver`` derives one when given none (as Vault keeps
certificate making in ``sdk/helper/certutil``).

Keys are ECDSA P-256. A node certificate names its node id as its common name
and is valid for both TLS client and server use (every Raft peer dials and
accepts).
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass, field

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = [
    "CA_LIFETIME",
    "NODE_LIFETIME",
    "ClusterCA",
    "RaftTLS",
    "certificate_node_id",
    "create_cluster_ca",
    "derive_cluster_ca",
    "issue_node_certificate",
    "issued_by",
    "not_after",
]

CA_LIFETIME = datetime.timedelta(days=3650)
#: Bounded on purpose: the active node reissues at half-life (tls_keyring.RENEW_AT).
NODE_LIFETIME = datetime.timedelta(days=30)
#: Tolerated clock skew between the issuer and the peers that check a certificate.
_BACKDATE = datetime.timedelta(minutes=5)


@dataclass(frozen=True, slots=True)
class RaftTLS:
    """A node's TLS material for the Raft transport (PEM): whom it trusts, who it is."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes = field(repr=False)


@dataclass(frozen=True, slots=True)
class ClusterCA:
    """The cluster CA: its certificate and (secret) key, PEM."""

    cert_pem: bytes
    key_pem: bytes = field(repr=False)

    def issue(
        self,
        node_id: str,
        host: str = "",
        *,
        lifetime: datetime.timedelta = NODE_LIFETIME,
        now: datetime.datetime | None = None,
    ) -> RaftTLS:
        """A new key pair for ``node_id`` and its certificate, with this CA as trust."""
        cert, key = issue_node_certificate(
            self.cert_pem, self.key_pem, node_id, host, lifetime=lifetime, now=now
        )
        return RaftTLS(self.cert_pem, cert, key)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def create_cluster_ca(cluster_name: str = "coffer") -> ClusterCA:
    """A new self-signed cluster CA with a random key (made once, at ``sys/init``)."""
    now = _now()
    cert, key = _ca(
        ec.generate_private_key(ec.SECP256R1()),
        cluster_name,
        x509.random_serial_number(),
        now - _BACKDATE,
        now + CA_LIFETIME,
    )
    return ClusterCA(cert, key)


_CA_INFO = b"coffer/raft/cluster-ca-key/v1"
#: A derived CA's certificate is the same on every node: fixed serial and validity.
_DERIVED_SERIAL = 1
_DERIVED_FROM = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
_DERIVED_UNTIL = datetime.datetime(2120, 1, 1, tzinfo=datetime.UTC)


def derive_cluster_ca(cluster_secret: bytes) -> ClusterCA:
    """The CA of clusters initialised before the stored CA: key = HKDF of the secret.

    Kept only so such a cluster keeps its peers' trust: its active node stores
    this CA once (``tls_keyring.ensure_ca``) and every certificate after that is
    issued from storage, as for a new cluster.
    """
    order = int("FFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551", 16)
    raw = HKDF(algorithm=hashes.SHA256(), length=48, salt=None, info=_CA_INFO).derive(
        cluster_secret
    )
    key = ec.derive_private_key(int.from_bytes(raw, "big") % (order - 1) + 1, ec.SECP256R1())
    cert, key_pem = _ca(key, "coffer", _DERIVED_SERIAL, _DERIVED_FROM, _DERIVED_UNTIL)
    return ClusterCA(cert, key_pem)


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
    ca_cert_pem: bytes,
    ca_key_pem: bytes,
    node_id: str,
    host: str = "",
    *,
    lifetime: datetime.timedelta = NODE_LIFETIME,
    now: datetime.datetime | None = None,
) -> tuple[bytes, bytes]:
    """A new key pair and its certificate for one node: (cert PEM, key PEM).

    ``host`` (an IP or a name) becomes a subject alternative name when given;
    peers do not check it (they are known by address, the CA is the identity).
    """
    ca_cert = x509.load_pem_x509_certificate(ca_cert_pem)
    ca_key = serialization.load_pem_private_key(ca_key_pem, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError("the cluster CA key must be an EC key")
    key = ec.generate_private_key(ec.SECP256R1())
    start = now or _now()
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, node_id)]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start - _BACKDATE)
        .not_valid_after(min(start + lifetime, ca_cert.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
    )
    if host:
        try:
            san: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(host.strip("[]")))
        except ValueError:
            san = x509.DNSName(host)
        builder = builder.add_extension(x509.SubjectAlternativeName([san]), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def not_after(cert_pem: bytes) -> datetime.datetime:
    return x509.load_pem_x509_certificate(cert_pem).not_valid_after_utc


def certificate_node_id(cert_pem: bytes) -> str:
    """The node id a node certificate names (its common name)."""
    names = x509.load_pem_x509_certificate(cert_pem).subject.get_attributes_for_oid(
        NameOID.COMMON_NAME
    )
    value = names[0].value if names else ""
    return value if isinstance(value, str) else value.decode()


def issued_by(cert_pem: bytes, ca_pem: bytes) -> bool:
    """Whether ``ca_pem`` signed ``cert_pem`` (signature and issuer name)."""
    try:
        x509.load_pem_x509_certificate(cert_pem).verify_directly_issued_by(
            x509.load_pem_x509_certificate(ca_pem)
        )
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True
