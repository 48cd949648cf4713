"""``coffer <command>``: argument parsing, dispatch and exit codes.

Exit codes follow the Vault CLI:

* 0 - success (``status``: unsealed; ``operator init -status``: initialized).
* 1 - a local failure: invalid settings or environment, unreadable input,
  an aborted prompt, a token that will not decode; and any ``status`` error,
  because ``status`` reserves 2 for "sealed".
* 2 - usage errors (argparse's own code, also for flags that clash), every
  error from talking to the server (an API error response or no response at
  all; Vault uses 2 here too), and the "no" answers: sealed, not initialized,
  no value found at a path.

Error messages go to stderr as ``Error <doing>: ...`` with the server's
``Code: N. Errors:`` list, and never include tokens or keys.

A response the server wrapped (``-wrap-ttl``) is printed here for every
command, as the ``wrapping_token:`` table (or the JSON envelope, or the
``-field`` asked for), and exits 0.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from cli.common import print_field, print_secret
from cli.context import Context, WrappedResponse
from cli.errors import EXIT_OK, EXIT_USAGE, CliError
from cli.flags import add_command, add_help, global_flags
from cli.settings import GlobalFlags

__all__ = ["COMMANDS", "build_parser", "main", "version_string"]

Handler = Callable[[argparse.Namespace, Context], int]

#: Each command module (its ``register``) and the commands it adds, with their
#: one-line help, in listing order. Only the invoked command's module is
#: imported and its parsers built: building all of them (Vault-style switches
#: carry dozens of option strings each) cost ~0.15 s per run. ``coffer -h``
#: lists the others from this table; a test keeps it equal to the modules.
COMMANDS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("cli.operator", (("operator", "operator commands (init, unseal, seal, ...)"),)),
    ("cli.status", (("status", "print the seal and HA status"),)),
    (
        "cli.generic",
        (
            ("read", "read data at PATH (k=v pairs go in the query)"),
            ("write", "write data (k=v, k=@file, k=-, or - for a JSON object on stdin) to PATH"),
            ("delete", "delete data at PATH"),
            ("list", "list keys under PATH"),
        ),
    ),
    ("cli.kv", (("kv", "KV secrets engine commands (version 1 and 2)"),)),
    (
        "cli.mounts",
        (
            ("secrets", "enable, list, tune, move and disable engines"),
            ("auth", "enable, list, tune and disable auth methods"),
        ),
    ),
    ("cli.audit", (("audit", "enable, list and disable audit devices"),)),
    ("cli.policy", (("policy", "write, read, list, delete and format ACL policies"),)),
    ("cli.token", (("token", "create, look up, renew and revoke tokens; check capabilities"),)),
    ("cli.lease", (("lease", "look up, renew and revoke leases (tokens' leases)"),)),
    (
        "cli.login",
        (
            ("login", "authenticate (token, userpass, idp or any method) and store the token"),
            ("unwrap", "print the response wrapped in TOKEN (default: the client token)"),
        ),
    ),
)


def version_string() -> str:
    # importlib.metadata (and the email package under it) is slow to import:
    # only ``version`` and ``-version`` pay for it.
    from importlib import metadata

    try:
        version = metadata.version("coffer")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return f"Coffer v{version}"


def _run_version(args: argparse.Namespace, ctx: Context) -> int:
    ctx.print(version_string())
    return EXIT_OK


class _VersionAction(argparse.Action):
    """argparse's ``version`` action, with the version looked up only when asked."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: Any):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> NoReturn:
        sys.stdout.write(version_string() + "\n")
        parser.exit()


def invoked_command(argv: list[str]) -> str | None:
    """The command argparse will dispatch on: the first word not a flag.

    The top-level parser has only ``-h`` and ``-v``, neither taking a value.
    """
    return next((word for word in argv if not word.startswith("-")), None)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``coffer`` parser; with ``command``, only that command's parsers are real.

    The other commands are placeholders with the same name and help, enough
    for the ``coffer -h`` listing and argparse's "invalid choice" message.
    """
    parser = argparse.ArgumentParser(
        prog="coffer",
        description="Coffer command-line client (Vault-compatible flags and output).",
        epilog="`coffer server -h` describes the server. Flags accept -name=value or --name value.",
        add_help=False,
        allow_abbrev=False,
    )
    add_help(parser)
    parser.add_argument(
        "-v",
        "-version",
        "--version",
        action=_VersionAction,
        help="show program's version number and exit",
    )
    commands = parser.add_subparsers(
        title="commands", dest="command", metavar="COMMAND", required=True
    )
    parents: list[argparse.ArgumentParser] = []
    for module, names in COMMANDS:
        if command is None or any(name == command for name, _ in names):
            parents = parents or [global_flags()]
            importlib.import_module(module).register(commands, parents)
        else:
            for name, summary in names:
                commands.add_parser(name, help=summary, add_help=False)
    add_command(commands, "version", "print the client version").set_defaults(handler=_run_version)
    return parser


def _flags(args: argparse.Namespace) -> GlobalFlags:
    return GlobalFlags(
        address=getattr(args, "address", None),
        token=getattr(args, "token", None),
        namespace=getattr(args, "namespace", None),
        ca_cert=getattr(args, "ca_cert", None),
        ca_path=getattr(args, "ca_path", None),
        tls_skip_verify=getattr(args, "tls_skip_verify", None),
        output_format=getattr(args, "output_format", None),
        wrap_ttl=getattr(args, "wrap_ttl", None),
    )


def _home() -> Path | None:
    try:
        return Path.home()
    except (RuntimeError, KeyError):
        return None


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return EXIT_OK
    return exc.code if isinstance(exc.code, int) else EXIT_USAGE


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parse, letting ``k=v`` data follow flags: ``write p a=1 -force b=2``.

    argparse takes a command's positionals in one go, so data after a flag
    would be "unrecognized"; for commands with DATA it is appended instead.
    """
    args, extras = parser.parse_known_args(argv)
    if extras:
        if isinstance(getattr(args, "data", None), list) and not any(
            item.startswith("-") and item != "-" for item in extras
        ):
            args.data.extend(extras)
        else:
            parser.error(f"unrecognized arguments: {' '.join(extras)}")
    return args


def _print_wrapped(args: argparse.Namespace, ctx: Context, response: dict[str, object]) -> int:
    field = getattr(args, "field", None)
    if field:
        return print_field(ctx, response, field)
    return print_secret(ctx, response)


def main(argv: list[str]) -> int:
    """Run one client command; returns the process exit code."""
    parser = build_parser(invoked_command(argv) or "")
    try:
        args = _parse(parser, argv)
    except SystemExit as exc:  # -h, -version and usage errors
        return _exit_code(exc)
    ctx = Context(
        _flags(args),
        env=os.environ,
        home=_home(),
        stdin=sys.stdin,
        stdout=sys.stdout,
        stderr=sys.stderr,
    )
    handler: Handler = args.handler
    try:
        try:
            return handler(args, ctx)
        except WrappedResponse as wrapped:
            return _print_wrapped(args, ctx, wrapped.response)
    except CliError as exc:
        sys.stdout.flush()
        ctx.warn(exc.message)
        return exc.exit_code
    except KeyboardInterrupt:
        ctx.warn("Interrupted")
        return 130
