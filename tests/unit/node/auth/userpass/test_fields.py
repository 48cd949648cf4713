"""Userpass fields: user names as the reference accepts them, legacy spellings."""

from __future__ import annotations

import re
from typing import Any

import pytest

from node.auth.common.token_settings import TokenSettings
from node.auth.userpass.fields import USERNAME, policy_fields, token_settings, user_fields
from node.framework import Field, FieldData
from sdk.errors import InvalidRequestError


def settings(
    raw: dict[str, Any],
    current: TokenSettings | None = None,
    fields: dict[str, Field] | None = None,
) -> TokenSettings:
    return token_settings(FieldData(fields or user_fields(), raw), current)


@pytest.mark.parametrize("name", ["a", "alice", "Alice_2", "first.last", "x-y", "a..b", "9"])
def test_valid_usernames(name: str) -> None:
    assert re.fullmatch(USERNAME, name)


@pytest.mark.parametrize("name", ["", ".a", "a.", "-a", "a-", "a/b", "a b", "é", "..", "a\n"])
def test_invalid_usernames(name: str) -> None:
    assert not re.fullmatch(USERNAME, name)


def test_legacy_names_set_token_fields() -> None:
    got = settings({"policies": "a, b", "ttl": "1m", "max_ttl": 120, "bound_cidrs": "10.0.0.1"})
    assert got == TokenSettings(ttl=60, max_ttl=120, policies=["a", "b"], bound_cidrs=["10.0.0.1"])


@pytest.mark.parametrize(
    ("old", "new"),
    [("policies", "token_policies"), ("ttl", "token_ttl"), ("max_ttl", "token_max_ttl")],
)
def test_both_spellings_is_an_error(old: str, new: str) -> None:
    with pytest.raises(InvalidRequestError, match="both"):
        settings({old: "1", new: "1"})


def test_only_given_fields_change() -> None:
    current = TokenSettings(ttl=60, max_ttl=600, policies=["a"], num_uses=3)
    assert settings({}, current) == current
    assert settings({"token_num_uses": 0}, current) == TokenSettings(
        ttl=60, max_ttl=600, policies=["a"]
    )


def test_validation_sees_the_current_settings() -> None:
    with pytest.raises(InvalidRequestError, match="token_max_ttl"):
        settings({"ttl": "2h"}, TokenSettings(max_ttl=3600))


def test_the_policies_path_changes_nothing_but_policies() -> None:
    current = TokenSettings(ttl=60)
    raw = {"policies": "p", "token_ttl": 5}  # token_ttl is not a field of that path
    assert settings(raw, current, policy_fields()) == TokenSettings(ttl=60, policies=["p"])
