"""Table and JSON rendering shared by the commands, shaped like Vault's.

Tables follow Vault's ``columnize`` settings (four-space gutter, ``n/a`` for
empty values, a dashed rule under the header) and values print the way Go's
``%v`` prints decoded JSON, so output diffed against ``vault`` looks the same.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

__all__ = [
    "EMPTY",
    "MISSING",
    "columns",
    "data_rows",
    "field_text",
    "format_value",
    "grid",
    "header_for_map",
    "human_duration",
    "pad_equal_signs",
    "print_json",
    "print_warnings",
    "raw_field",
    "secret_rows",
    "table",
    "ttl_value",
]

EMPTY = "n/a"
_GUTTER = "    "

Row = tuple[str, object]


def format_value(value: object) -> str:
    """Render a decoded JSON value like Go's ``%v`` (``true``, ``[a b]``, ``map[k:v]``)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return "[" + " ".join(format_value(item) for item in value) + "]"
    if isinstance(value, Mapping):
        items = sorted(value.items(), key=lambda item: str(item[0]))
        return "map[" + " ".join(f"{k}:{format_value(v)}" for k, v in items) + "]"
    return str(value)


def human_duration(seconds: int) -> str:
    """Vault's duration style: ``768h``, ``1m30s``, ``1h1s``, ``0s``, ``-1m``."""
    if seconds < 0:
        return "-" + human_duration(-seconds)
    if seconds == 0:
        return "0s"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        text = f"{hours}h{minutes}m{secs}s"
    elif minutes:
        text = f"{minutes}m{secs}s"
    else:
        return f"{secs}s"
    if text.endswith("m0s"):
        text = text[:-2]
    return text.replace("h0m", "h", 1)


def columns(rows: Iterable[Row]) -> str:
    """Two aligned columns; empty values show as ``n/a``."""
    cells = [(key, format_value(value) if value != "" else EMPTY) for key, value in rows]
    if not cells:
        return ""
    width = max(len(key) for key, _ in cells)
    return "\n".join(f"{key.ljust(width)}{_GUTTER}{value}".rstrip() for key, value in cells)


def table(rows: Iterable[Row], header: tuple[str, str] = ("Key", "Value")) -> str:
    """:func:`columns` under a header and a dashed rule, as ``vault`` prints."""
    rule = ("-" * len(header[0]), "-" * len(header[1]))
    return columns([header, rule, *rows])


