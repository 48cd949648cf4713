"""Token creation rules: who may create what, with which policies and lifetime."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from node.framework import FieldData
from node.logical.response import Auth
from node.tokens.entry import TokenEntry
from node.tokens.store import TokenStore
from node.tokens.ttl import initial_lifetime
from sdk.errors import InvalidRequestError

__all__ = ["CreateContext", "create_token"]

_RESERVED_ID_PREFIXES = ("hvs.", "hvb.", "hvr.", "s.", "b.", "r.")
#: Policies that exist for internal use and may never be given to a token.
_NON_ASSIGNABLE_POLICIES = frozenset({"response-wrapping"})


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
    #: The namespace of the token mount the request came through: the new token's home.
    namespace_id: str = ""


def _sanitise(policies: list[str]) -> list[str]:
    return sorted({p.strip().lower() for p in policies if p.strip()})


def _policies(ctx: CreateContext, data: FieldData) -> list[str]:
    """The new token's policies, by the reference's rules.

    A role that names allowed or disallowed policies decides the policies
    itself (that is what roles are for). Otherwise a token inherits its
    parent's policies, or asks for a subset of them unless the caller is
    root or has sudo. ``default`` is added unless refused, and, for a plain
    child, only if the parent has it too.
    """
    requested = _sanitise(data.get("policies") or [])
    role = ctx.role or {}
    parent = _sanitise(ctx.parent.policies)
    no_default = bool(data.get("no_default_policy") or role.get("token_no_default_policy"))
    allowed = _sanitise(role.get("allowed_policies", []))
    disallowed = set(_sanitise(role.get("disallowed_policies", [])))
    if allowed or disallowed:
        add_default = not no_default and "default" not in disallowed
        permitted = set(allowed) | ({"default"} if add_default else set())
        if not requested:
            requested = allowed or parent
        elif allowed and not set(requested) <= permitted:
            raise InvalidRequestError(
                f"token policies {requested} must be a subset of the role's allowed "
                f"policies {sorted(permitted)}"
            )
        refused = sorted(disallowed & set(requested))
        if refused:
            raise InvalidRequestError(f"token policies {refused} are disallowed by this role")
    elif not requested:
        requested = parent
        add_default = False  # inherited: "default" only if the parent has it
    elif ctx.parent.is_root or ctx.caller_has_sudo:
        add_default = not no_default
    else:
        if not set(requested) <= set(parent):
            raise InvalidRequestError("child policies must be subset of parent")
        add_default = not no_default and "default" in parent
    chosen = set(requested)
    if "root" in chosen:
        chosen = {"root"}  # root is all there is to it
    elif add_default:
        chosen.add("default")
    if no_default:
        chosen.discard("default")
    blocked = _NON_ASSIGNABLE_POLICIES & chosen
    if blocked:
        raise InvalidRequestError(f"cannot assign policy {', '.join(sorted(blocked))!r}")
    if "root" in chosen and not ctx.parent.is_root:
        raise InvalidRequestError("root tokens may only be created by a root token")
    return sorted(chosen)


def _meta(raw: dict[str, Any]) -> dict[str, str]:
    """Token metadata: a flat map of strings (numbers and booleans are spelled out)."""
    meta: dict[str, str] = {}
    for key, value in raw.items():
        if isinstance(value, bool):
            meta[str(key)] = "true" if value else "false"
        elif isinstance(value, (str, int, float)):
            meta[str(key)] = str(value)
        else:
            raise InvalidRequestError(f"meta.{key}: expected a string value")
    return meta


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
            raise InvalidRequestError("root or sudo privileges required to create orphan token")
        orphan = True
    token_id = data.get("id") or ""
    if token_id:
        if not privileged:
            raise InvalidRequestError("root or sudo privileges required to specify token id")
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
        raise InvalidRequestError("root or sudo privileges required to create periodic token")
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
        if period or num_uses or data.get("id") or data.get("explicit_max_ttl"):
            raise InvalidRequestError(
                "batch tokens cannot be periodic, use-limited, have an explicit max TTL "
                "or a custom id"
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
    if not lifetime.ttl:
        if parent.expire_time and "root" in policies:
            raise InvalidRequestError("expiring root tokens cannot create non-expiring root tokens")
        # A token that never expires cannot be renewed; do not advertise it.
        renewable = False
    name = (data.get("display_name") or "").strip()
    display = (
        "token"
        if not name
        else "token-" + "".join(c if c.isalnum() or c in "-_." else "-" for c in name)
    )
    path = "auth/token/create" + (
        f"/{ctx.role_name}" if ctx.role_name else "-orphan" if ctx.orphan_path else ""
    )
    if role.get("path_suffix"):
        path += f"/{role['path_suffix']}"
    meta = _meta(data.get("meta") or {})
    if not lifetime.ttl:
        bound_cidrs: list[str] = []  # as the reference: never-expiring tokens are not bound
    elif ctx.role is not None:
        bound_cidrs = list(role.get("token_bound_cidrs") or [])
    else:
        bound_cidrs = [] if orphan else list(parent.bound_cidrs)
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
        bound_cidrs=bound_cidrs,
        entity_id=parent.entity_id,
        namespace_id=ctx.namespace_id or parent.namespace_id,
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
