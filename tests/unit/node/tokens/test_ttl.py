"""Token lifetime rules (``node.tokens.ttl``): initial TTL and renewal."""

from __future__ import annotations

from typing import Any

import pytest

from node.tokens.entry import TokenEntry
from node.tokens.ttl import initial_lifetime, renewed_expiry
from sdk.errors import InvalidRequestError

NOW = 1_700_000_000.0
DAY = 86400


def initial(**overrides: Any) -> Any:
    args: dict[str, Any] = {
        "now": NOW,
        "ttl": 0,
        "period": 0,
        "explicit_max_ttl": 0,
        "root_policy": False,
        "default_ttl": 32 * DAY,
        "max_ttl": 32 * DAY,
    }
    args.update(overrides)
    return initial_lifetime(**args)


def entry(**overrides: Any) -> TokenEntry:
    fields: dict[str, Any] = {
        "key": "k",
        "accessor": "a",
        "policies": ["default"],
        "display_name": "token",
        "creation_time": NOW,
        "creation_ttl": 3600,
        "expire_time": NOW + 3600,
    }
    fields.update(overrides)
    return TokenEntry(**fields)


# --- initial_lifetime ---------------------------------------------------------------


def test_default_ttl_when_none_asked() -> None:
    life = initial(default_ttl=3600)
    assert (life.ttl, life.expire_time, life.warnings) == (3600, NOW + 3600, ())


def test_requested_ttl_wins_over_default() -> None:
    life = initial(ttl=60, default_ttl=3600)
    assert (life.ttl, life.expire_time) == (60, NOW + 60)


def test_ttl_is_capped_by_max_ttl_with_a_warning() -> None:
    life = initial(ttl=10 * DAY, max_ttl=DAY)
    assert life.ttl == DAY and life.expire_time == NOW + DAY
    assert len(life.warnings) == 1 and "capped" in life.warnings[0]


def test_default_is_capped_by_max_ttl() -> None:
    assert initial(default_ttl=2 * DAY, max_ttl=DAY).ttl == DAY


def test_explicit_max_caps_the_ttl() -> None:
    life = initial(ttl=3600, explicit_max_ttl=60)
    assert (life.ttl, life.expire_time) == (60, NOW + 60)
    assert life.warnings
    assert initial(ttl=30, explicit_max_ttl=60).ttl == 30
    assert initial(explicit_max_ttl=60, default_ttl=3600).ttl == 60


def test_smaller_of_max_and_explicit_max_applies() -> None:
    assert initial(ttl=5000, explicit_max_ttl=4000, max_ttl=3000).ttl == 3000
    assert initial(ttl=5000, explicit_max_ttl=2000, max_ttl=3000).ttl == 2000


def test_root_policy_without_ttl_never_expires() -> None:
    life = initial(root_policy=True)
    assert (life.ttl, life.expire_time) == (0, 0.0)


def test_root_policy_with_ttl_expires() -> None:
    life = initial(root_policy=True, ttl=120)
    assert (life.ttl, life.expire_time) == (120, NOW + 120)


def test_root_policy_is_bound_by_explicit_max_even_past_the_default() -> None:
    assert initial(root_policy=True, explicit_max_ttl=90).ttl == 90
    # the explicit max itself, not the (smaller) default TTL
    life = initial(root_policy=True, explicit_max_ttl=100 * DAY, default_ttl=DAY)
    assert (life.ttl, life.expire_time) == (100 * DAY, NOW + 100 * DAY)


def test_period_sets_the_ttl() -> None:
    life = initial(period=600, ttl=60, default_ttl=3600)
    assert (life.ttl, life.expire_time) == (600, NOW + 600)


def test_period_applies_to_root_policy_too() -> None:
    assert initial(period=600, root_policy=True).ttl == 600


def test_period_is_capped_by_max_ttl_and_explicit_max() -> None:
    life = initial(period=10 * DAY, max_ttl=DAY)
    assert life.ttl == DAY and life.warnings and "period" in life.warnings[0]
    assert initial(period=600, explicit_max_ttl=300).ttl == 300


