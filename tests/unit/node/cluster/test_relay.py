"""The forwarding signature's rules (issue 14, item 8), without a server."""

from __future__ import annotations

import dataclasses
import os
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from node.cluster.relay import (
    SKEW,
    NonceLedger,
    Relayed,
    RelayRefusedError,
    body_digest,
    sign_relayed,
)

KEY = os.urandom(32)
REQUEST = Relayed(
    client="10.0.0.7",
    method="PUT",
    path="/v1/secret/data/a",
    query="cas=1",
    body_sha256=body_digest(b'{"data":{}}'),
    token="hvs.token",
    namespace="team",
)


def test_accepted_once_then_replay_refused() -> None:
    ledger = NonceLedger()
    signature = sign_relayed(KEY, REQUEST)
    ledger.verify(KEY, signature, REQUEST)
    with pytest.raises(RelayRefusedError, match="replayed"):
        ledger.verify(KEY, signature, REQUEST)
    ledger.verify(KEY, sign_relayed(KEY, REQUEST), REQUEST)  # a fresh nonce is fine


@pytest.mark.parametrize("name", [f.name for f in dataclasses.fields(Relayed)])
def test_every_field_is_covered(name: str) -> None:
    signature = sign_relayed(KEY, REQUEST)
    altered = dataclasses.replace(REQUEST, **{name: getattr(REQUEST, name) + "x"})
    with pytest.raises(RelayRefusedError, match="does not match"):
        NonceLedger().verify(KEY, signature, altered)


@pytest.mark.parametrize("offset", [-(SKEW + 5), SKEW + 5])
def test_stale_or_future_timestamps_are_refused(offset: float) -> None:
    signature = sign_relayed(KEY, REQUEST, now=time.time() + offset)
    with pytest.raises(RelayRefusedError, match="stale"):
        NonceLedger().verify(KEY, signature, REQUEST)


def test_a_refused_signature_is_not_remembered() -> None:
    ledger = NonceLedger()
    with pytest.raises(RelayRefusedError):
        ledger.verify(os.urandom(32), sign_relayed(KEY, REQUEST), REQUEST)
    assert len(ledger) == 0


def test_nonces_are_forgotten_once_their_timestamps_are_stale() -> None:
    now = [1000.0]
    ledger = NonceLedger(clock=lambda: now[0])
    ledger.verify(KEY, sign_relayed(KEY, REQUEST, nonce="n1"), REQUEST)
    now[0] += SKEW  # still remembered: its timestamp may still be accepted
    ledger.verify(KEY, sign_relayed(KEY, REQUEST, nonce="n2"), REQUEST)
    assert len(ledger) == 2
    now[0] += SKEW + 1  # n1's window is over, n2's is not
    ledger.verify(KEY, sign_relayed(KEY, REQUEST, nonce="n3"), REQUEST)
    assert len(ledger) == 2


@given(st.text(max_size=80))
def test_any_garbage_signature_is_refused_cleanly(garbage: str) -> None:
    with pytest.raises(RelayRefusedError):
        NonceLedger().verify(KEY, garbage, REQUEST)
