"""Canonical HCL for ``coffer policy fmt``: parse with pyhcl, print it back tidily.

The layout is the one ``hclfmt`` gives policies: two-space indents, labeled
blocks (``path "secret/*" { ... }``) separated by blank lines, ``=`` aligned
across consecutive one-line attributes, one-line lists of scalars, and
object values (``allowed_parameters = { "k" = [] }``) with quoted keys.

Comments are kept: pyhcl can hand them over as items in the object they sit
in, so full-line comments stay above what they annotate and end-of-line
comments stay at the end of their line. pyhcl cannot keep a comment that sits
inside a list or between a key and its value; such input is refused rather
than silently losing the comment. JSON policies (first character ``{``) come
out as HCL.

Blocks are kept as pairs in source order, repeats included, so nothing is
merged or reordered.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from hcl.lexer import Lexer
from hcl.parser import HclParser

__all__ = ["HclFormatError", "format_hcl"]

_INDENT = "  "
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_RESERVED = frozenset({"true", "false"})


class HclFormatError(Exception):
    """The input does not parse, or cannot be printed without losing something."""


class _Obj(list[tuple[Any, Any]]):
    """An HCL object as ordered ``(key, value)`` pairs; repeats kept."""


@dataclass(frozen=True, slots=True)
class _Comment:
    text: str
    trailing: bool  # written after code on the same line
    blank_after: bool  # a blank line follows it in the source


_COMMENT_KEY = object()


class _CommentLexer(Lexer):  # type: ignore[misc]
    """pyhcl's lexer, but line comments keep their ``#`` or ``//`` marker."""

    def t_COMMENT(self, t: Any) -> Any:
        r"(\#|(//)).*"
        if "COMMENT" not in self.can_export_comments:
            return None
        t.value = t.value.rstrip()
        return t


class _FormatParser(HclParser):  # type: ignore[misc]
    """pyhcl's grammar with objects as pairs and comments as items."""

    start = "top"  # ply takes the first rule by line number otherwise: ours
    source = ""

    def objectlist_flat(self, lt: list[tuple[Any, Any]], replace: bool) -> _Obj:
        return _Obj(lt)

    def p_comment_0(self, p: Any) -> None:
        """
        block : COMMENT
              | MULTICOMMENT
        """
        start = p.lexpos(1)
        line_start = self.source.rfind("\n", 0, start) + 1
        trailing = bool(self.source[line_start:start].strip())
        after = self.source[start + len(p[1]) :].split("\n", 2)
        blank_after = len(after) > 2 and not after[1].strip()
        p[0] = (_COMMENT_KEY, _Comment(p[1].rstrip(), trailing, blank_after))

    def parse_text(self, text: str, *, comments: bool) -> Any:
        self.source = text
        lexer = _CommentLexer(export_comments="ALL" if comments else None)
        return self.yacc.parse(text, lexer=lexer, debug=False)


_parser: _FormatParser | None = None


def _load(text: str) -> Any:
    global _parser
    if text.lstrip().startswith("{"):
        try:
            return json.loads(text, object_pairs_hook=_Obj)
        except json.JSONDecodeError as exc:
            raise HclFormatError(f"invalid JSON: {exc}") from None
    if _parser is None:
        _parser = _FormatParser()
    try:
        return _parser.parse_text(text, comments=True)
    except ValueError as first:
        try:
            _parser.parse_text(text, comments=False)
        except ValueError as exc:
            raise HclFormatError(_locate(text, str(exc))) from None
        raise HclFormatError(
            f"{_locate(text, str(first))}: a comment there cannot be kept; "
            "move it onto a line of its own between attributes"
        ) from None


_POSITION = re.compile(r"Line (\d+), column (\d+)(?:, index \d+)?: (.*)", re.DOTALL)


def _locate(text: str, message: str) -> str:
    """pyhcl reports a character offset as "column"; make it a real column."""
    found = _POSITION.fullmatch(message)
    if found is None:
        return message
    offset = int(found.group(2))
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return f"line {found.group(1)}, column {column}: {found.group(3)}"


# --- printing ------------------------------------------------------------------------------


@dataclass
class _Entry:
    kind: str  # "comment", "attr" (one line), "multi" (multi-line attribute), "block"
    lines: list[str]
    key: str = ""
    value: str = ""
    suffix: list[str] = field(default_factory=list)
    blank_after: bool = False


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _key(key: Any, quoted: bool) -> str:
    if not isinstance(key, str):
        raise HclFormatError(f"unsupported key {key!r}")
    if not quoted and _IDENTIFIER.fullmatch(key) and key not in _RESERVED:
        return key
    return _quote(key)


