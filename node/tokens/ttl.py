"""Token lifetimes: the reference's rules for TTL, max TTL, explicit max and period."""

from __future__ import annotations

from dataclasses import dataclass

from node.errors import InvalidRequestError
from node.tokens.entry import TokenEntry

__all__ = ["Lifetime", "initial_lifetime", "renewed_expiry"]


@dataclass(frozen=True, slots=True)
class Lifetime:
    ttl: int
    expire_time: float
    warnings: tuple[str, ...] = ()


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

    A periodic token lives one period at a time with no max TTL; a root-policy
    token asked for no TTL never expires; everything else gets the mount
    default, capped by the max TTL and the explicit max.
    """
    if min(ttl, period, explicit_max_ttl) < 0:
        raise InvalidRequestError("ttl, period and explicit_max_ttl must not be negative")
    warnings: list[str] = []
    if period:
        chosen = period
    elif ttl == 0 and explicit_max_ttl == 0 and root_policy:
        return Lifetime(0, 0.0)
    else:
        chosen = ttl or default_ttl
        if max_ttl and chosen > max_ttl:
            warnings.append(
                f"TTL of {chosen}s exceeded the effective max_ttl of {max_ttl}s; "
                "TTL value is capped accordingly"
            )
            chosen = max_ttl
    if explicit_max_ttl and (chosen == 0 or chosen > explicit_max_ttl):
        chosen = explicit_max_ttl
    return Lifetime(chosen, now + chosen if chosen else 0.0, tuple(warnings))


def renewed_expiry(entry: TokenEntry, *, now: float, increment: int, max_ttl: int) -> Lifetime:
    """The new expiry after a renewal, never past the explicit or system max."""
    if not entry.renewable:
        raise InvalidRequestError("lease is not renewable")
    if increment < 0:
        raise InvalidRequestError("increment must not be negative")
    if not entry.expire_time:
        return Lifetime(0, 0.0)
    wanted = now + (entry.period or increment or entry.creation_ttl)
    limits = []
    if entry.explicit_max_ttl:
        limits.append(entry.creation_time + entry.explicit_max_ttl)
    if not entry.period and max_ttl:
        limits.append(entry.creation_time + max_ttl)
    warnings: tuple[str, ...] = ()
    if limits and wanted > min(limits):
        wanted = min(limits)
        warnings = ("TTL value is capped by the token's maximum lifetime",)
    return Lifetime(int(wanted - now), wanted, warnings)
