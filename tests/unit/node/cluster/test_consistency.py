"""Index states (``X-Vault-Index``) and the ``X-Vault-Inconsistent`` modes."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from node.cluster.consistency import (
    Inconsistent,
    encode_state,
    parse_inconsistent,
    required_index,
)
from sdk.errors import InvalidRequestError

KEY = b"k" * 32
CLUSTER = "0b6a9f3e-1c2d-4e5f-8a9b-0c1d2e3f4a5b"


def test_a_state_round_trips_in_the_reference_shape() -> None:
    state = encode_state(KEY, CLUSTER, 1234)
    decoded = base64.b64decode(state).decode()
    version, cluster, local, replicated, mac = decoded.split(":")
    assert (version, cluster, local, replicated) == ("v1", CLUSTER, "1234", "0")
    assert len(mac) == 64 and int(mac, 16) >= 0
    assert required_index([state], KEY, CLUSTER) == 1234


def test_the_highest_of_several_states_counts() -> None:
    states = [encode_state(KEY, CLUSTER, n) for n in (7, 90, 12)]
    assert required_index(states, KEY, CLUSTER) == 90
    assert required_index([", ".join(states)], KEY, CLUSTER) == 90
    assert required_index(["5", states[0]], KEY, CLUSTER) == 7


def test_no_header_means_no_requirement() -> None:
    assert required_index([], KEY, CLUSTER) is None
    assert required_index([" "], KEY, CLUSTER) is None


def test_a_plain_decimal_index_is_accepted_unsigned() -> None:
    assert required_index(["42"], KEY, CLUSTER) == 42


def test_a_forged_state_is_refused() -> None:
    decoded = base64.b64decode(encode_state(KEY, CLUSTER, 10)).decode()
    forged = decoded.replace(":10:", ":99999:")
    with pytest.raises(InvalidRequestError, match="signature"):
        required_index([base64.b64encode(forged.encode()).decode()], KEY, CLUSTER)
    with pytest.raises(InvalidRequestError, match="signature"):
        required_index([encode_state(b"x" * 32, CLUSTER, 10)], KEY, CLUSTER)


def test_another_clusters_state_is_refused() -> None:
    with pytest.raises(InvalidRequestError, match="another cluster"):
        required_index([encode_state(KEY, "other", 10)], KEY, CLUSTER)


@pytest.mark.parametrize(
    "raw", ["not base64!", base64.b64encode(b"v2:c:1:0:ab").decode(), "-1", "1" * 600]
)
def test_malformed_values_are_a_400(raw: str) -> None:
    with pytest.raises(InvalidRequestError):
        required_index([raw], KEY, CLUSTER)


@given(st.binary(max_size=200))
def test_arbitrary_bytes_give_an_index_or_a_400(data: bytes) -> None:
    for raw in (data.decode("latin-1"), base64.b64encode(data).decode()):
        try:
            index = required_index([raw], KEY, CLUSTER)
        except InvalidRequestError:
            continue
        assert index is None or 0 <= index < 2**63


def test_inconsistent_modes() -> None:
    assert parse_inconsistent("") is Inconsistent.FAIL
    assert parse_inconsistent("fail") is Inconsistent.FAIL
    assert parse_inconsistent(" Forward-Active-Node ") is Inconsistent.FORWARD
    with pytest.raises(InvalidRequestError, match="forward-active-node"):
        parse_inconsistent("await-state")
