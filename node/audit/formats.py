"""An entry as the bytes of one log line: ``json`` (the default) or ``jsonx``.

A line is the device's ``prefix``, the entry, and a newline. ``jsonx`` is
IBM's XML rendering of JSON that the reference offers for XML-only
collectors; it is written on one line too.
"""

from __future__ import annotations

from typing import Any
from xml.sax.saxutils import escape as xml_escape
from xml.sax.saxutils import quoteattr

from sdk import jsoncodec

__all__ = ["render"]

_JSONX_HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    '<json:object xsi:schemaLocation="http://www.datapower.com/schemas/json jsonx.xsd" '
    'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
    'xmlns:json="http://www.ibm.com/xmlns/prod/2009/jsonx">'
)


def render(entry: dict[str, Any], format_: str = "json", prefix: str = "") -> bytes:
    body = _jsonx(entry) if format_ == "jsonx" else jsoncodec.dumps(entry)
    return prefix.encode() + body + b"\n"


def _jsonx(entry: dict[str, Any]) -> bytes:
    inner = "".join(_jsonx_value(value, key) for key, value in entry.items())
    return (_JSONX_HEAD + inner + "</json:object>").encode()


def _jsonx_value(value: Any, name: str | None) -> str:
    attr = f" name={quoteattr(name)}" if name is not None else ""
    if isinstance(value, dict):
        inner = "".join(_jsonx_value(v, k) for k, v in value.items())
        return f"<json:object{attr}>{inner}</json:object>"
    if isinstance(value, (list, tuple)):
        inner = "".join(_jsonx_value(v, None) for v in value)
        return f"<json:array{attr}>{inner}</json:array>"
    if isinstance(value, bool):
        return f"<json:boolean{attr}>{'true' if value else 'false'}</json:boolean>"
    if isinstance(value, (int, float)):
        return f"<json:number{attr}>{value}</json:number>"
    if value is None:
        return f"<json:null{attr}/>"
    return f"<json:string{attr}>{xml_escape(str(value))}</json:string>"
