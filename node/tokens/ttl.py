"""Token lifetimes: the reference's rules for TTL, max TTL, explicit max and period."""

from __future__ import annotations

from dataclasses import dataclass

from node.tokens.entry import TokenEntry
from sdk.errors import InvalidRequestError

__all__ = ["Lifetime", "initial_lifetime", "renewed_expiry"]


@dataclass(frozen=True, slots=True)
class Lifetime:
    ttl: int
    expire_time: float
    warnings: tuple[str, ...] = ()


def _effective_max(max_ttl: int, explicit_max_ttl: int) -> int:
    """The tighter of the system max TTL and the token's explicit max (0 = none)."""
    limits = [limit for limit in (max_ttl, explicit_max_ttl) if limit > 0]
    return min(limits) if limits else 0


def initial_lifetime(
    *,
    now: float,
    ttl: int,
    period: int,
    explicit_max_ttl: int,
    root_policy: bool,
    default_ttl: int,
    max_ttl: int,
) -> Lifetime:
    """TTL of a new token.

    A root-policy token asked for no TTL (and no period) never expires, unless
    an explicit max binds it. Everything else gets its period, else its TTL,
    else the default; capped by the max TTL and the explicit max, with a
    warning when capped.
    """
    if min(ttl, period, explicit_max_ttl) < 0:
        raise InvalidRequestError("ttl, period and explicit_max_ttl must not be negative")
    if not period and not ttl and root_policy:
        return Lifetime(explicit_max_ttl, now + explicit_max_ttl if explicit_max_ttl else 0.0)
    chosen = period or ttl or default_ttl
    limit = _effective_max(max_ttl, explicit_max_ttl)
    warnings: tuple[str, ...] = ()
    if limit and chosen > limit:
        kind = "period" if period else "TTL"
        warnings = (
            f"{kind} of {chosen}s exceeded the effective max_ttl of {limit}s; "
            f"{kind} value is capped accordingly",
        )
        chosen = limit
    return Lifetime(chosen, now + chosen if chosen else 0.0, warnings)


def renewed_expiry(entry: TokenEntry, *, now: float, increment: int, max_ttl: int) -> Lifetime:
    """The new expiry after a renewal.

    A periodic token gets one more period (capped by the max TTL) and is
    bounded only by its explicit max; any other token gets the increment (or
    its original TTL) but never lives past creation + the effective max.
    """
    if not entry.renewable:
        raise InvalidRequestError("lease is not renewable")
    if increment < 0:
        raise InvalidRequestError("increment must not be negative")
    if not entry.expire_time:
        return Lifetime(0, 0.0)
    warnings: list[str] = []
    if entry.period:
        step = entry.period
        if max_ttl and step > max_ttl:
            warnings.append(
                f"period of {step}s exceeded the effective max_ttl of {max_ttl}s; "
                "period value is capped accordingly"
            )
            step = max_ttl
        limit = entry.explicit_max_ttl
    else:
        step = increment or entry.creation_ttl
        limit = _effective_max(max_ttl, entry.explicit_max_ttl)
    wanted = now + step
    if limit and wanted > entry.creation_time + limit:
        wanted = entry.creation_time + limit
        warnings.append("TTL value is capped by the token's maximum lifetime")
    if wanted <= now:
        raise InvalidRequestError("past the max TTL, cannot renew")
    return Lifetime(int(wanted - now), wanted, tuple(warnings))
