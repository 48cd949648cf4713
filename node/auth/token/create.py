"""Token creation rules: who may create what, with which policies and lifetime."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from node.errors import InvalidRequestError, PermissionDeniedError
from node.framework import FieldData
from node.logical.response import Auth
from node.tokens.entry import TokenEntry
from node.tokens.store import TokenStore
from node.tokens.ttl import initial_lifetime

__all__ = ["CreateContext", "create_token"]

_RESERVED_ID_PREFIXES = ("hvs.", "hvb.", "hvr.", "s.", "b.", "r.")


@dataclass(frozen=True, slots=True)
class CreateContext:
    store: TokenStore
    parent: TokenEntry
    caller_has_sudo: bool
    default_ttl: int
    max_ttl: int
    orphan_path: bool = False
    role_name: str = ""
    role: dict[str, Any] | None = None


def _sanitise(policies: list[str]) -> list[str]:
    return sorted({p.strip().lower() for p in policies if p.strip()})


def _policies(ctx: CreateContext, data: FieldData) -> list[str]:
    requested = _sanitise(data.get("policies") or [])
    role = ctx.role
    if role is not None:
        allowed = _sanitise(role.get("allowed_policies", []))
        disallowed = set(_sanitise(role.get("disallowed_policies", [])))
        if not requested:
            requested = (
                [p for p in allowed if p not in disallowed]
                if allowed
                else [p for p in ctx.parent.policies if p not in disallowed and p != "root"]
            )
        if allowed and not set(requested) - {"default"} <= set(allowed):
            raise InvalidRequestError(
                "token policies must be a subset of the role's allowed_policies"
            )
        if disallowed & set(requested):
            raise InvalidRequestError(
                f"token policies contain disallowed policies: {sorted(disallowed & set(requested))}"
            )
    elif not requested:
        requested = list(ctx.parent.policies)
    elif not (ctx.parent.is_root or ctx.caller_has_sudo) and not (
        set(requested) - {"default"} <= set(ctx.parent.policies)
    ):
        raise InvalidRequestError("child policies must be subset of parent")
    if "root" in requested and not ctx.parent.is_root:
        raise PermissionDeniedError("root tokens may only be created by a root token")
    no_default = data.get("no_default_policy") or bool(role and role.get("token_no_default_policy"))
    if no_default:
        requested = [p for p in requested if p != "default"]
    elif "root" not in requested and "default" not in requested:
        requested.append("default")
    return sorted(set(requested))


def _token_type(ctx: CreateContext, data: FieldData) -> str:
    wanted = data.get("type") or ""
    role_type = (ctx.role or {}).get("token_type", "default-service") or "default-service"
    if role_type in ("service", "batch"):
        if wanted and wanted != role_type:
            raise InvalidRequestError(f"the role only issues {role_type} tokens")
        return str(role_type)
    chosen = wanted or role_type.removeprefix("default-")
    if chosen not in ("service", "batch"):
        raise InvalidRequestError(f"invalid token type {wanted!r}: use service or batch")
    return str(chosen)


async def create_token(ctx: CreateContext, data: FieldData) -> tuple[Auth, list[str]]:
    """Validate a creation request against the parent and role; store the token."""
    parent, role = ctx.parent, ctx.role or {}
    privileged = parent.is_root or ctx.caller_has_sudo
    if parent.type == "batch":
        raise InvalidRequestError("batch tokens cannot create child tokens")
    if parent.num_uses:
        raise InvalidRequestError("token with limited use count cannot create child tokens")
    orphan = ctx.orphan_path or bool(role.get("orphan"))
    if data.get("no_parent"):
        if not privileged:
            raise PermissionDeniedError("root or sudo privileges required to create orphan token")
        orphan = True
    token_id = data.get("id") or ""
    if token_id:
        if not privileged:
            raise PermissionDeniedError("root or sudo privileges required to specify token id")
        if (
            "." in token_id
            or token_id.startswith(_RESERVED_ID_PREFIXES)
            or token_id != token_id.strip()
        ):
            raise InvalidRequestError(
                "custom token ids may not contain '.' or use a reserved prefix"
            )
    period = data.get("period") or int(role.get("period", 0))
    if data.given("period") and data.get("period") and not privileged:
        raise PermissionDeniedError("root or sudo privileges required to create periodic token")
    explicit_max = data.get("explicit_max_ttl") or 0
    if role.get("explicit_max_ttl"):
        explicit_max = (
            min(x for x in (explicit_max, int(role["explicit_max_ttl"])) if x)
            if explicit_max
            else int(role["explicit_max_ttl"])
        )
    num_uses = data.get("num_uses") or int(role.get("token_num_uses", 0))
    if num_uses < 0:
        raise InvalidRequestError("number of uses cannot be negative")
    policies = _policies(ctx, data)
    token_type = _token_type(ctx, data)
    renewable = data.get("renewable") if data.given("renewable") else True
    if not role.get("renewable", True):
        renewable = False
    if token_type == "batch":
        if "root" in policies:
            raise InvalidRequestError("batch tokens cannot be root tokens")
        if period or num_uses or data.get("id"):
            raise InvalidRequestError(
                "batch tokens cannot be periodic, use-limited or have a custom id"
            )
        renewable = False
    now = time.time()
    lifetime = initial_lifetime(
        now=now,
        ttl=data.get("ttl") or 0,
        period=period,
        explicit_max_ttl=explicit_max,
        root_policy="root" in policies,
        default_ttl=ctx.default_ttl,
        max_ttl=ctx.max_ttl,
    )
    name = (data.get("display_name") or "").strip()
    display = (
        "token"
        if not name
        else "token-" + "".join(c if c.isalnum() or c in "-_." else "-" for c in name)
    )
    path = "auth/token/create" + (
        f"/{ctx.role_name}" if ctx.role_name else "-orphan" if ctx.orphan_path else ""
    )
    meta = {str(k): str(v) for k, v in (data.get("meta") or {}).items()}
    entry = TokenEntry(
        key="",
        accessor="",
        policies=policies,
        display_name=display,
        creation_time=now,
        path=path,
        parent="" if orphan else parent.key,
        meta=meta,
        num_uses=num_uses,
        creation_ttl=lifetime.ttl,
        expire_time=lifetime.expire_time,
        explicit_max_ttl=explicit_max,
        period=period,
        renewable=bool(renewable),
        type=token_type,
        role=ctx.role_name,
        entity_id=parent.entity_id,
        namespace_id=parent.namespace_id,
    )
    if token_type == "batch":
        client_token = await ctx.store.batch.encode(entry)
    else:
        client_token, entry = await ctx.store.store_new(entry, token_id)
    auth = Auth(
        client_token=client_token,
        accessor=entry.accessor,
        policies=policies,
        token_policies=policies,
        metadata=meta,
        display_name=display,
        lease_duration=lifetime.ttl,
        renewable=entry.renewable,
        entity_id=entry.entity_id,
        token_type=token_type,
        orphan=not entry.parent,
        num_uses=num_uses,
    )
    return auth, list(lifetime.warnings)
