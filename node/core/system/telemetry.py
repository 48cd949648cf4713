"""``sys/metrics``: Prometheus text or the reference's JSON shape."""

from __future__ import annotations

from typing import TYPE_CHECKING

from node.framework import Field, FieldData, FieldType, Path
from node.logical.request import Operation, Request
from node.logical.response import Response
from node.observability.metrics import CONTENT_TYPE_LATEST
from sdk.errors import InvalidRequestError

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["TelemetryPaths"]


class TelemetryPaths:
    def __init__(self, core: Core) -> None:
        self._core = core

    def paths(self) -> list[Path]:
        return [
            Path(
                "metrics",
                operations={Operation.READ: self._metrics},
                fields={"format": Field(FieldType.STRING, "'prometheus' for the text format.", "")},
                # Read when the backend is built, like the rest of the table.
                unauthenticated=self._core.settings.unauthenticated_metrics,
                summary="Telemetry of this node.",
            )
        ]

    async def _metrics(self, request: Request, data: FieldData) -> Response:
        metrics, fmt = self._core.metrics, data.get("format")
        if fmt == "prometheus":
            if not metrics.prometheus_enabled:
                raise InvalidRequestError(
                    "prometheus is not enabled (telemetry prometheus_retention_time is 0)"
                )
            return Response(raw=metrics.prometheus_text(), raw_content_type=CONTENT_TYPE_LATEST)
        if fmt:
            raise InvalidRequestError(
                f"unknown metrics format {fmt!r}; use 'prometheus' or omit it"
            )
        return Response(raw=metrics.as_json())
