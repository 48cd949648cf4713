"""``sys/health``: status codes chosen by query parameters, as load balancers use them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from node.cluster.role import HAState
from sdk.errors import InvalidRequestError

__all__ = ["HealthCodes", "NodeRole", "parse_health_query"]

_CODE_PARAMS = {
    "activecode": 200,
    "standbycode": 429,
    "drsecondarycode": 472,
    "performancestandbycode": 473,
    "sealedcode": 503,
    "uninitcode": 501,
    "haunhealthycode": 474,
}


@dataclass(frozen=True, slots=True)
class NodeRole:
    initialized: bool
    sealed: bool
    standby: bool = False
    performance_standby: bool = False
    dr_secondary: bool = False
    #: A standby that lost the active node for longer than its bound.
    ha_unhealthy: bool = False

    @classmethod
    def of(cls, state: HAState, initialized: bool) -> NodeRole:
        """A cluster node's role as ``sys/health`` ranks it."""
        return cls(
            initialized=initialized,
            sealed=state.sealed,
            standby=state.standby and not state.performance_standby,
            performance_standby=state.standby and state.performance_standby,
            ha_unhealthy=not state.ha_healthy,
        )


@dataclass(frozen=True, slots=True)
class HealthCodes:
    codes: Mapping[str, int]
    standbyok: bool
    perfstandbyok: bool

    def status_for(self, role: NodeRole) -> int:
        """The reference's order: uninit, sealed, DR secondary, HA unhealthy (which
        ``standbyok``/``perfstandbyok`` do not turn into 200), perf standby, standby, active."""
        if not role.initialized:
            return self.codes["uninitcode"]
        if role.sealed:
            return self.codes["sealedcode"]
        if role.dr_secondary:
            return self.codes["drsecondarycode"]
        if role.ha_unhealthy:
            return self.codes["haunhealthycode"]
        if role.performance_standby:
            return (
                self.codes["activecode"]
                if self.perfstandbyok
                else self.codes["performancestandbycode"]
            )
        if role.standby:
            return self.codes["activecode"] if self.standbyok else self.codes["standbycode"]
        return self.codes["activecode"]


def _flag(query: Mapping[str, str], name: str) -> bool:
    if name not in query:
        return False
    value = query[name].strip().lower()
    if value in ("", "true", "1", "t"):
        return True
    if value in ("false", "0", "f"):
        return False
    raise InvalidRequestError(f"bad value for {name!r}: expected a boolean, got {query[name]!r}")


def parse_health_query(query: Mapping[str, str]) -> HealthCodes:
    codes = dict(_CODE_PARAMS)
    for name in _CODE_PARAMS:
        if name in query:
            text = query[name].strip()
            # ASCII digits only (int() rejects some Unicode digits isdigit() accepts), and
            # a final status: a 1xx code is interim and would leave the client waiting.
            if not (text.isascii() and text.isdigit() and len(text) == 3) or not (
                200 <= int(text) <= 599
            ):
                raise InvalidRequestError(
                    f"bad value for {name!r}: expected an HTTP status code, got {query[name]!r}"
                )
            codes[name] = int(text)
    return HealthCodes(codes, _flag(query, "standbyok"), _flag(query, "perfstandbyok"))
