"""Vault-style flag spellings: ``-name=value``, ``-name value``, ``--name value``."""

from __future__ import annotations

import pytest

from cli.flags import parse_duration
from cli.main import build_parser, main


def parse(*argv: str) -> dict[str, object]:
    return vars(build_parser().parse_args(list(argv)))


@pytest.mark.parametrize(
    "argv",
    [
        ["-key-shares=3", "-key-threshold=2"],
        ["-key-shares", "3", "-key-threshold", "2"],
        ["--key-shares", "3", "--key-threshold=2"],
    ],
)
def test_init_flag_spellings(argv: list[str]) -> None:
    args = parse("operator", "init", *argv)
    assert (args["key_shares"], args["key_threshold"]) == (3, 2)


def test_init_defaults_match_vault() -> None:
    args = parse("operator", "init")
    assert (args["key_shares"], args["key_threshold"], args["status"]) == (5, 3, False)
    assert args["output_format"] is None


def test_global_flags_on_every_server_command() -> None:
    for command in (["status"], ["operator", "seal"], ["read", "p"], ["list", "p"]):
        args = parse(
            *command,
            "-address=https://h:8200",
            "-token=t",
            "-namespace=ns1",
            "-ca-cert=/ca.pem",
            "-tls-skip-verify",
            "-format=json",
        )
        assert args["address"] == "https://h:8200"
        assert args["token"] == "t"
        assert args["namespace"] == "ns1"
        assert args["ca_cert"] == "/ca.pem"
        assert args["tls_skip_verify"] is True
        assert args["output_format"] == "json"


@pytest.mark.parametrize(
    ("flag", "expected"),
    [
        ("-tls-skip-verify", True),
        ("--tls-skip-verify", True),
        ("-tls-skip-verify=true", True),
        ("-tls-skip-verify=1", True),
        ("-tls-skip-verify=false", False),
        ("--tls-skip-verify=F", False),
    ],
)
def test_switches_accept_go_boolean_values(flag: str, expected: bool) -> None:
    assert parse("status", flag)["tls_skip_verify"] is expected


def test_switch_absent_is_none_so_the_environment_can_apply() -> None:
    assert parse("status")["tls_skip_verify"] is None


def test_switch_does_not_swallow_a_positional() -> None:
    args = parse("operator", "unseal", "-tls-skip-verify", "KEYSHARE")
    assert (args["tls_skip_verify"], args["key"]) == (True, "KEYSHARE")


def test_generate_root_modes() -> None:
    args = parse("operator", "generate-root", "-nonce=abc", "KEY")
    assert (args["nonce"], args["key"], args["init"]) == ("abc", "KEY", False)
    args = parse("operator", "generate-root", "-decode=ZW5j", "-otp=o")
    assert (args["decode"], args["otp"]) == ("ZW5j", "o")
    assert parse("operator", "generate-root", "-generate-otp")["generate_otp"] is True


def test_write_force_short_and_long() -> None:
    assert parse("write", "-f", "p")["force"] is True
    assert parse("write", "-force", "p", "a=1")["force"] is True
    assert parse("write", "p", "a=1", "b=@x")["data"] == ["a=1", "b=@x"]


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["operator"],
        ["operator", "init", "-key-shares=many"],
        ["operator", "init", "-bogus"],
        ["status", "-format=yaml"],
        ["operator", "generate-root", "-init", "-cancel"],
        ["status", "-tls-skip-verify=maybe"],
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "usage: coffer" in err


@pytest.mark.parametrize("flag", ["-h", "-help", "--help"])
def test_help_exits_0(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["operator", "init", flag]) == 0
    assert "-key-shares" in capsys.readouterr().out


def test_no_abbreviations() -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["operator", "init", "--key-sh", "3"])


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["version"]) == 0
    assert capsys.readouterr().out.startswith("Coffer v")
    assert main(["-version"]) == 0
    assert capsys.readouterr().out.startswith("Coffer v")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90), ("90s", 90), ("1h30m", 5400), ("1.5h", 5400), ("2d", 172800), ("500ms", 0)],
)
def test_parse_duration(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "-5m", "1x", "h"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text)


def test_wrap_ttl_is_a_global_flag() -> None:
    for command in (["read", "p"], ["kv", "get", "p"], ["secrets", "list"], ["token", "lookup"]):
        assert parse(*command, "-wrap-ttl=5m")["wrap_ttl"] == "5m"


def test_positional_token_arguments_do_not_replace_the_client_token() -> None:
    args = parse("token", "lookup", "-token=client", "subject-token")
    assert (args["token"], args["subject"]) == ("client", "subject-token")
    args = parse("login", "new-token")
    assert (args["token"], args["subject"]) == (None, "new-token")


def test_data_may_follow_flags(capsys: pytest.CaptureFixture[str]) -> None:
    from cli.main import _parse

    args = _parse(build_parser(), ["write", "p", "a=1", "-force", "b=2", "-"])
    assert args.data == ["a=1", "b=2", "-"]
    assert main(["write", "p", "a=1", "-force", "-bogus"]) == 2
    assert "unrecognized arguments: -bogus" in capsys.readouterr().err
    assert main(["status", "extra"]) == 2
