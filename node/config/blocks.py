"""Keeps repeated top-level blocks apart before pyhcl sees the text.

pyhcl merges ``listener "tcp" {...}`` blocks that share a label into one
object, key by key, so two listeners would silently become one. Before
parsing, every top-level ``listener "<label>"`` after the first gets a
numbered label (``tcp#coffer-2``); :func:`block_kind` strips the number again.
The scan knows HCL's strings, comments and heredocs, so text inside them is
never touched; JSON files need no help (their blocks are lists) and are left
alone, since there ``listener`` only ever appears inside a string.
"""

from __future__ import annotations

import re

__all__ = ["block_kind", "number_repeated_blocks"]

_MARK = "#coffer-"
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")
_HEREDOC = re.compile(r"<<-?([A-Za-z_][A-Za-z0-9_]*)[ \t]*\r?\n")
_LABELLED = re.compile(r'[ \t]+"((?:[^"\\\n]|\\.)*)"[ \t]*\{')


def block_kind(label: str) -> str:
    """The label as written (without the number :func:`number_repeated_blocks` added)."""
    return label.split(_MARK, 1)[0]


def _skip_string(text: str, i: int) -> int:
    """Index after the string that opens at ``text[i] == '"'``."""
    i += 1
    while i < len(text) and text[i] != '"':
        i += 2 if text[i] == "\\" else 1
    return i + 1


def _skip_heredoc(text: str, i: int, marker: str) -> int:
    for line in re.finditer(r"[^\n]*\n?", text[i:]):
        if line.group().strip() == marker:
            return i + line.end()
    return len(text)


def number_repeated_blocks(text: str, name: str = "listener") -> str:
    out: list[str] = []
    depth = seen = start = i = 0
    while i < len(text):
        c = text[i]
        if c == '"':
            i = _skip_string(text, i)
        elif c == "#" or text.startswith("//", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = len(text) if end < 0 else end + 2
        elif (heredoc := _HEREDOC.match(text, i)) is not None:
            i = _skip_heredoc(text, heredoc.end(), heredoc.group(1))
        elif c in "{[":
            depth, i = depth + 1, i + 1
        elif c in "}]":
            depth, i = max(depth - 1, 0), i + 1
        elif (word := _IDENT.match(text, i)) is not None and (
            i == 0 or not _word_char(text[i - 1])
        ):
            i = word.end()
            labelled = _LABELLED.match(text, i) if depth == 0 and word.group() == name else None
            if labelled is not None:
                seen += 1
                if seen > 1:
                    close = labelled.end(1)
                    out.append(text[start:close] + f"{_MARK}{seen}")
                    start = close
                i = labelled.end()
        else:
            i += 1
    out.append(text[start:])
    return "".join(out)


def _word_char(c: str) -> bool:
    return c.isalnum() or c in "_-"
