"""Go's duration units (plus ``d`` for days), for the API's and the CLI's duration parsers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

__all__ = ["UNITS", "UNIT_SECONDS"]

#: Seconds in one of each unit.
UNIT_SECONDS: Final[Mapping[str, float]] = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
    "d": 86400.0,
}

#: The units as a regex alternation; "ms" is tried before "m" and "s".
UNITS: Final = "|".join(UNIT_SECONDS)
