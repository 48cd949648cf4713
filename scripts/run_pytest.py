"""Run pytest, and fail when no test ran (exit 5) or every test was skipped.

CI must never go green on an empty or fully skipped run.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# As ``python -m pytest`` would: the repository root on the path, so pyproject's
# ``-p tests.loop_guard`` plugin imports.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


class _Outcomes:
    def __init__(self) -> None:
        self.passed = 0

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" and report.passed:
            self.passed += 1


def main() -> int:
    outcomes = _Outcomes()
    code = int(pytest.main(sys.argv[1:], plugins=[outcomes]))
    if code == pytest.ExitCode.NO_TESTS_COLLECTED:
        print("error: pytest collected no tests", file=sys.stderr)
        return 1
    if code == 0 and outcomes.passed == 0:
        print("error: no test passed (everything skipped?)", file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
