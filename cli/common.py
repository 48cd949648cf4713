"""Helpers the command modules share: printing secrets and fields, flag values.

Success messages (``Success! ...``) are printed in table mode only, so that
with ``-format=json`` stdout is either one JSON document or empty.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from cli.errors import EXIT_OK, EXIT_USAGE, CliError, UsageError
from cli.flags import parse_duration
from cli.output import (
    MISSING,
    field_text,
    print_json,
    print_warnings,
    raw_field,
    secret_rows,
    table,
)

if TYPE_CHECKING:
    from cli.context import Context
    from cli.http import Json

__all__ = [
    "api_path",
    "duration_seconds",
    "key_values",
    "mount_path",
    "no_value",
    "print_done",
    "print_field",
    "print_secret",
    "read_input",
    "split_list",
    "success",
    "with_query",
]


def api_path(path: str, *, trailing_slash: bool = False) -> str:
    """``/v1/<path>`` with the user's path cleaned and percent-encoded."""
    clean = path.strip().strip("/")
    if not clean:
        raise UsageError("Error: a non-empty PATH is required")
    return "/v1/" + quote(clean, safe="/") + ("/" if trailing_slash else "")


def with_query(path: str, params: Mapping[str, Any]) -> str:
    """``path?k=v`` for the non-empty ``params`` (lists repeat the key)."""
    given = {k: v for k, v in params.items() if v is not None and v != ""}
    return f"{path}?{urlencode(given, doseq=True)}" if given else path


def mount_path(path: str) -> str:
    """A mount path as Vault prints it: no leading slash, one trailing slash."""
    clean = path.strip().strip("/")
    if not clean:
        raise UsageError("Error: a non-empty mount PATH is required")
    return clean + "/"


def no_value(path: str) -> CliError:
    return CliError(f"No value found at {path}", EXIT_USAGE)


def success(ctx: Context, message: str) -> int:
    """``Success! ...`` in table mode; nothing with ``-format=json``."""
    if not ctx.json:
        ctx.print(message)
    return EXIT_OK


def print_done(ctx: Context, response: Json | None, message: str) -> int:
    """What a change prints: its response (if any) as JSON, or warnings and ``message``."""
    if ctx.json:
        if response is not None:
            print_json(response, ctx.out)
        return EXIT_OK
    print_warnings(response, ctx.err)
    return success(ctx, message)


def print_field(ctx: Context, secret: Mapping[str, Any], field: str) -> int:
    """``-field=NAME``: one value, raw, for scripts (``$(coffer read -field=x ...)``)."""
    value = raw_field(secret, field)
    if value is MISSING:
        raise CliError(f'Field "{field}" not present in secret', EXIT_USAGE)
    ctx.print(field_text(value, ctx.json))
    return EXIT_OK


def print_secret(ctx: Context, response: Json) -> int:
    """A logical response: the JSON envelope, or warnings plus the Key/Value table."""
    if ctx.json:
        print_json(response, ctx.out)
        return EXIT_OK
    print_warnings(response, ctx.err)
    rows = secret_rows(response)
    if rows:
        ctx.print(table(rows))
    return EXIT_OK


def split_list(values: Iterable[str] | None) -> list[str]:
    """Repeated and comma-separated flag values as one list (``-policy=a,b -policy=c``)."""
    items: list[str] = []
    for value in values or ():
        items.extend(part.strip() for part in value.split(","))
    return [item for item in items if item]


def key_values(values: Iterable[str] | None, flag: str) -> dict[str, str]:
    """Repeated ``-flag=key=value`` options as a map."""
    result: dict[str, str] = {}
    for value in values or ():
        key, sep, item = value.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"Error: invalid -{flag} value {value!r}: expected key=value")
        result[key.strip()] = item
    return result


def duration_seconds(text: str) -> int:
    """A duration flag (already validated by argparse) in whole seconds."""
    try:
        return parse_duration(text)
    except ValueError:
        raise UsageError(f"Error: invalid duration {text!r}") from None


def read_input(ctx: Context, source: str, what: str) -> str:
    """The contents of file ``source``, or of stdin when it is ``-``."""
    if source == "-":
        return ctx.stdin.read()
    try:
        return Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"Error reading {what} from {source}: {exc.strerror or exc}") from None
