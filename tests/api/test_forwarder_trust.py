"""The forwarder's TLS trust (issue 14, item 3), against a real TLS listener on loopback.

A join's ``leader_ca_cert`` serves that join's calls only (``pinned``); it
joins the forwarder's trust once the join succeeded (``trust``), and a
certificate that does not load is ignored there instead of breaking every
later forwarded request.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from api.forwarding import Forwarder
from node.outbound import OutboundError

GARBAGE = "-----BEGIN CERTIFICATE-----\nZ2FyYmFnZQ==\n-----END CERTIFICATE-----\n"


def _self_signed(tmp_path: Path) -> tuple[ssl.SSLContext, str]:
    """A server context for 127.0.0.1 and the PEM of its (self-signed) certificate."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "leader")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    pem = cert.public_bytes(serialization.Encoding.PEM).decode()
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_text(pem)
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    return context, pem


@pytest.fixture
async def leader(tmp_path: Path) -> AsyncIterator[tuple[str, str]]:
    """A TLS listener answering 200 on ``/``; yields its URL and its CA."""

    async def ok(_: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_get("/", ok)
    context, pem = _self_signed(tmp_path)
    server = TestServer(app, host="127.0.0.1", scheme="https")
    await server.start_server(ssl=context)
    try:
        yield f"https://127.0.0.1:{server.port}/", pem
    finally:
        await server.close()


async def test_a_join_ca_is_trusted_for_its_calls_then_only_when_told(
    leader: tuple[str, str],
) -> None:
    url, pem = leader
    forwarder = Forwarder()
    try:
        with pytest.raises(OutboundError):
            await forwarder.request("GET", url)
        pinned = forwarder.pinned(pem)
        try:
            assert (await pinned.request("GET", url)).status == 200
        finally:
            await pinned.close()
        with pytest.raises(OutboundError):  # the join's CA did not leak into forwarding
            await forwarder.request("GET", url)
        forwarder.trust(pem)
        assert (await forwarder.request("GET", url)).status == 200
    finally:
        await forwarder.close()


async def test_a_certificate_that_does_not_load_never_breaks_forwarding(
    leader: tuple[str, str],
) -> None:
    url, pem = leader
    forwarder = Forwarder()
    try:
        forwarder.trust(pem)
        forwarder.trust(GARBAGE)
        forwarder.trust("")
        assert (await forwarder.request("GET", url)).status == 200
    finally:
        await forwarder.close()
