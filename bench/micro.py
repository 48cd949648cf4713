"""Microbenchmarks of the API edge's JSON work: standard library against orjson.

Run-to-run spread of whole-server figures on this machine is larger than what
the codec changes, so the codec is also timed on its own, on the bodies the KV v2
workloads really send and receive.
"""

from __future__ import annotations

import json
import timeit
from typing import Any

from api import envelope, translate
from node.logical.response import Response
from sdk import jsoncodec

__all__ = ["codec_records"]

_VALUE = "x" * 100


def _kv2_read_response() -> Response:
    return Response(
        data={
            "data": {"value": _VALUE},
            "metadata": {
                "created_time": "2026-01-01T00:00:00.000000000Z",
                "custom_metadata": None,
                "deletion_time": "",
                "destroyed": False,
                "version": 7,
            },
        }
    )


def _per_call_us(fn: Any, number: int = 20000) -> float:
    best = min(timeit.repeat(fn, number=number, repeat=5))
    return 1e6 * best / number


def codec_records() -> list[dict[str, Any]]:
    response = _kv2_read_response()
    body = envelope.render(response, "00000000-0000-0000-0000-000000000000").body
    assert isinstance(body, bytes)
    decoded = json.loads(body)
    request = json.dumps({"data": {"value": _VALUE}}).encode()
    rows = [
        (
            "encode a KV v2 read answer",
            lambda: jsoncodec.stdlib_dumps(decoded),
            lambda: envelope.encode_json(decoded),
        ),
        (
            "decode a KV v2 write body",
            lambda: jsoncodec.stdlib_loads(request),
            lambda: translate.decode_json(request),
        ),
    ]
    return [
        {
            "section": "perfpass",
            "micro": True,
            "what": what,
            "bytes": len(body) if what.startswith("encode") else len(request),
            "stdlib_us": round(_per_call_us(old), 2),
            "orjson_us": round(_per_call_us(new), 2),
        }
        for what, old, new in rows
    ]
