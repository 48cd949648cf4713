"""``@record``: frozen for the type checker, a plain slotted dataclass at run time."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import pytest
from mypy import api as mypy_api

from node.logical.request import Operation, Request
from sdk.physical import Put
from sdk.record import record


@record
class _Pair:
    name: str
    count: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class _FrozenPair:
    name: str
    count: int = 0


def test_equality_hash_and_replace_are_a_frozen_dataclasses() -> None:
    assert _Pair("a", 1) == _Pair("a", 1) != _Pair("a", 2)
    assert hash(_Pair("a", 1)) == hash(_FrozenPair("a", 1))
    assert {_Pair("a", 1), _Pair("a", 1)} == {_Pair("a", 1)}
    assert dataclasses.replace(_Pair("a", 1), count=2) == _Pair("a", 2)
    assert not hasattr(_Pair("a"), "__dict__")  # slotted
    # As with frozen=True, a record holding a dict cannot be hashed.
    with pytest.raises(TypeError):
        hash(Request(Operation.READ, "p", data={"a": 1}))
    assert hash(Put("k", b"v", expect=3)) == hash(Put("k", b"v", expect=3))


def test_the_type_checker_refuses_an_assignment_to_a_field(tmp_path: Path) -> None:
    """The read-only promise is mypy's (PEP 681 ``frozen_default``): CI type-checks
    the tree, so an assignment to a record's field does not land."""
    source = tmp_path / "mutates.py"
    source.write_text(
        textwrap.dedent(
            """
            from node.logical.request import Operation, Request
            from sdk.physical import Put

            request = Request(Operation.READ, "p")
            request.path = "q"
            Put("k", b"v").value = b"w"
            """
        )
    )
    config = Path(__file__).resolve().parents[3] / "pyproject.toml"
    options = [f"--config-file={config}", f"--cache-dir={tmp_path / 'cache'}"]
    out, _, status = mypy_api.run(
        [*options, "--no-incremental", "--follow-imports=silent", str(source)]
    )
    assert status == 1, out
    assert 'Property "path" defined in "Request" is read-only' in out, out
    assert 'Property "value" defined in "Put" is read-only' in out, out
