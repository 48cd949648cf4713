"""Vault-style flags on top of argparse.

Vault's CLI uses Go's ``flag`` package: long flags take one dash
(``-key-shares=5``) and switches accept ``-reset=false``. argparse accepts
single-dash long options when declared that way, so every flag is declared as
both ``-name`` and ``--name``; switches also get the literal spellings
``-name=true`` / ``-name=false`` (and Go's other boolean words) as hidden
option strings, which argparse matches exactly before it tries to split ``=``.
"""

from __future__ import annotations

import argparse
import re
from typing import TYPE_CHECKING, Any, TypeAlias

from sdk.durations import UNIT_SECONDS, UNITS

__all__ = [
    "FALSE_WORDS",
    "TRUE_WORDS",
    "Container",
    "add_command",
    "add_help",
    "add_option",
    "add_switch",
    "duration",
    "global_flags",
    "parse_bool",
    "parse_duration",
]

# Go's strconv.ParseBool vocabulary, plus the usual shell spellings.
TRUE_WORDS = ("1", "t", "T", "true", "True", "TRUE", "y", "yes", "on")
FALSE_WORDS = ("0", "f", "F", "false", "False", "FALSE", "n", "no", "off")
_TRUE = frozenset(w.lower() for w in TRUE_WORDS)
_FALSE = frozenset(w.lower() for w in FALSE_WORDS)

# Parsers and argument groups share this base; typeshed exposes it.
Container = argparse._ActionsContainer
if TYPE_CHECKING:
    Subparsers: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]


def parse_bool(text: str) -> bool | None:
    """``True``/``False`` for a recognised boolean word, ``None`` otherwise."""
    word = text.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    return None


_DURATION_PART = re.compile(rf"(\d+(?:\.\d*)?|\.\d+)({UNITS})")


def parse_duration(text: str) -> int:
    """Whole seconds from ``90``, ``90s``, ``1h30m`` or ``1.5h`` (Go durations plus ``d``).

    Raises ``ValueError`` for anything else, including negative durations.
    """
    body = text.strip()
    if re.fullmatch(r"\d+", body):
        return int(body)
    parts = _DURATION_PART.findall(body)
    if not body or "".join(number + unit for number, unit in parts) != body:
        raise ValueError(f"invalid duration {text!r}")
    return int(sum(float(number) * UNIT_SECONDS[unit] for number, unit in parts))


def duration(text: str) -> str:
    """argparse ``type`` for duration flags: validated, passed on as written."""
    try:
        parse_duration(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid duration {text!r} (use e.g. 30s, 10m, 1h30m)"
        ) from None
    return text.strip()


def add_help(parser: argparse.ArgumentParser) -> None:
    """``-h``, ``-help`` and ``--help``, as the Vault CLI accepts all three."""
    parser.add_argument(
        "-h", "-help", "--help", action="help", help="show this help message and exit"
    )


def add_option(parser: Container, name: str, **kwargs: Any) -> None:
    """A flag taking a value, spelled ``-name=V``, ``-name V`` or ``--name V``."""
    kwargs.setdefault("dest", name.replace("-", "_"))
    parser.add_argument(f"-{name}", f"--{name}", **kwargs)


def add_switch(
    parser: Container,
    name: str,
    help_text: str,
    *,
    default: bool | None = False,
) -> None:
    """A boolean flag: ``-name``, ``--name``, ``-name=true`` or ``-name=false``."""
    dest = name.replace("-", "_")
    parser.add_argument(
        f"-{name}",
        f"--{name}",
        dest=dest,
        action="store_const",
        const=True,
        default=default,
        help=help_text,
    )
    for value, words in ((True, TRUE_WORDS), (False, FALSE_WORDS)):
        spellings = [f"{dash}{name}={word}" for dash in ("-", "--") for word in words]
        parser.add_argument(
            *spellings, dest=dest, action="store_const", const=value, help=argparse.SUPPRESS
        )


def global_flags() -> argparse.ArgumentParser:
    """The connection and output flags every server-facing command accepts.

    Defaults are ``None`` so :mod:`cli.settings` can tell "not given"
    apart from "given" and fall back to the environment.
    """
    parent = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    group = parent.add_argument_group("connection and output")
    add_option(group, "address", metavar="ADDR", help="server address (env COFFER_ADDR)")
    add_option(group, "token", metavar="TOKEN", help="client token (env COFFER_TOKEN)")
    add_option(group, "namespace", metavar="NS", help="namespace (env COFFER_NAMESPACE)")
    add_option(group, "ca-cert", metavar="PATH", help="CA bundle file (env COFFER_CACERT)")
    add_option(group, "ca-path", metavar="DIR", help="CA certificate directory (env COFFER_CAPATH)")
    add_switch(
        group,
        "tls-skip-verify",
        "do not verify the server's TLS certificate (env COFFER_SKIP_VERIFY)",
        default=None,
    )
    add_option(
        group,
        "format",
        dest="output_format",
        choices=("table", "json"),
        help="output format (env COFFER_FORMAT, default table)",
    )
    add_option(
        group,
        "wrap-ttl",
        type=duration,
        metavar="DURATION",
        help="ask the server to wrap the response in a single-use token valid this long "
        "(env COFFER_WRAP_TTL)",
    )
    return parent


def add_command(
    subparsers: Subparsers,
    name: str,
    summary: str,
    *,
    parents: list[argparse.ArgumentParser] | None = None,
    description: str | None = None,
) -> argparse.ArgumentParser:
    """A subcommand parser with Vault-style help flags and no abbreviations."""
    parser = subparsers.add_parser(
        name,
        help=summary,
        description=description or summary,
        parents=parents or [],
        add_help=False,
        allow_abbrev=False,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_help(parser)
    return parser
