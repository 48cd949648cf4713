"""The TLS listener: trust, and in-place certificate reload on SIGHUP."""

from __future__ import annotations

import hashlib
import http.client
import signal
import socket
import ssl
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import trustme

if TYPE_CHECKING:
    from harness.server import CofferFactory, ServerProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def write_pair(cert: trustme.LeafCert, cert_file: Path, key_file: Path) -> None:
    cert_file.write_bytes(b"".join(blob.bytes() for blob in cert.cert_chain_pems))
    key_file.write_bytes(cert.private_key_pem.bytes())


def trusting(*cas: trustme.CA) -> ssl.SSLContext:
    """A verifying client context that trusts exactly ``cas`` (no system roots)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    for ca in cas:
        ca.configure_trust(context)
    return context


def der(cert: trustme.LeafCert) -> bytes:
    return ssl.PEM_cert_to_DER_cert(cert.cert_chain_pems[0].bytes().decode())


def fingerprint(blob: bytes) -> str:
    return hashlib.sha256(blob).hexdigest()[:16]


def presented(server: ServerProcess) -> bytes:
    """The DER certificate a fresh handshake gets, without verifying it."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with (
        socket.create_connection(("127.0.0.1", server.port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        blob = tls.getpeercert(binary_form=True)
    assert blob is not None
    return blob


def assert_verification_fails(server: ServerProcess, context: ssl.SSLContext) -> None:
    conn = server.connection(context=context)
    try:
        with pytest.raises(ssl.SSLCertVerificationError):
            conn.request("GET", "/v1/sys/health")
    finally:
        conn.close()


def health_over(server: ServerProcess, context: ssl.SSLContext) -> int:
    conn = server.connection(context=context)
    try:
        conn.request("GET", "/v1/sys/health")
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


@pytest.fixture
def pki(tmp_path: Path) -> tuple[trustme.CA, trustme.LeafCert, Path, Path]:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    cert_file, key_file = tmp_path / "tls" / "server.crt", tmp_path / "tls" / "server.key"
    cert_file.parent.mkdir()
    write_pair(cert, cert_file, key_file)
    return ca, cert, cert_file, key_file


def test_tls_listener_serves_and_verifies(coffer: CofferFactory, pki) -> None:
    ca, cert, cert_file, key_file = pki
    server = coffer.file_server(tls=(cert_file, key_file), tls_context=trusting(ca)).start()
    assert server.base_url.startswith("https://")
    assert presented(server) == der(cert)

    init = server.init(3, 2)
    root = init["root_token"]
    server.unseal(init["keys"][:2])
    server.kv_put(root, "tls/secret", {"over": "tls"})
    assert server.kv_get(root, "tls/secret") == {"over": "tls"}

    # The hostname is checked too: the certificate names 127.0.0.1 and localhost only.
    with (
        socket.create_connection(("127.0.0.1", server.port), timeout=5) as raw,
        pytest.raises(ssl.SSLCertVerificationError),
    ):
        trusting(ca).wrap_socket(raw, server_hostname="coffer.example").close()

    # A client that does not trust the CA refuses the server, system roots or none.
    assert_verification_fails(server, ssl.create_default_context())
    assert_verification_fails(server, trusting(trustme.CA()))

    # Plain HTTP on the TLS port gets no HTTP answer.
    plain = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        with pytest.raises((OSError, http.client.HTTPException)):
            plain.request("GET", "/v1/sys/health")
            plain.getresponse().read()
    finally:
        plain.close()
    assert server.health() == 200
    assert server.stop() == 0


def test_sighup_reloads_certificate_in_place(coffer: CofferFactory, pki) -> None:
    ca1, cert1, cert_file, key_file = pki
    server = coffer.file_server(tls=(cert_file, key_file), tls_context=trusting(ca1)).start()
    pid = server.pid
    init = server.init(1, 1)
    root = init["root_token"]
    server.unseal(init["keys"])
    server.kv_put(root, "reload/x", {"v": 1})
    assert presented(server) == der(cert1)

    # A keep-alive connection opened before the reload.
    kept = server.connection(context=trusting(ca1))
    try:
        kept.request("GET", "/v1/sys/health")
        first = kept.getresponse()
        first.read()
        assert first.status == 200 and not first.will_close
        sock_before = kept.sock

        ca2 = trustme.CA()
        cert2 = ca2.issue_cert("127.0.0.1", "localhost")
        write_pair(cert2, cert_file, key_file)
        server.send_signal(signal.SIGHUP)
        server.wait_for_event("tls.reloaded", 1)

        # Same process, still listening, now presenting the new certificate.
        assert server.running and server.pid == pid
        got = presented(server)
        assert got == der(cert2), (fingerprint(got), fingerprint(der(cert2)))
        assert health_over(server, trusting(ca2)) == 200
        assert_verification_fails(server, trusting(ca1))

        # The old connection carries on, on the same socket, with the old session.
        kept.request("GET", "/v1/secret/data/reload/x", headers={"X-Service-Token": root})
        response = kept.getresponse()
        body = response.read()
        assert response.status == 200, body
        assert kept.sock is sock_before
    finally:
        kept.close()

    # Same CA, new serial: the third certificate replaces the second.
    cert3 = ca1.issue_cert("127.0.0.1", "localhost")
    assert der(cert3) != der(cert1)
    write_pair(cert3, cert_file, key_file)
    server.send_signal(signal.SIGHUP)
    server.wait_for_event("tls.reloaded", 2)
    assert presented(server) == der(cert3)
    assert health_over(server, trusting(ca1)) == 200
    assert server.pid == pid
    assert server.count_events("server.listening") == 1  # never restarted
    assert server.stop() == 0


def _garbage_cert(cert_file: Path, key_file: Path, other: trustme.LeafCert) -> None:
    cert_file.write_bytes(b"-----BEGIN CERTIFICATE-----\nnot a certificate\n")


def _missing_cert(cert_file: Path, key_file: Path, other: trustme.LeafCert) -> None:
    cert_file.unlink()


def _empty_key(cert_file: Path, key_file: Path, other: trustme.LeafCert) -> None:
    key_file.write_bytes(b"")


def _truncated_cert(cert_file: Path, key_file: Path, other: trustme.LeafCert) -> None:
    cert_file.write_bytes(cert_file.read_bytes()[:200])


def _new_cert_old_key(cert_file: Path, key_file: Path, other: trustme.LeafCert) -> None:
    """Half-way through a rotation: the new certificate, the old key."""
    cert_file.write_bytes(b"".join(blob.bytes() for blob in other.cert_chain_pems))


def _new_cert_missing_key(cert_file: Path, key_file: Path, other: trustme.LeafCert) -> None:
    cert_file.write_bytes(b"".join(blob.bytes() for blob in other.cert_chain_pems))
    key_file.unlink()


Breakage = Callable[[Path, Path, trustme.LeafCert], None]


@pytest.mark.parametrize(
    "break_files",
    [
        _garbage_cert,
        _missing_cert,
        _empty_key,
        _truncated_cert,
        _new_cert_old_key,
        _new_cert_missing_key,
    ],
    ids=lambda f: f.__name__.strip("_"),
)
def test_sighup_with_broken_files_keeps_old_certificate(
    coffer: CofferFactory, pki, break_files: Breakage
) -> None:
    ca1, cert1, cert_file, key_file = pki
    server = coffer.file_server(tls=(cert_file, key_file), tls_context=trusting(ca1)).start()
    pid = server.pid
    ca2 = trustme.CA()
    cert2 = ca2.issue_cert("127.0.0.1", "localhost")

    break_files(cert_file, key_file, cert2)
    server.send_signal(signal.SIGHUP)
    server.wait_for_event("tls.reload_failed", 1)
    failed = [e for e in server.log_events() if e.get("event") == "tls.reload_failed"]
    assert failed[0]["level"] == "error"
    assert server.count_events("tls.reloaded") == 0

    # Still the same process, still serving the previous certificate.
    assert server.running and server.pid == pid
    got = presented(server)
    assert got == der(cert1), (fingerprint(got), fingerprint(der(cert1)))
    assert health_over(server, trusting(ca1)) == 501
    assert "Traceback" not in server.stderr_text()

    # Once the files are fixed, the next SIGHUP picks them up.
    write_pair(cert2, cert_file, key_file)
    server.send_signal(signal.SIGHUP)
    server.wait_for_event("tls.reloaded", 1)
    assert presented(server) == der(cert2)
    assert health_over(server, trusting(ca2)) == 501
    assert server.stop() == 0
