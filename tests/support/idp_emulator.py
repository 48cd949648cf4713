"""A wire-compatible stand-in for an Okta-style identity provider.

The real provider cannot run here, so tests run this aiohttp app on
127.0.0.1 (random port) and point ``base_url`` at it. It implements the three
calls Coffer makes — ``POST /api/v1/authn``, ``POST
/api/v1/authn/factors/{id}/verify`` and ``GET /api/v1/users/{id}/groups``
(paged with ``Link: <...>; rel="next"``, guarded by ``Authorization: SSWS``)
— with Okta-shaped bodies and error bodies, records every request, and can
be told to misbehave (HTTP 500, non-JSON garbage, hang, drop the connection).
"""

from __future__ import annotations

import asyncio
import enum
import hashlib
import hmac
import json
import secrets
import struct
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from multidict import CIMultiDict

__all__ = ["EmulatedUser", "Fault", "IdpEmulator", "Seen", "totp_code"]

TOTP = "token:software:totp"


def totp_code(secret: bytes, at: float | None = None, *, digits: int = 6, step: int = 30) -> str:
    """The RFC 6238 (HMAC-SHA1) passcode for ``secret`` at time ``at``."""
    counter = int((time.time() if at is None else at) // step)
    digest = hmac.new(secret, struct.pack(">Q", counter), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    value = struct.unpack(">I", digest[offset : offset + 4])[0] & 0x7FFFFFFF
    return str(value % 10**digits).zfill(digits)


class Fault(enum.StrEnum):
    ERROR_500 = "500"
    GARBAGE = "garbage"
    HANG = "hang"
    CLOSE = "close"


@dataclass
class EmulatedUser:
    """A provider account. ``status`` is ACTIVE, LOCKED_OUT, PASSWORD_EXPIRED,
    PASSWORD_WARN or MFA_ENROLL. A TOTP factor exists when ``totp_passcode``
    (a fixed code) or ``totp_secret`` (RFC 6238) is set."""

    login: str
    password: str
    status: str = "ACTIVE"
    groups: list[str] = field(default_factory=list)
    totp_passcode: str | None = None
    totp_secret: bytes | None = None
    id: str = field(default_factory=lambda: "00u" + secrets.token_hex(8))

    @property
    def factor_id(self) -> str:
        return "uft" + self.id[3:]

    @property
    def has_totp(self) -> bool:
        return self.totp_passcode is not None or self.totp_secret is not None

    def passcode_ok(self, passcode: str) -> bool:
        if self.totp_passcode is not None and hmac.compare_digest(passcode, self.totp_passcode):
            return True
        if self.totp_secret is not None:
            now = time.time()
            codes = [totp_code(self.totp_secret, now + drift) for drift in (-30, 0, 30)]
            return any(hmac.compare_digest(passcode, code) for code in codes)
        return False

    def shape(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "passwordChanged": "2024-01-01T00:00:00.000Z",
            "profile": {"login": self.login, "firstName": "Test", "lastName": "User"},
        }


@dataclass(frozen=True)
class Seen:
    """One request the emulator received; ``endpoint`` is authn, verify, groups or other."""

    endpoint: str
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    json: Any


def _error(status: int, code: str, summary: str, *causes: str) -> web.Response:
    body = {
        "errorCode": code,
        "errorSummary": summary,
        "errorLink": code,
        "errorId": "oae" + secrets.token_hex(8),
        "errorCauses": [{"errorSummary": c} for c in causes],
    }
    return web.json_response(body, status=status)


def _endpoint(path: str) -> str:
    parts = path.strip("/").split("/")
    if parts == ["api", "v1", "authn"]:
        return "authn"
    if len(parts) == 6 and parts[:4] == ["api", "v1", "authn", "factors"] and parts[5] == "verify":
        return "verify"
    if len(parts) == 5 and parts[:3] == ["api", "v1", "users"] and parts[4] == "groups":
        return "groups"
    return "other"


class IdpEmulator:
    def __init__(self, *, api_token: str = "emulator-api-token", page_size: int = 200) -> None:
        self.api_token = api_token
        self.page_size = page_size
        self.users: dict[str, EmulatedUser] = {}
        self.requests: list[Seen] = []
        #: endpoint name (or "*") -> the fault it answers with.
        self.faults: dict[str, Fault] = {}
        #: Overrides the origin written into next-page links (to test cross-origin links).
        self.next_link_origin: str | None = None
        self._states: dict[str, str] = {}
        self._release = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.origin = ""

    # -- set-up ---------------------------------------------------------------

    def add_user(self, login: str, password: str, **options: Any) -> EmulatedUser:
        user = EmulatedUser(login, password, **options)
        self.users[login] = user
        return user

    def fail(self, fault: Fault, endpoint: str = "*") -> None:
        self.faults[endpoint] = fault

    def seen(self, endpoint: str) -> list[Seen]:
        return [r for r in self.requests if r.endpoint == endpoint]

    async def start(self) -> str:
        app = web.Application(middlewares=[self._record])
        app.router.add_post("/api/v1/authn", self._authn)
        app.router.add_post("/api/v1/authn/factors/{factor_id}/verify", self._verify)
        app.router.add_get("/api/v1/users/{user_id}/groups", self._groups)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.origin = f"http://{host}:{port}"
        return self.origin

    async def close(self) -> None:
        self._release.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # -- plumbing -------------------------------------------------------------

    @web.middleware
    async def _record(self, request: web.Request, handler: Any) -> web.StreamResponse:
        endpoint = _endpoint(request.path)
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        self.requests.append(
            Seen(
                endpoint,
                request.method,
                request.path,
                dict(request.query),
                {k.lower(): v for k, v in request.headers.items()},
                body,
            )
        )
        fault = self.faults.get(endpoint) or self.faults.get("*")
        if fault is None:
            response: web.StreamResponse = await handler(request)
            return response
        return await self._misbehave(request, fault)

    async def _misbehave(self, request: web.Request, fault: Fault) -> web.StreamResponse:
        if fault is Fault.ERROR_500:
            return _error(500, "E0000009", "Internal Server Error")
        if fault is Fault.GARBAGE:
            return web.Response(
                text="<html><body>Service Unavailable</body></html>", content_type="text/html"
            )
        if fault is Fault.HANG:
            await self._release.wait()
            return web.Response(status=503)
        assert request.transport is not None
        request.transport.close()  # Fault.CLOSE: drop the connection, answer nothing
        raise asyncio.CancelledError

    # -- the provider's API ---------------------------------------------------

    def _transaction(self, user: EmulatedUser, status: str) -> dict[str, Any]:
        state = "00" + secrets.token_urlsafe(24)
        self._states[state] = user.login
        return {
            "stateToken": state,
            "expiresAt": "2099-01-01T00:00:00.000Z",
            "status": status,
            "_embedded": {"user": user.shape()},
        }

    async def _authn(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "E0000003", "The request body was not well-formed.")
        if not isinstance(body, dict) or not body.get("username") or "password" not in body:
            return _error(400, "E0000001", "Api validation failed: authRequest")
        user = self.users.get(body["username"])
        if user is not None and user.status == "LOCKED_OUT":
            return web.json_response({"status": "LOCKED_OUT", "expiresAt": None})
        if user is None or not hmac.compare_digest(str(body["password"]), user.password):
            return _error(401, "E0000004", "Authentication failed")
        if user.status == "MFA_ENROLL":
            answer = self._transaction(user, "MFA_ENROLL")
            answer["_embedded"]["factors"] = [
                {"factorType": TOTP, "provider": "OKTA", "status": "NOT_SETUP"}
            ]
            return web.json_response(answer)
        if user.has_totp:
            # MFA comes before the provider reveals an expired password.
            answer = self._transaction(user, "MFA_REQUIRED")
            answer["_embedded"]["factors"] = [
                {
                    "id": "emf" + user.id[3:],
                    "factorType": "email",
                    "provider": "OKTA",
                    "profile": {"email": "u***@example.com"},
                },
                {
                    "id": user.factor_id,
                    "factorType": TOTP,
                    "provider": "OKTA",
                    "profile": {"credentialId": user.login},
                },
            ]
            return web.json_response(answer)
        return web.json_response(self._finished(user))

    def _finished(self, user: EmulatedUser) -> dict[str, Any]:
        if user.status in ("PASSWORD_EXPIRED", "PASSWORD_WARN"):
            return self._transaction(user, user.status)
        return {
            "expiresAt": "2099-01-01T00:00:00.000Z",
            "status": "SUCCESS",
            "sessionToken": secrets.token_urlsafe(24),
            "_embedded": {"user": user.shape()},
        }

    async def _verify(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "E0000003", "The request body was not well-formed.")
        login = (
            self._states.get(str(body.get("stateToken", ""))) if isinstance(body, dict) else None
        )
        user = self.users.get(login or "")
        if user is None:
            return _error(403, "E0000011", "Invalid token provided")
        factor_id = request.match_info["factor_id"]
        if factor_id != user.factor_id:
            return _error(404, "E0000007", f"Not found: Resource not found: {factor_id} (Factor)")
        if not user.passcode_ok(str(body.get("passCode", ""))):
            return _error(
                403,
                "E0000068",
                "Invalid Passcode/Answer",
                "Your passcode doesn't match our records. Please try again.",
            )
        self._states.pop(str(body["stateToken"]), None)
        return web.json_response(self._finished(user))

    async def _groups(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"SSWS {self.api_token}":
            return _error(401, "E0000011", "Invalid token provided")
        user_id = request.match_info["user_id"]
        user = next((u for u in self.users.values() if u.id == user_id), None)
        if user is None:
            return _error(404, "E0000007", f"Not found: Resource not found: {user_id} (User)")
        try:
            limit = min(int(request.query.get("limit", self.page_size)), self.page_size)
            start = int(request.query.get("after", "0"))
        except ValueError:
            return _error(400, "E0000001", "Api validation failed: limit")
        page = user.groups[start : start + limit]
        origin = self.next_link_origin or f"{request.scheme}://{request.host}"
        base = f"{origin}{request.path}"
        headers: CIMultiDict[str] = CIMultiDict()
        headers.add("Link", f'<{base}?limit={limit}>; rel="self"')
        if start + limit < len(user.groups):
            headers.add("Link", f'<{base}?after={start + limit}&limit={limit}>; rel="next"')
        groups = [
            {
                "id": f"00g{start + i:017d}",
                "type": "OKTA_GROUP",
                "profile": {"name": name, "description": f"{name} group"},
            }
            for i, name in enumerate(page)
        ]
        return web.json_response(groups, headers=headers)
