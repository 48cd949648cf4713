"""A small blocking JSON client for Coffer's Vault-style HTTP API.

Standard library only (``urllib``, ``ssl``, ``json``): the core package never
imports aiohttp, and a CLI run makes a request or two at a time anyway.
Redirects (a standby pointing at the active node) are followed by hand so the
method, body and headers are re-sent, as Vault's client does; ``urllib`` would
refuse to re-send a PUT.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any
from urllib.parse import urljoin, urlsplit

__all__ = ["ApiClient", "ApiError", "Json", "TransportError"]

Json = dict[str, Any]

_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_MAX_REDIRECTS = 10
_DEFAULT_TIMEOUT = 60.0  # seconds, Vault's default client timeout
# OpenSSL's complaints when the server answered a TLS hello in plain HTTP.
_PLAINTEXT_REASONS = frozenset({"WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "HTTP_REQUEST"})


class ApiError(Exception):
    """The server answered with status >= 400; ``errors`` is its error list."""

    def __init__(
        self,
        status: int,
        errors: list[str],
        *,
        method: str = "",
        url: str = "",
        raw: str = "",
        body: Json | None = None,
    ) -> None:
        super().__init__(status, errors)
        self.status = status
        self.errors = errors
        self.method = method
        self.url = url
        self.raw = raw
        #: The decoded error body, when it was a JSON object: a 404 from KV v2
        #: for a deleted version still carries the version's metadata.
        self.body = body

    def __str__(self) -> str:
        lines = ["Error making API request.", ""]
        if self.url:
            lines.append(f"URL: {self.method} {self.url}")
        if self.errors or not self.raw:
            lines.append(f"Code: {self.status}. Errors:")
            lines.append("")
            lines.extend(f"* {message}" for message in self.errors)
        else:
            lines.append(f"Code: {self.status}. Raw Message:")
            lines.append("")
            lines.append(self.raw)
        return "\n".join(lines).rstrip()


class TransportError(Exception):
    """No usable HTTP response: connection, TLS, timeout or a garbled body."""


class _KeepRedirects(urllib.request.HTTPRedirectHandler):
    """Hand 3xx responses back to :meth:`ApiClient.request` instead of following."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> None:
        return None


