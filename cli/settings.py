"""Where the client's connection and output settings come from.

Each setting is taken from the first of: its command-line flag, the
``COFFER_*`` environment variable, the matching ``VAULT_*`` variable (so
existing Vault scripts and shells keep working), the built-in default. The
token has one more fallback, ``~/.coffer-token``, like Vault's
``~/.vault-token``. Empty variables count as unset, as in Vault.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from cli.errors import CliError
from cli.flags import parse_bool, parse_duration

__all__ = [
    "DEFAULT_ADDRESS",
    "FORMATS",
    "TOKEN_FILE",
    "GlobalFlags",
    "Settings",
    "resolve_settings",
]

DEFAULT_ADDRESS = "https://127.0.0.1:8200"
TOKEN_FILE = ".coffer-token"
FORMATS = ("table", "json")
_PREFIXES = ("COFFER_", "VAULT_")


@dataclass(frozen=True, slots=True)
class GlobalFlags:
    """The global flags as given on the command line; ``None`` means absent."""

    address: str | None = None
    token: str | None = field(default=None, repr=False)
    namespace: str | None = None
    ca_cert: str | None = None
    ca_path: str | None = None
    tls_skip_verify: bool | None = None
    output_format: str | None = None
    wrap_ttl: str | None = None


@dataclass(frozen=True, slots=True)
class Settings:
    """Resolved settings; the token is kept out of ``repr`` so it never leaks."""

    address: str = DEFAULT_ADDRESS
    token: str | None = field(default=None, repr=False)
    namespace: str | None = None
    ca_cert: str | None = None
    ca_path: str | None = None
    skip_verify: bool = False
    output_format: str = "table"
    wrap_ttl: str | None = None
    """Response-wrapping TTL as written (``None``: do not ask for wrapping)."""


def _env(env: Mapping[str, str], suffix: str) -> tuple[str, str] | None:
    """``(variable name, value)`` of the first non-empty COFFER_/VAULT_ variable."""
    for prefix in _PREFIXES:
        value = env.get(prefix + suffix, "")
        if value:
            return prefix + suffix, value
    return None


def _pick(flag: str | None, env: Mapping[str, str], suffix: str) -> str | None:
    if flag:
        return flag
    found = _env(env, suffix)
    return found[1] if found else None


def _read_token_file(home: Path | None) -> str | None:
    if home is None:
        return None
    path = home / TOKEN_FILE
    try:
        token = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CliError(f"Error reading token file {path}: {exc.strerror or exc}") from None
    return token or None


def _address(raw: str) -> str:
    address = raw.strip().rstrip("/")
    parts = urlsplit(address)
    if parts.scheme not in {"http", "https"} or not parts.netloc:
        raise CliError(f"Error: invalid address {raw!r}: expected http(s)://host[:port]")
    return address


def _skip_verify(flag: bool | None, env: Mapping[str, str]) -> bool:
    if flag is not None:
        return flag
    found = _env(env, "SKIP_VERIFY")
    if found is None:
        return False
    name, value = found
    parsed = parse_bool(value)
    if parsed is None:
        raise CliError(f"Error: could not parse {name}={value!r} as a boolean")
    return parsed


def _output_format(flag: str | None, env: Mapping[str, str]) -> str:
    if flag:
        return flag
    found = _env(env, "FORMAT")
    if found is None:
        return "table"
    name, value = found
    if value.lower() not in FORMATS:
        raise CliError(f"Error: invalid {name}={value!r}: expected one of {', '.join(FORMATS)}")
    return value.lower()


def _wrap_ttl(flag: str | None, env: Mapping[str, str]) -> str | None:
    if flag:
        value, source = flag, "-wrap-ttl"
    else:
        found = _env(env, "WRAP_TTL")
        if found is None:
            return None
        source, value = found
    try:
        seconds = parse_duration(value)
    except ValueError:
        raise CliError(
            f"Error: invalid {source}={value!r}: expected a duration such as 5m"
        ) from None
    return value.strip() if seconds > 0 else None


def resolve_settings(flags: GlobalFlags, env: Mapping[str, str], home: Path | None) -> Settings:
    """Apply flag > ``COFFER_*`` > ``VAULT_*`` > default (> token file) per setting."""
    token = _pick(flags.token, env, "TOKEN") or _read_token_file(home)
    return Settings(
        address=_address(_pick(flags.address, env, "ADDR") or DEFAULT_ADDRESS),
        token=token,
        namespace=_pick(flags.namespace, env, "NAMESPACE"),
        ca_cert=_pick(flags.ca_cert, env, "CACERT"),
        ca_path=_pick(flags.ca_path, env, "CAPATH"),
        skip_verify=_skip_verify(flags.tls_skip_verify, env),
        output_format=_output_format(flags.output_format, env),
        wrap_ttl=_wrap_ttl(flags.wrap_ttl, env),
    )