def test_no_limits_and_no_default_means_no_expiry() -> None:
    life = initial(default_ttl=0, max_ttl=0)
    assert (life.ttl, life.expire_time) == (0, 0.0)


@pytest.mark.parametrize("field", ["ttl", "period", "explicit_max_ttl"])
def test_negative_values_are_refused(field: str) -> None:
    with pytest.raises(InvalidRequestError):
        initial(**{field: -1})


# --- renewed_expiry ----------------------------------------------------------------------


def test_renew_by_increment() -> None:
    life = renewed_expiry(entry(), now=NOW + 100, increment=600, max_ttl=32 * DAY)
    assert (life.ttl, life.expire_time, life.warnings) == (600, NOW + 700, ())


def test_renew_without_increment_uses_the_original_ttl() -> None:
    life = renewed_expiry(entry(creation_ttl=3600), now=NOW + 100, increment=0, max_ttl=32 * DAY)
    assert (life.ttl, life.expire_time) == (3600, NOW + 3700)


def test_renew_is_capped_by_explicit_max_from_creation() -> None:
    token = entry(explicit_max_ttl=1000)
    life = renewed_expiry(token, now=NOW + 400, increment=3600, max_ttl=32 * DAY)
    assert life.expire_time == NOW + 1000
    assert life.ttl == 600
    assert life.warnings


def test_renew_is_capped_by_system_max_from_creation() -> None:
    life = renewed_expiry(entry(), now=NOW + 500, increment=DAY, max_ttl=2000)
    assert life.expire_time == NOW + 2000 and life.ttl == 1500 and life.warnings


def test_renew_can_shorten_the_ttl() -> None:
    life = renewed_expiry(entry(), now=NOW + 10, increment=5, max_ttl=32 * DAY)
    assert (life.ttl, life.expire_time) == (5, NOW + 15)


def test_periodic_renewal_ignores_increment_and_system_max_lifetime() -> None:
    token = entry(period=600, creation_ttl=600, expire_time=NOW + 600)
    far_later = NOW + 100 * DAY
    life = renewed_expiry(token, now=far_later, increment=5, max_ttl=DAY)
    assert (life.ttl, life.expire_time, life.warnings) == (600, far_later + 600, ())


def test_periodic_renewal_is_bound_by_explicit_max() -> None:
    token = entry(period=600, explicit_max_ttl=1000, expire_time=NOW + 600)
    life = renewed_expiry(token, now=NOW + 700, increment=0, max_ttl=DAY)
    assert life.expire_time == NOW + 1000 and life.ttl == 300


def test_periodic_renewal_period_capped_by_system_max() -> None:
    token = entry(period=2 * DAY, expire_time=NOW + DAY)
    life = renewed_expiry(token, now=NOW + 10, increment=0, max_ttl=DAY)
    assert life.ttl == DAY and life.warnings


def test_non_expiring_tokens_stay_non_expiring() -> None:
    life = renewed_expiry(entry(expire_time=0.0), now=NOW, increment=60, max_ttl=DAY)
    assert (life.ttl, life.expire_time) == (0, 0.0)


def test_non_renewable_tokens_are_refused() -> None:
    with pytest.raises(InvalidRequestError, match="not renewable"):
        renewed_expiry(entry(renewable=False), now=NOW, increment=60, max_ttl=DAY)


def test_negative_increment_is_refused() -> None:
    with pytest.raises(InvalidRequestError):
        renewed_expiry(entry(), now=NOW, increment=-1, max_ttl=DAY)


def test_renewal_past_the_max_lifetime_is_refused() -> None:
    token = entry(explicit_max_ttl=100)
    with pytest.raises(InvalidRequestError, match="past the max TTL"):
        renewed_expiry(token, now=NOW + 200, increment=60, max_ttl=DAY)
