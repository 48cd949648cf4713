"""The activation token: the primary's address and the wrapping token in one string."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from node.replication.manager import ACTIVATION_PREFIX, activation_token, parse_activation_token
from sdk.errors import InvalidRequestError


@given(st.text(min_size=1).filter(lambda t: t.strip() == t), st.text())
def test_an_activation_token_round_trips(jti: str, addr: str) -> None:
    assert parse_activation_token(activation_token(jti, addr)) == (jti, addr)


def test_a_plain_wrapping_token_carries_no_address() -> None:
    assert parse_activation_token(" hvs.abc ") == ("hvs.abc", "")


@given(st.binary(max_size=200))
def test_garbage_after_the_prefix_is_a_clear_400(garbage: bytes) -> None:
    token = ACTIVATION_PREFIX + garbage.decode("latin-1")
    try:
        jti, addr = parse_activation_token(token)
    except InvalidRequestError:
        return
    assert isinstance(jti, str) and isinstance(addr, str)
