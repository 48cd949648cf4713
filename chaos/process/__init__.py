"""Process-level chaos: real ``coffer server`` processes on loopback, faults by signal
and iptables, the history checked by :mod:`chaos.checker`.

``python -m chaos process SCENARIO`` (see ``__main__``); from Python::

    from chaos.process import Settings, run_scenario
    result = run_scenario("kill-active", Settings(duration=8))
    assert result.ok, result.summary()
"""

from __future__ import annotations

from chaos.process.context import Settings
from chaos.process.runner import ScenarioResult, run_scenario
from chaos.process.scenarios import SCENARIOS

__all__ = ["SCENARIOS", "ScenarioResult", "Settings", "run_scenario"]
