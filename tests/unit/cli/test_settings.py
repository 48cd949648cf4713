"""Settings precedence: flag > COFFER_* > VAULT_* > default (> ~/.coffer-token)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.errors import CliError
from cli.settings import DEFAULT_ADDRESS, GlobalFlags, Settings, resolve_settings


def resolve(flags: GlobalFlags | None = None, home: Path | None = None, **env: str) -> Settings:
    return resolve_settings(flags or GlobalFlags(), env, home)


def test_defaults() -> None:
    s = resolve()
    assert s == Settings()
    assert s.address == DEFAULT_ADDRESS == "https://127.0.0.1:8200"
    assert (s.token, s.namespace, s.ca_cert, s.skip_verify, s.output_format) == (
        None,
        None,
        None,
        False,
        "table",
    )


@pytest.mark.parametrize(
    ("flag", "suffix", "attr", "values"),
    [
        ("address", "ADDR", "address", ("https://flag:1", "https://coffer:1", "https://vault:1")),
        ("token", "TOKEN", "token", ("t-flag", "t-coffer", "t-vault")),
        ("namespace", "NAMESPACE", "namespace", ("ns-flag", "ns-coffer", "ns-vault")),
        ("ca_cert", "CACERT", "ca_cert", ("/flag.pem", "/coffer.pem", "/vault.pem")),
        ("ca_path", "CAPATH", "ca_path", ("/flag", "/coffer", "/vault")),
        ("output_format", "FORMAT", "output_format", ("json", "table", "json")),
    ],
)
def test_precedence(flag: str, suffix: str, attr: str, values: tuple[str, str, str]) -> None:
    from_flag, from_coffer, from_vault = values
    both = {f"COFFER_{suffix}": from_coffer, f"VAULT_{suffix}": from_vault}
    assert getattr(resolve(GlobalFlags(**{flag: from_flag}), **both), attr) == from_flag
    assert getattr(resolve(**both), attr) == from_coffer
    assert getattr(resolve(**{f"VAULT_{suffix}": from_vault}), attr) == from_vault
    # An empty variable counts as unset, as in Vault.
    assert getattr(resolve(**{**both, f"COFFER_{suffix}": ""}), attr) == from_vault


def test_skip_verify_precedence() -> None:
    assert resolve(VAULT_SKIP_VERIFY="true").skip_verify is True
    assert resolve(COFFER_SKIP_VERIFY="1").skip_verify is True
    assert resolve(COFFER_SKIP_VERIFY="false", VAULT_SKIP_VERIFY="true").skip_verify is False
    assert resolve(GlobalFlags(tls_skip_verify=False), COFFER_SKIP_VERIFY="1").skip_verify is False
    assert resolve(GlobalFlags(tls_skip_verify=True)).skip_verify is True


def test_skip_verify_rejects_nonsense() -> None:
    with pytest.raises(CliError, match="COFFER_SKIP_VERIFY"):
        resolve(COFFER_SKIP_VERIFY="perhaps")


def test_token_file_is_the_last_resort(tmp_path: Path) -> None:
    (tmp_path / ".coffer-token").write_text("t-file\n")
    assert resolve(home=tmp_path).token == "t-file"
    assert resolve(home=tmp_path, VAULT_TOKEN="t-vault").token == "t-vault"
    assert resolve(home=tmp_path, COFFER_TOKEN="t-coffer").token == "t-coffer"
    assert resolve(GlobalFlags(token="t-flag"), home=tmp_path).token == "t-flag"


def test_missing_or_empty_token_file(tmp_path: Path) -> None:
    assert resolve(home=tmp_path).token is None
    (tmp_path / ".coffer-token").write_text("  \n")
    assert resolve(home=tmp_path).token is None


def test_address_is_validated_and_normalised() -> None:
    assert resolve(COFFER_ADDR="http://127.0.0.1:8200/").address == "http://127.0.0.1:8200"
    with pytest.raises(CliError, match="invalid address"):
        resolve(COFFER_ADDR="127.0.0.1:8200")


def test_bad_format_variable() -> None:
    with pytest.raises(CliError, match="COFFER_FORMAT"):
        resolve(COFFER_FORMAT="yaml")


def test_token_never_in_repr() -> None:
    s = resolve(GlobalFlags(token="s3cret"))
    assert "s3cret" not in repr(s)
    assert "s3cret" not in repr(GlobalFlags(token="s3cret"))


def test_wrap_ttl_precedence_and_validation() -> None:
    assert resolve().wrap_ttl is None
    assert resolve(VAULT_WRAP_TTL="1m").wrap_ttl == "1m"
    assert resolve(COFFER_WRAP_TTL="2m", VAULT_WRAP_TTL="1m").wrap_ttl == "2m"
    assert resolve(GlobalFlags(wrap_ttl="30s"), COFFER_WRAP_TTL="2m").wrap_ttl == "30s"
    assert resolve(COFFER_WRAP_TTL="0s").wrap_ttl is None
    with pytest.raises(CliError, match="COFFER_WRAP_TTL"):
        resolve(COFFER_WRAP_TTL="whenever")
