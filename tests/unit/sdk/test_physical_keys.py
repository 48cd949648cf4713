"""``validate_key``: the keys every backend can round-trip, and nothing else."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdk.errors import InvalidRequestError
from sdk.physical import validate_key


def _valid(key: str) -> bool:
    parts = key.split("/")
    return bool(key) and all(part not in ("", ".", "..") for part in parts) and "\x00" not in key


@given(st.lists(st.sampled_from(["a", ".", "..", "", "b.c", "...", "\x00", "é"]), max_size=6))
def test_a_key_is_refused_exactly_when_a_segment_is_empty_dot_or_dotdot_or_it_holds_nul(
    parts: list[str],
) -> None:
    key = "/".join(parts)
    if _valid(key):
        validate_key(key)
    else:
        with pytest.raises(InvalidRequestError):
            validate_key(key)


@given(st.text(max_size=24))
def test_any_text_is_judged_as_the_segment_rule_says(key: str) -> None:
    if _valid(key):
        validate_key(key)
    else:
        with pytest.raises(InvalidRequestError):
            validate_key(key)
