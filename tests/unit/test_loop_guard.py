"""The blockbuster guard (tests/loop_guard.py) is active and its allow-list is real."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from blockbuster import BlockingError

from consensus.local import read_local_state
from node.policy.parser import parse_policy
from tests.loop_guard import ALLOWED

ROOT = Path(__file__).resolve().parents[2]


async def test_a_blocking_product_call_on_the_loop_fails_the_test(tmp_path: Path) -> None:
    # read_local_state is documented "blocking: run off the loop"; on the loop it must trip.
    with pytest.raises(BlockingError):
        read_local_state(tmp_path)


def test_the_same_call_off_the_loop_is_fine(tmp_path: Path) -> None:
    assert read_local_state(tmp_path).get("anything") is None


async def test_an_allowed_call_passes_on_the_loop() -> None:
    policy = parse_policy("p", 'path "secret/*" { capabilities = ["read"] }')
    assert policy.name == "p" and len(policy.rules) == 1


@pytest.mark.parametrize(("filename", "functions", "reason"), ALLOWED)
def test_every_allowed_entry_names_a_real_function(
    filename: str, functions: frozenset[str], reason: str
) -> None:
    source = (ROOT / filename).read_text()
    for function in functions:
        assert re.search(rf"^\s*def {re.escape(function)}\(", source, re.MULTILINE), function
    assert reason
