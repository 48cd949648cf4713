"""The listener's TLS context, reloadable in place on SIGHUP.

Loading a new chain into the *same* ``SSLContext`` makes every later
handshake use it, so the listening socket is never closed and connections
already established keep going.
"""

from __future__ import annotations

import logging
import ssl

__all__ = ["CertificateReloader", "client_context", "valid_ca_pem"]

log = logging.getLogger("coffer.tls")

_MIN_VERSIONS = {"tls12": ssl.TLSVersion.TLSv1_2, "tls13": ssl.TLSVersion.TLSv1_3}


def client_context(ca_file: str | None, extra_ca: list[str]) -> ssl.SSLContext:
    """A client context trusting the system roots (or ``ca_file``) and ``extra_ca``."""
    context = ssl.create_default_context(cafile=ca_file)
    for pem in extra_ca:
        context.load_verify_locations(cadata=pem)
    return context


def valid_ca_pem(pem: str) -> bool:
    """Whether ``pem`` holds at least one certificate ``ssl`` can trust."""
    try:
        ssl.create_default_context().load_verify_locations(cadata=pem)
    except (ssl.SSLError, ValueError, TypeError):
        return False
    return True


class CertificateReloader:
    def __init__(self, cert_file: str, key_file: str, min_version: str = "tls12") -> None:
        self.cert_file = cert_file
        self.key_file = key_file
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.minimum_version = _MIN_VERSIONS.get(min_version, ssl.TLSVersion.TLSv1_2)
        self.context.load_cert_chain(cert_file, key_file)

    def reload(self) -> bool:
        """Load the files again; on failure keep serving the previous certificate."""
        try:
            # Validate the pair on a scratch context first: load_cert_chain
            # installs the certificate before it reads the key, so a bad key
            # loaded straight into the live context would break every handshake.
            ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(
                self.cert_file, self.key_file
            )
            self.context.load_cert_chain(self.cert_file, self.key_file)
        except (OSError, ssl.SSLError) as exc:
            log.error(
                "certificate reload failed; keeping the previous certificate",
                extra={"event": "tls.reload_failed", "error_type": type(exc).__name__},
            )
            return False
        log.info(
            "certificate reloaded", extra={"event": "tls.reloaded", "cert_file": self.cert_file}
        )
        return True
