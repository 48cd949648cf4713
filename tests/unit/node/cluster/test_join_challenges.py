"""The leader's join challenges (issue 14, item 3): bounded per source, never
replaced from another address."""

from __future__ import annotations

import base64
import os

import pytest

from node.cluster.errors import TooManyJoinsError
from node.cluster.join import _MAX_PENDING, MAX_PER_SOURCE, Challenges, source_of
from sdk.errors import InvalidRequestError


def _answer(nonce: bytes) -> str:
    return base64.b64encode(nonce).decode()


def test_one_source_cannot_take_every_slot() -> None:
    challenges = Challenges()
    for index in range(MAX_PER_SOURCE):
        challenges.remember(f"flood-{index}", os.urandom(32), "10.0.0.66")
    with pytest.raises(TooManyJoinsError, match="from this address"):
        challenges.remember("flood-more", os.urandom(32), "10.0.0.66")
    # Another joiner still gets a challenge.
    nonce = os.urandom(32)
    challenges.remember("node-2", nonce, "10.0.0.2")
    challenges.check("node-2", _answer(nonce))


def test_the_total_stays_bounded() -> None:
    challenges = Challenges()
    for index in range(_MAX_PENDING):
        challenges.remember(f"n{index}", os.urandom(32), f"10.1.{index}.1")
    with pytest.raises(TooManyJoinsError):
        challenges.remember("one-more", os.urandom(32), "10.2.0.1")


def test_a_pending_nonce_is_not_replaced_from_another_address() -> None:
    challenges = Challenges()
    nonce = os.urandom(32)
    challenges.remember("node-2", nonce, "10.0.0.2")
    with pytest.raises(InvalidRequestError, match="already in progress"):
        challenges.remember("node-2", os.urandom(32), "10.0.0.66")
    challenges.check("node-2", _answer(nonce))  # the real joiner's answer still holds


def test_the_same_joiner_may_ask_again_after_a_restart() -> None:
    challenges = Challenges()
    challenges.remember("node-2", os.urandom(32), "10.0.0.2")
    fresh = os.urandom(32)
    challenges.remember("node-2", fresh, "10.0.0.2")
    challenges.check("node-2", _answer(fresh))


def test_ipv6_sources_count_per_64() -> None:
    assert source_of("2001:db8::1") == source_of("2001:db8::ffff:1") == "2001:db8::/64"
    assert source_of("2001:db8:0:1::1") != source_of("2001:db8::1")
    assert source_of("127.0.0.1") == "127.0.0.1"
    challenges = Challenges()
    for index in range(MAX_PER_SOURCE):
        challenges.remember(f"v6-{index}", os.urandom(32), f"2001:db8::{index + 1:x}")
    with pytest.raises(TooManyJoinsError):
        challenges.remember("v6-more", os.urandom(32), "2001:db8::abcd")
