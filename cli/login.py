"""``coffer login [-method=TYPE] [TOKEN | K=V...]`` and ``coffer unwrap [TOKEN]``.

``login`` ends with a token saved to ``~/.coffer-token`` (mode 0600), where
later commands find it when neither ``-token`` nor ``COFFER_TOKEN``/
``VAULT_TOKEN`` is set. How the token is had depends on ``-method``:

* ``token`` (the default): TOKEN is checked with ``auth/token/lookup-self``
  (sent as that token, not the configured one). Without TOKEN it is prompted
  for, hidden (or read from piped stdin).
* ``userpass`` and ``idp``: ``username=`` (default ``$LOGNAME``/``$USER``, as
  Vault's CLI) and ``password=`` are posted to ``auth/<path>/login/<username>``
  with any other pairs (``totp=`` for idp). A missing password is prompted for
  without echo; piped stdin gives it as one line.
* anything else: the pairs are posted as given to ``auth/<path>/login``.

``-path`` defaults to the method's name. Logins are sent without a client
token: they are unauthenticated, and a stale configured token must not matter.

``unwrap`` redeems a response-wrapping token: the TOKEN argument, or else the
client token itself (``COFFER_TOKEN=<wrapping token> coffer unwrap``).
"""

from __future__ import annotations

import argparse
import getpass
import textwrap
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from cli.common import print_field, print_secret
from cli.errors import EXIT_OK, EXIT_USAGE, CliError, UsageError
from cli.flags import add_command, add_option, add_switch
from cli.generic import parse_data, print_list
from cli.output import print_json

if TYPE_CHECKING:
    from cli.context import Context
    from cli.flags import Subparsers
    from cli.http import Json

__all__ = ["login_secret", "register"]

#: Methods whose login path ends in the user name (``auth/<path>/login/<username>``).
_USER_METHODS = ("userpass", "idp")
_PASSWORD_PROMPT = "Password (will be hidden): "


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
    method = str(args.method).strip().lower()
    values = [v for v in (args.subject, *args.data) if v is not None]
    if not method:
        raise UsageError("Error: -method must not be empty")
    if method == "token":
        token = _token_argument(values, ctx)
        secret = _check_token(token, ctx)
    else:
        secret = _method_login(method, (args.path or method).strip("/"), values, ctx)
        token = secret["auth"]["client_token"]
    return _finish(args, ctx, token, secret)


def _token_argument(values: list[str], ctx: Context) -> str:
    """TOKEN, ``token=TOKEN``, ``-`` (stdin) or, with nothing given, a hidden prompt."""
    if len(values) > 1:
        raise UsageError(
            f"Error: too many arguments for the token method (expected 1, got {len(values)})"
        )
    token = values[0] if values else None
    if token is not None and token.startswith("token="):
        token = token.removeprefix("token=")
    return ctx.secret_argument(token, "Token (will be hidden): ", "token")


def _check_token(token: str, ctx: Context) -> dict[str, Any]:
    lookup = ctx.call(
        "authenticating: error looking up token",
        "GET",
        "/v1/auth/token/lookup-self",
        token=token,
    )
    if not isinstance(lookup, dict) or not isinstance(lookup.get("data"), dict):
        raise CliError("Error authenticating: the server returned no token information", EXIT_USAGE)
    return login_secret(token, lookup)


def _method_login(method: str, path: str, values: list[str], ctx: Context) -> dict[str, Any]:
    """Post the ``k=v`` pairs to the method's login endpoint; the response holds ``auth``."""
    if any(part in ("", ".", "..") for part in path.split("/")):
        raise UsageError(f"Error: invalid -path {path!r}")
    body = parse_data(values, ctx.stdin)
    if method in _USER_METHODS:
        username = str(body.pop("username", "") or _env_user(ctx)).strip()
        if not username:
            raise UsageError("Error: username=... is required (neither LOGNAME nor USER is set)")
        if not body.get("password"):
            body["password"] = _read_password(ctx)
        url = f"/v1/auth/{path}/login/{quote(username, safe='')}"
    else:
        url = f"/v1/auth/{path}/login"
    # token="": no client token; logins are unauthenticated.
    response = ctx.call("authenticating", "POST", url, body, token="")
    if not isinstance(response, dict) or not _issued_token(response):
        raise CliError("Error authenticating: the server returned no token", EXIT_USAGE)
    return response


def _issued_token(response: dict[str, Any]) -> bool:
    auth = response.get("auth")
    return isinstance(auth, dict) and bool(auth.get("client_token"))


def _env_user(ctx: Context) -> str:
    return ctx.env.get("LOGNAME") or ctx.env.get("USER") or ""


def _read_password(ctx: Context) -> str:
    """A hidden prompt on a terminal, else one line of stdin (only its line end is cut).

    Unlike tokens, passwords keep their spaces, so this does not strip them.
    """
    try:
        tty = ctx.stdin.isatty()
        value = getpass.getpass(_PASSWORD_PROMPT) if tty else ctx.stdin.readline()
    except (EOFError, KeyboardInterrupt):
        ctx.warn("")
        raise CliError("Error reading password: no input") from None
    value = value.rstrip("\r\n")
    if not value:
        raise CliError("Error: password must not be empty")
    return value


def _finish(args: argparse.Namespace, ctx: Context, token: str, secret: dict[str, Any]) -> int:
    """Store the token (unless told not to) and print what the flags ask for."""
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
        "authenticate (token, userpass, idp or any method) and store the token",
        parents=parents,
        description=(
            "Log in and store the token in ~/.coffer-token for later commands.\n\n"
            "  coffer login                                  # token method: prompts\n"
            "  coffer login -no-store hvs.…                  # only checks the token\n"
            "  coffer login -method=userpass username=alice  # prompts for the password\n"
            "  coffer login -method=idp username=bob totp=123456\n"
            "  coffer login -method=approle role_id=… secret_id=…  # auth/approle/login"
        ),
    )
    login.add_argument("subject", nargs="?", metavar="TOKEN | K=V")
    login.add_argument("data", nargs="*", metavar="K=V", help="login data (other methods)")
    add_option(
        login, "method", default="token", metavar="TYPE", help="auth method (default: token)"
    )
    add_option(login, "path", metavar="PATH", help="mount path of the method (default: TYPE)")
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
