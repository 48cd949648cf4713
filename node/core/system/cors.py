"""``sys/config/cors``: which browser origins may call the API.

The setting is stored in the barrier (so every node of a cluster answers with
the same headers); the HTTP edge (``api/cors.py``) reads it only for requests
that carry an ``Origin`` header, as the reference does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from node.framework import Field, FieldData, FieldType, Path
from node.logical.request import Operation, Request
from node.logical.response import Response
from sdk import jsoncodec
from sdk.errors import InvalidRequestError

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = [
    "ALLOWED_METHODS",
    "CORS_KEY",
    "STANDARD_HEADERS",
    "CorsConfig",
    "CorsPaths",
    "load_cors",
]

CORS_KEY = "sys/config/cors"
#: Request headers a browser may always send when CORS is on (the reference's
#: list, with the ``X-Service-*`` spellings next to the ``X-Vault-*`` ones).
STANDARD_HEADERS = (
    "Content-Type",
    "X-Requested-With",
    "X-Vault-AWS-IAM-Server-ID",
    "X-Vault-MFA",
    "X-Vault-No-Request-Forwarding",
    "X-Vault-Wrap-Format",
    "X-Vault-Wrap-TTL",
    "X-Vault-Policy-Override",
    "Authorization",
    "X-Vault-Token",
    "X-Vault-Namespace",
    "X-Service-Token",
    "X-Service-Namespace",
    "X-Service-Wrap-TTL",
    "X-Service-Wrap-Format",
    "X-Service-No-Request-Forwarding",
)
#: Methods a preflight may ask for.
ALLOWED_METHODS = ("DELETE", "GET", "OPTIONS", "POST", "PUT", "LIST")


@dataclass(frozen=True, slots=True)
class CorsConfig:
    enabled: bool = False
    allowed_origins: list[str] = field(default_factory=list)
    allowed_headers: list[str] = field(default_factory=list)

    def allows_origin(self, origin: str) -> bool:
        return self.allowed_origins == ["*"] or origin in self.allowed_origins

    def public(self) -> dict[str, Any]:
        if not self.enabled:
            return {"enabled": False}
        return {
            "enabled": True,
            "allowed_origins": self.allowed_origins,
            "allowed_headers": self.allowed_headers,
        }


async def load_cors(core: Core) -> CorsConfig:
    """The stored setting; disabled while sealed (nothing can be read then)."""
    if core.sealed:
        return CorsConfig()
    stored = await core.barrier.get(CORS_KEY)
    if stored is None:
        return CorsConfig()
    raw = jsoncodec.loads(stored.value)
    return CorsConfig(
        bool(raw["enabled"]), list(raw["allowed_origins"]), list(raw["allowed_headers"])
    )


def _headers(given: list[str]) -> list[str]:
    chosen = list(STANDARD_HEADERS)
    known = {h.lower() for h in chosen}
    for header in given:
        name = header.strip()
        if not name:
            continue
        if any(c.isspace() or not c.isprintable() for c in name) or ":" in name:
            raise InvalidRequestError(f"invalid header name in allowed_headers: {name!r}")
        if name.lower() not in known:
            known.add(name.lower())
            chosen.append(name)
    return chosen


_FIELDS = {
    "allowed_origins": Field(
        FieldType.COMMA_STRING_LIST, "Origins allowed to make requests, or '*'."
    ),
    "allowed_headers": Field(
        FieldType.COMMA_STRING_LIST, "Request headers allowed besides the standard."
    ),
    "enabled": Field(FieldType.BOOL, "Read only: whether CORS is on."),
}


class CorsPaths:
    def __init__(self, core: Core) -> None:
        self._core = core

    def paths(self) -> list[Path]:
        return [
            Path(
                "config/cors",
                {
                    Operation.READ: self._read,
                    Operation.UPDATE: self._write,
                    Operation.DELETE: self._delete,
                },
                _FIELDS,
                "Cross-origin resource sharing for browser clients.",
                sudo=True,
            )
        ]

    async def _read(self, request: Request, data: FieldData) -> Response:
        return Response(data=(await load_cors(self._core)).public(), top_level_data=True)

    async def _write(self, request: Request, data: FieldData) -> None:
        origins = [o.strip() for o in data.get("allowed_origins") or [] if o.strip()]
        if not origins:
            raise InvalidRequestError("at least one origin or the wildcard must be provided")
        if "*" in origins and len(origins) > 1:
            raise InvalidRequestError(
                "to allow all origins the '*' must be the only value for allowed_origins"
            )
        for origin in origins:
            if origin != "*" and any(c.isspace() or not c.isprintable() for c in origin):
                raise InvalidRequestError(f"invalid origin in allowed_origins: {origin!r}")
        config = CorsConfig(True, origins, _headers(data.get("allowed_headers") or []))
        await self._core.barrier.put(
            CORS_KEY,
            jsoncodec.dumps(
                {
                    "enabled": config.enabled,
                    "allowed_origins": config.allowed_origins,
                    "allowed_headers": config.allowed_headers,
                }
            ),
        )

    async def _delete(self, request: Request, data: FieldData) -> None:
        await self._core.barrier.delete(CORS_KEY)