def grid(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """Any number of aligned columns under a dashed rule (``secrets list``)."""
    cells = [list(header), ["-" * len(name) for name in header]]
    cells += [[format_value(v) if v != "" else EMPTY for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return "\n".join(
        _GUTTER.join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in cells
    )


def pad_equal_signs(header: str, total: int) -> str:
    """Vault's section titles: ``== Secret Path ==`` sized to what follows."""
    signs = total - (len(header) + 2)
    if signs <= 0:
        signs = 4
    if signs % 2:
        signs += 1
    half = "=" * (signs // 2)
    return f"{half} {header} {half}"


def header_for_map(header: str, data: Mapping[str, Any]) -> str:
    """A section title as wide as the Key/Value table of ``data`` below it."""
    width = 0
    for key, value in data.items():
        width = max(width, len(str(key)))
        if isinstance(value, Mapping):
            width = max([width, *(len(str(k)) for k in value)])
    return pad_equal_signs(header, width + len(_GUTTER) + len("Value"))


def ttl_value(key: str, value: object) -> object:
    """Vault prints numbers under TTL-like keys (``ttl``, ``*_ttl``, ``period``) as durations."""
    ttl_like = key in ("ttl", "period") or key.endswith(("_ttl", "_period"))
    if not ttl_like or isinstance(value, bool):
        return value
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return human_duration(int(value))
    return value


def data_rows(data: Mapping[str, Any]) -> list[Row]:
    """Key/Value rows of a data map, sorted, TTL-like values as durations."""
    return [
        (str(key), ttl_value(str(key), value))
        for key, value in sorted(data.items(), key=lambda item: str(item[0]))
    ]


def print_json(value: object, out: TextIO) -> None:
    """Indented JSON, like ``-format=json`` in Vault."""
    out.write(json.dumps(value, indent=2) + "\n")


def print_warnings(response: Mapping[str, Any] | None, err: TextIO) -> None:
    """Server warnings go to stderr in table mode (JSON output carries them)."""
    warnings: Sequence[object] = (response or {}).get("warnings") or []
    if not warnings:
        return
    err.write("WARNING! The following warnings were returned from Coffer:\n\n")
    err.writelines(f"  * {warning}\n" for warning in warnings)
    err.write("\n")


def _int(value: object) -> int:
    """A JSON number (or numeric string) as seconds; anything else is 0."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return 0


def secret_rows(secret: Mapping[str, Any]) -> list[Row]:
    """The Key/Value rows Vault prints for a logical response (read, write)."""
    rows: list[Row] = []
    lease = _int(secret.get("lease_duration"))
    if lease > 0:
        if secret.get("lease_id"):
            rows.append(("lease_id", secret["lease_id"]))
            rows.append(("lease_duration", human_duration(lease)))
            rows.append(("lease_renewable", bool(secret.get("renewable"))))
        else:
            rows.append(("refresh_interval", human_duration(lease)))
    auth = secret.get("auth")
    if isinstance(auth, Mapping):
        rows.append(("token", auth.get("client_token", "")))
        rows.append(("token_accessor", auth.get("accessor", "")))
        token_ttl = _int(auth.get("lease_duration"))
        rows.append(("token_duration", human_duration(token_ttl) if token_ttl else "∞"))
        rows.append(("token_renewable", bool(auth.get("renewable"))))
        rows.append(("token_policies", auth.get("token_policies") or []))
        rows.append(("identity_policies", auth.get("identity_policies") or []))
        rows.append(("policies", auth.get("policies") or []))
        metadata = auth.get("metadata")
        if isinstance(metadata, Mapping):
            rows.extend((f"token_meta_{k}", v) for k, v in sorted(metadata.items()))
    wrap = secret.get("wrap_info")
    if isinstance(wrap, Mapping):
        rows.append(("wrapping_token:", wrap.get("token", "")))
        rows.append(("wrapping_accessor:", wrap.get("accessor", "")))
        rows.append(("wrapping_token_ttl:", human_duration(_int(wrap.get("ttl")))))
        rows.append(("wrapping_token_creation_time:", wrap.get("creation_time", "")))
        rows.append(("wrapping_token_creation_path:", wrap.get("creation_path", "")))
        if wrap.get("wrapped_accessor"):
            rows.append(("wrapped_accessor:", wrap["wrapped_accessor"]))
    data = secret.get("data")
    if isinstance(data, Mapping):
        rows.extend(data_rows(data))
    return rows


MISSING = object()
"""What :func:`raw_field` returns when the field is not there."""


def raw_field(secret: Mapping[str, Any], field: str) -> object:
    """The value ``-field=NAME`` prints, looked up like Vault's ``RawField``.

    Token fields (``token``, ``token_accessor``, ...) come from ``auth``, the
    ``wrapping_*`` fields from ``wrap_info``, anything else from ``data`` and
    then the top level of the response. :data:`MISSING` if absent or null.
    """
    auth = secret.get("auth")
    wrap = secret.get("wrap_info")
    value: object = MISSING
    if isinstance(auth, Mapping):
        value = {
            "token": auth.get("client_token"),
            "token_accessor": auth.get("accessor"),
            "token_duration": auth.get("lease_duration"),
            "token_renewable": auth.get("renewable"),
            "token_policies": auth.get("token_policies"),
            "identity_policies": auth.get("identity_policies"),
            "policies": auth.get("policies"),
        }.get(field, MISSING)
    elif isinstance(wrap, Mapping):
        value = {
            "wrapping_token": wrap.get("token"),
            "wrapping_accessor": wrap.get("accessor"),
            "wrapping_token_ttl": wrap.get("ttl"),
            "wrapping_token_creation_time": wrap.get("creation_time"),
            "wrapping_token_creation_path": wrap.get("creation_path"),
            "wrapped_accessor": wrap.get("wrapped_accessor"),
        }.get(field, MISSING)
    if value is MISSING:
        data = secret.get("data")
        if isinstance(data, Mapping) and field in data:
            value = data[field]
        elif field == "refresh_interval" and "lease_duration" in secret:
            value = secret["lease_duration"]
        elif field not in ("data", "auth", "wrap_info") and field in secret:
            value = secret[field]
    return MISSING if value is None else value


def field_text(value: object, as_json: bool) -> str:
    """A ``-field`` value: strings raw; others as Go's ``%v`` (table) or JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value) if as_json else format_value(value)
