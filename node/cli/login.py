"""``coffer login [TOKEN]`` and ``coffer unwrap [TOKEN]``.

``login`` supports the token method, as ``vault login`` does by default: the
token is checked with ``auth/token/lookup-self`` (sent as that token, not the
configured one) and saved to ``~/.coffer-token`` (mode 0600), where later
commands find it when neither ``-token`` nor ``COFFER_TOKEN``/``VAULT_TOKEN``
is set. Without TOKEN it is prompted for, hidden (or read from piped stdin).

``unwrap`` redeems a response-wrapping token: the TOKEN argument, or else the
client token itself (``COFFER_TOKEN=<wrapping token> coffer unwrap``).
"""

from __future__ import annotations

import argparse
import textwrap
from typing import TYPE_CHECKING, Any

from node.cli.common import print_field, print_secret
from node.cli.errors import EXIT_OK, EXIT_USAGE, CliError, UsageError
from node.cli.flags import add_command, add_option, add_switch
from node.cli.generic import print_list
from node.cli.output import print_json

if TYPE_CHECKING:
    from node.cli.context import Context
    from node.cli.flags import Subparsers
    from node.cli.http import Json

__all__ = ["login_secret", "register"]

_METHODS = ("token",)


def _wrap(text: str) -> str:
    return textwrap.fill(text, width=78)


def login_secret(token: str, lookup: Json) -> dict[str, Any]:
    """A lookup-self response turned into the ``auth`` shape ``vault login`` prints."""
    raw = lookup.get("data")
    data: dict[str, Any] = raw if isinstance(raw, dict) else {}
    policies = list(data.get("policies") or [])
    ttl = data.get("ttl")
    return {
        "request_id": lookup.get("request_id", ""),
        "lease_id": "",
        "lease_duration": 0,
        "renewable": False,
        "data": None,
        "warnings": lookup.get("warnings"),
        "wrap_info": None,
        "auth": {
            "client_token": token,
            "accessor": data.get("accessor", ""),
            "policies": policies,
            "token_policies": policies,
            "identity_policies": list(data.get("identity_policies") or []),
            "metadata": data.get("meta") or {},
            "lease_duration": ttl if isinstance(ttl, int) and not isinstance(ttl, bool) else 0,
            "renewable": bool(data.get("renewable")),
            "entity_id": data.get("entity_id", ""),
            "token_type": data.get("type", ""),
            "orphan": bool(data.get("orphan")),
        },
    }


def run_login(args: argparse.Namespace, ctx: Context) -> int:
    method = (args.method or "token").strip().lower()
    if method not in _METHODS:
        raise UsageError(f'Error: unsupported auth method "{method}" (available: token)')
    token: str | None = args.subject
    if token == "-":
        token = ctx.stdin.read().strip()
    if not token:
        token = ctx.read_secret("Token (will be hidden): ", "token")
    token = token.strip()
    lookup = ctx.call(
        "authenticating: error looking up token",
        "GET",
        "/v1/auth/token/lookup-self",
        token=token,
    )
    if not isinstance(lookup, dict) or not isinstance(lookup.get("data"), dict):
        raise CliError("Error authenticating: the server returned no token information", EXIT_USAGE)
    secret = login_secret(token, lookup)
    no_store = args.no_store or args.token_only
    if not no_store:
        ctx.store_token(token)
        env_token = next((n for n in ("COFFER_TOKEN", "VAULT_TOKEN") if ctx.env.get(n)), None)
        if env_token:
            ctx.warn(
                _wrap(
                    f"WARNING! The {env_token} environment variable is set! It takes "
                    "precedence over the stored token; unset it to use the token you "
                    "just logged in with."
                )
                + "\n"
            )
    elif not args.token_only:
        ctx.warn(
            _wrap(
                "The token was not stored. Set the COFFER_TOKEN environment variable "
                "or pass the token below with -token on each request."
            )
            + "\n"
        )
    if args.no_print:
        return EXIT_OK
    if args.token_only:
        ctx.print(token)
        return EXIT_OK
    if args.field:
        return print_field(ctx, secret, args.field)
    if not ctx.json:
        if no_store:
            ctx.print(_wrap("Success! You are now authenticated.") + "\n")
        else:
            ctx.print(
                _wrap(
                    "Success! You are now authenticated. The token information displayed "
                    "below is already stored in ~/.coffer-token. You do NOT need to run "
                    '"coffer login" again. Future Coffer requests will automatically use '
                    "this token."
                )
                + "\n"
            )
    return print_secret(ctx, secret)


def run_unwrap(args: argparse.Namespace, ctx: Context) -> int:
    token = (args.subject or "").strip()
    body: dict[str, Any] | None = None
    use_token: str | None = None
    if token:
        if not ctx.settings.token:
            use_token = token  # Vault's client does the same: the wrapping token authenticates
        elif token != ctx.settings.token:
            body = {"token": token}
    response = ctx.call("unwrapping", "PUT", "/v1/sys/wrapping/unwrap", body, token=use_token)
    if response is None:
        raise CliError("Could not find wrapped response", EXIT_USAGE)
    if args.field:
        return print_field(ctx, response, args.field)
    data = response.get("data")
    if isinstance(data, dict) and set(data) == {"keys"} and isinstance(data["keys"], list):
        return print_list(ctx, response, "the wrapped response")
    if ctx.json:
        print_json(response, ctx.out)
        return EXIT_OK
    return print_secret(ctx, response)


def register(subparsers: Subparsers, parents: list[argparse.ArgumentParser]) -> None:
    login = add_command(
        subparsers,
        "login",
        "authenticate with a token and store it in ~/.coffer-token",
        parents=parents,
        description=(
            "Check TOKEN (prompted for, hidden, if omitted; '-' reads stdin) and store it\n"
            "in ~/.coffer-token for later commands.\n\n"
            "  coffer login                 # prompts\n"
            "  coffer login -no-store hvs.…  # only checks it"
        ),
    )
    login.add_argument("subject", nargs="?", metavar="TOKEN")
    add_option(login, "method", default="token", metavar="TYPE", help="auth method (token)")
    add_switch(login, "no-store", "do not store the token")
    add_switch(login, "no-print", "print nothing on success")
    add_switch(login, "token-only", "print only the token (implies -no-store)")
    add_option(login, "field", metavar="NAME", help="print only this field, raw")
    login.set_defaults(handler=run_login)

    unwrap = add_command(
        subparsers,
        "unwrap",
        "print the response wrapped in TOKEN (default: the client token)",
        parents=parents,
    )
    unwrap.add_argument("subject", nargs="?", metavar="TOKEN")
    add_option(unwrap, "field", metavar="NAME", help="print only this field, raw")
    unwrap.set_defaults(handler=run_unwrap)
