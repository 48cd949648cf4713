"""scripts/map_test_ids.py: an older tree's tests found in the new layout."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[3]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("map_test_ids", ROOT / "scripts/map_test_ids.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_a_moved_test_is_found_by_name_and_an_ambiguous_one_by_its_path_words() -> None:
    mapped, missing = _script().map_ids(
        [
            "tests/unit/test_cli_kv.py::test_list",
            "tests/unit/test_cli_policy.py::test_list",
            "tests/api/test_kv.py::test_put[a-1]",
            "tests/unit/test_gone.py::test_removed",
        ],
        [
            "tests/unit/cli/test_policy.py::test_list",
            "tests/unit/cli/test_kv.py::test_list",
            "tests/api/kv/test_kv_v2.py::test_put[a-1]",
            "tests/api/kv/test_kv_v2.py::test_put[b-2]",
        ],
    )
    assert mapped == [
        "tests/unit/cli/test_kv.py::test_list",
        "tests/unit/cli/test_policy.py::test_list",
        "tests/api/kv/test_kv_v2.py::test_put[a-1]",
    ]
    assert missing == ["tests/unit/test_gone.py::test_removed"]


def test_a_name_that_stays_ambiguous_is_reported_not_guessed() -> None:
    mapped, missing = _script().map_ids(
        ["tests/old/test_a.py::test_same"],
        ["tests/x/test_b.py::test_same", "tests/y/test_c.py::test_same"],
    )
    assert mapped == [] and missing == ["tests/old/test_a.py::test_same"]