def _scalar(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        if "\n" not in value:
            return _quote(value)
        return None
    if value is None:
        raise HclFormatError("null values cannot be written as HCL")
    return None


def _heredoc(value: str) -> list[str]:
    """``<<EOT``: pyhcl's value is exactly the lines between the markers."""
    marker = "EOT"
    lines = value.split("\n")
    while any(line.strip().endswith(marker) for line in lines):
        marker += "_"
    return [f"<<{marker}", *lines, marker]


def _is_object(value: Any) -> bool:
    return isinstance(value, _Obj) or (isinstance(value, dict) and not value)


def _value(value: Any, depth: int) -> list[str]:
    """Lines of ``value``; the first continues a line, the rest are fully indented."""
    text = _scalar(value)
    if text is not None:
        return [text]
    pad = _INDENT * depth
    if isinstance(value, str):
        return _heredoc(value)
    if isinstance(value, list) and not isinstance(value, _Obj):
        if not value:
            return ["[]"]
        # A heredoc cannot be followed by "," on its marker line; pyhcl keeps raw
        # newlines inside quotes, so multi-line strings in lists stay quoted.
        rendered = [
            [_quote(item)] if isinstance(item, str) else _value(item, depth + 1) for item in value
        ]
        if all(len(lines) == 1 for lines in rendered) and not any(
            isinstance(item, list | dict) for item in value
        ):
            return ["[" + ", ".join(lines[0] for lines in rendered) + "]"]
        lines = ["["]
        for item_lines in rendered:
            lines.append(_INDENT * (depth + 1) + item_lines[0])
            lines.extend(item_lines[1:])
            lines[-1] += ","
        lines.append(pad + "]")
        return lines
    if _is_object(value):
        items = list(value) if isinstance(value, _Obj) else []
        if not items:
            return ["{}"]
        return ["{", *_body(items, depth + 1, top=False, quote_keys=True), pad + "}"]
    raise HclFormatError(f"unsupported value {value!r}")


def _labels(value: Any) -> tuple[list[str], Any] | None:
    """``(labels, body)`` when ``value`` is pyhcl's wrapper for ``key "l1" "l2" {...}``."""
    labels: list[str] = []
    while isinstance(value, dict) and len(value) == 1:
        ((label, inner),) = value.items()
        if not isinstance(label, str):
            raise HclFormatError("a comment between a block's labels cannot be kept")
        labels.append(label)
        value = inner
    return (labels, value) if labels and _is_object(value) else None


def _block_lines(key: str, labels: list[str], body: Any, depth: int) -> list[str]:
    pad = _INDENT * depth
    head = " ".join([key, *(_quote(label) for label in labels)])
    items = list(body) if isinstance(body, _Obj) else []
    if not items:
        return [f"{pad}{head} {{}}"]
    return [f"{pad}{head} {{", *_body(items, depth + 1, top=False, quote_keys=False), pad + "}"]


def _blocks(key: Any, value: Any, depth: int, top: bool) -> list[list[str]] | None:
    """The blocks ``key: value`` prints as, or ``None`` for a plain attribute."""
    name = _key(key, quoted=False)
    found = _labels(value)
    if found is not None:
        return [_block_lines(name, found[0], found[1], depth)]
    if not top:
        return None
    # JSON (or `path = {...}`): {"path": {"secret/*": {...}}} or a list of such maps.
    groups = value if isinstance(value, list) and not isinstance(value, _Obj) else [value]
    if not all(isinstance(group, _Obj) and group for group in groups):
        return None
    entries = [pair for group in groups for pair in group]
    if not all(isinstance(label, str) and _is_object(body) for label, body in entries):
        return None
    return [_block_lines(name, [label], body, depth) for label, body in entries]


def _body(items: list[tuple[Any, Any]], depth: int, *, top: bool, quote_keys: bool) -> list[str]:
    pad = _INDENT * depth
    entries: list[_Entry] = []
    for key, value in items:
        if key is _COMMENT_KEY:
            comment: _Comment = value
            if comment.trailing and entries and "\n" not in comment.text:
                entries[-1].suffix.append(comment.text)
                continue
            lines = comment.text.split("\n")
            entries.append(
                _Entry("comment", [pad + lines[0], *lines[1:]], blank_after=comment.blank_after)
            )
            continue
        blocks = _blocks(key, value, depth, top) if not quote_keys else None
        if blocks is not None:
            entries.extend(_Entry("block", lines) for lines in blocks)
            continue
        name = _key(key, quote_keys)
        lines = _value(value, depth)
        if len(lines) == 1:
            entries.append(_Entry("attr", [], key=name, value=lines[0]))
        else:
            entries.append(_Entry("multi", [f"{pad}{name} = {lines[0]}", *lines[1:]]))
    return _layout(entries, pad, top)


def _layout(entries: list[_Entry], pad: str, top: bool) -> list[str]:
    # Align `=` across each run of consecutive one-line attributes.
    run: list[_Entry] = []
    for entry in [*entries, _Entry("end", [])]:
        if entry.kind == "attr":
            run.append(entry)
            continue
        width = max((len(e.key) for e in run), default=0)
        for item in run:
            item.lines = [f"{pad}{item.key.ljust(width)} = {item.value}"]
        run = []
    out: list[str] = []
    previous: _Entry | None = None
    for entry in entries:
        if top and previous is not None and _blank_between(previous, entry):
            out.append("")
        lines = list(entry.lines)
        if entry.suffix:
            lines[-1] += "  " + "  ".join(entry.suffix)
        out.extend(lines)
        previous = entry
    return out


def _blank_between(previous: _Entry, entry: _Entry) -> bool:
    """Top level: blocks stand apart; comments stay with what follows them."""
    if previous.kind == "comment":
        return previous.blank_after
    if previous.kind in ("block", "multi"):
        return True
    return entry.kind in ("block", "multi", "comment")


def format_hcl(text: str) -> str:
    """``text`` (HCL or JSON) as canonical HCL, ending in one newline."""
    document = _load(text)
    if not isinstance(document, _Obj):
        raise HclFormatError("the document is not an object")
    lines = _body(list(document), 0, top=True, quote_keys=False)
    return "\n".join(lines).rstrip("\n") + "\n" if lines else ""
