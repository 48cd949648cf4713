"""The Raft port of real ``coffer server`` processes (issue 13): only a peer with a
certificate from this cluster's CA gets in.

Each node presents its own certificate, naming its node id, from one cluster CA
made at init (joiners got theirs in the join challenge); a client with a
certificate from another CA, or with none, is refused, while the joined nodes
replicate, also after a restart.
"""

from __future__ import annotations

import datetime
import functools
import socket
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from cryptography.x509.oid import NameOID

from sdk.certs import NODE_LIFETIME, create_cluster_ca
from tests.cluster.servers import Node, bootstrapped, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def _context(tmp_path: Path, name: str, with_certificate: bool) -> ssl.SSLContext:
    """A client that accepts any server certificate and presents one from a foreign CA
    (or none)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if with_certificate:
        tls = create_cluster_ca("intruder").issue("node1", "127.0.0.1")
        cert, key = tmp_path / f"{name}.pem", tmp_path / f"{name}-key.pem"
        cert.write_bytes(tls.cert_pem)
        key.write_bytes(tls.key_pem)
        context.load_cert_chain(cert, key)
    return context


def _probe(node: Node, context: ssl.SSLContext) -> tuple[x509.Certificate, bytes]:
    """Handshake with ``node``'s Raft port, send a frame, and return the server's
    certificate and what came back (b"": the node closed the connection)."""
    with socket.create_connection((node.raft_ip, node.raft_port), timeout=10) as raw:
        raw.settimeout(10)
        with context.wrap_socket(raw, do_handshake_on_connect=False) as tls:
            tls.do_handshake()  # TLS 1.3: the client's side completes before the server checks
            der = tls.getpeercert(binary_form=True)
            assert der is not None
            try:
                tls.sendall(b"\x00\x00\x00\x04abcd")
                answer = tls.recv(4096)
            except (ssl.SSLError, ConnectionError):
                answer = b""
    return x509.load_der_x509_certificate(der), answer


def _readable(node: Node, name: str, token: str) -> bool:
    return node.request("GET", f"/v1/secret/data/{name}", token=token).status == 200


def _common_name(name: x509.Name) -> str:
    return str(name.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value)


def test_only_peers_with_a_certificate_from_the_cluster_ca_reach_the_raft_port(
    tmp_path: Path,
) -> None:
    foreign = _context(tmp_path, "foreign", with_certificate=True)
    anonymous = _context(tmp_path, "anonymous", with_certificate=False)
    with bootstrapped(tmp_path, 3) as cluster:
        token = cluster.root_token
        issuers = set()
        keys = set()
        for node in cluster.nodes:
            served, answer = _probe(node, foreign)
            assert answer == b"", f"{node.name} answered a foreign certificate"
            assert _probe(node, anonymous)[1] == b"", f"{node.name} answered without one"
            # Its own certificate: its node id, from the one cluster CA, short-lived.
            assert _common_name(served.subject) == node.name
            assert _common_name(served.issuer) == "coffer raft cluster CA"
            lifetime = served.not_valid_after_utc - served.not_valid_before_utc
            assert lifetime <= NODE_LIFETIME + datetime.timedelta(minutes=5)
            issuers.add(served.issuer.rfc4514_string())
            keys.add(
                served.public_key().public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
            )
        assert len(issuers) == 1 and len(keys) == 3
        # The refused probes changed nothing: the joined nodes replicate.
        active = cluster.active()
        put = active.request("PUT", "/v1/secret/data/tls", {"data": {"a": "1"}}, token=token)
        assert put.status == 200, put
        for node in cluster.standbys():
            wait_until(
                functools.partial(_readable, node, "tls", token), 10, f"replication to {node.name}"
            )
        # A restarted joiner reads its certificate from its own files and rejoins.
        standby = cluster.standbys()[0]
        before, _ = _probe(standby, anonymous)
        standby.stop()
        standby.start()
        cluster.unseal(standby)
        cluster.wait_roles()
        after, _ = _probe(standby, anonymous)
        assert after.serial_number == before.serial_number  # the stored one, not a new one
        put = active.request("PUT", "/v1/secret/data/tls2", {"data": {"a": "2"}}, token=token)
        assert put.status == 200, put
        wait_until(lambda: _readable(standby, "tls2", token), 15, "replication after restart")
        for node in cluster.nodes:
            assert "BEGIN PRIVATE KEY" not in "".join(
                p.read_text(errors="replace") for p in node.data_dir.rglob("*") if p.is_file()
            )