class ApiClient:
    """Sends JSON requests to one server; holds the token and TLS settings.

    ``wrap_ttl`` (``-wrap-ttl``) asks the server to wrap responses: every
    request carries ``X-Service-Wrap-TTL`` unless it passes ``wrap=False``
    (internal look-ups such as the KV version check, as in Vault).
    """

    def __init__(
        self,
        address: str,
        *,
        token: str | None = None,
        namespace: str | None = None,
        ca_cert: str | None = None,
        ca_path: str | None = None,
        skip_verify: bool = False,
        timeout: float = _DEFAULT_TIMEOUT,
        wrap_ttl: str | None = None,
    ) -> None:
        self.address = address.rstrip("/")
        self._token = token
        self._namespace = namespace
        self.wrap_ttl = wrap_ttl
        self._timeout = timeout
        self._tls = (ca_cert, ca_path, skip_verify)
        # Loading the CA bundle costs ~0.1 s, so a plain-http client never
        # does; an https one does it here, so a bad -ca-cert fails at once.
        self._plain_opener = urllib.request.build_opener(_KeepRedirects())
        self._tls_opener: urllib.request.OpenerDirector | None = None
        if urlsplit(self.address).scheme == "https":
            self._tls_opener = self._build_tls_opener()

    def __repr__(self) -> str:
        return f"ApiClient({self.address!r})"

    def _build_tls_opener(self) -> urllib.request.OpenerDirector:
        context = self._tls_context(*self._tls)
        return urllib.request.build_opener(
            urllib.request.HTTPSHandler(context=context), _KeepRedirects()
        )

    def _opener_for(self, url: str) -> urllib.request.OpenerDirector:
        """The TLS opener for https URLs (built on first use, e.g. after a redirect)."""
        if urlsplit(url).scheme != "https":
            return self._plain_opener
        if self._tls_opener is None:
            self._tls_opener = self._build_tls_opener()
        return self._tls_opener

    @staticmethod
    def _tls_context(ca_cert: str | None, ca_path: str | None, skip_verify: bool) -> ssl.SSLContext:
        try:
            context = ssl.create_default_context(cafile=ca_cert, capath=ca_path)
        except (OSError, ssl.SSLError) as exc:
            where = ca_cert or ca_path
            raise TransportError(f"could not load CA certificates from {where}: {exc}") from None
        if skip_verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context

    def url(self, path: str) -> str:
        return f"{self.address}/{path.lstrip('/')}"

    def request(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        *,
        wrap: bool = True,
        content_type: str = "application/json",
        token: str | None = None,
    ) -> tuple[int, Json | None]:
        """Send one request; the decoded JSON object, or ``None`` for an empty body.

        ``token`` replaces the configured token for this request only (``login``
        checks a new token with it). Raises :class:`ApiError` for status >= 400
        and :class:`TransportError` when no usable response arrived.
        """
        method = method.upper()
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json", "X-Service-Request": "true"}
        if data is not None:
            headers["Content-Type"] = content_type
        use_token = self._token if token is None else token
        if use_token:
            headers["X-Service-Token"] = use_token
        if self._namespace:
            headers["X-Service-Namespace"] = self._namespace
        if wrap and self.wrap_ttl:
            headers["X-Service-Wrap-TTL"] = self.wrap_ttl
        url = self.url(path)
        secrets = tuple(t for t in (self._token, token) if t)
        for _ in range(_MAX_REDIRECTS + 1):
            status, location, raw = self._send(method, url, headers, data)
            if status in _REDIRECT_STATUSES and location:
                url = self._redirect_target(method, url, location)
                continue
            return status, self._decode(method, url, status, raw, secrets)
        raise TransportError(f"{method} {url}: too many redirects")

    def _send(
        self, method: str, url: str, headers: Mapping[str, str], data: bytes | None
    ) -> tuple[int, str | None, bytes]:
        # The address was checked to be http(s) when settings were resolved.
        req = urllib.request.Request(url, data=data, headers=dict(headers), method=method)  # noqa: S310
        try:
            with self._opener_for(url).open(req, timeout=self._timeout) as resp:
                return resp.status, resp.headers.get("Location"), resp.read()
        except urllib.error.HTTPError as exc:
            try:
                raw = exc.read()
            except (OSError, http.client.HTTPException):
                raw = b""
            finally:
                exc.close()
            return exc.code, exc.headers.get("Location"), raw
        except urllib.error.URLError as exc:
            raise TransportError(f"{method} {url}: {self._describe(url, exc.reason)}") from None
        except (OSError, http.client.HTTPException, ValueError) as exc:
            raise TransportError(f"{method} {url}: {self._describe(url, exc)}") from None

    @staticmethod
    def _redirect_target(method: str, url: str, location: str) -> str:
        target = urljoin(url, location)
        if urlsplit(url).scheme == "https" and urlsplit(target).scheme != "https":
            raise TransportError(f"{method} {url}: refusing to follow a redirect off HTTPS")
        return target

    @staticmethod
    def _describe(url: str, reason: object) -> str:
        """A short, token-free explanation of why no response arrived."""
        if isinstance(reason, ssl.SSLCertVerificationError):
            return (
                f"TLS certificate verification failed ({reason.verify_message}); "
                "point -ca-cert or COFFER_CACERT at the server's CA bundle"
            )
        if isinstance(reason, ssl.SSLError) and reason.reason in _PLAINTEXT_REASONS:
            return "server gave HTTP response to HTTPS client (use an http:// address?)"
        if isinstance(reason, ConnectionRefusedError):
            return "connection refused"
        if isinstance(reason, socket.gaierror):
            return f"cannot resolve host: {reason.strerror}"
        if isinstance(reason, TimeoutError):
            return "timed out"
        if isinstance(reason, http.client.RemoteDisconnected | ConnectionResetError):
            hint = " (is it serving HTTPS? use an https:// address)"
            return "server closed the connection" + (hint if url.startswith("http:") else "")
        if isinstance(reason, OSError) and reason.strerror:
            return reason.strerror
        return str(reason) or type(reason).__name__

    def _decode(
        self, method: str, url: str, status: int, raw: bytes, secrets: tuple[str, ...] = ()
    ) -> Json | None:
        text = raw.decode("utf-8", errors="replace").strip()
        try:
            parsed: Any = json.loads(text) if text else None
        except json.JSONDecodeError:
            parsed = None
            if status < 400:
                raise TransportError(f"{method} {url}: response is not JSON") from None
        if status >= 400:
            errors: list[str] = []
            if isinstance(parsed, dict) and isinstance(parsed.get("errors"), list):
                errors = [self._scrub(str(e), secrets) for e in parsed["errors"]]
            raw_text = "" if parsed is not None else self._scrub(text, secrets)
            raise ApiError(
                status,
                errors,
                method=method,
                url=url,
                raw=raw_text,
                body=parsed if isinstance(parsed, dict) else None,
            )
        if parsed is None:
            return None
        if not isinstance(parsed, dict):
            raise TransportError(f"{method} {url}: response is not a JSON object")
        return parsed

    def _scrub(self, message: str, secrets: tuple[str, ...] = ()) -> str:
        """Remove our own token(s) should the server ever echo one into an error."""
        for secret in secrets or ((self._token,) if self._token else ()):
            message = message.replace(secret, "<redacted>")
        return message
