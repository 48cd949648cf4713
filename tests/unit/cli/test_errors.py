"""Error messages: Vault's wording, exit codes, and nothing secret on stderr."""

from __future__ import annotations

import pytest

from cli.errors import CliError, UsageError
from cli.http import ApiError


def test_api_error_lists_the_server_errors() -> None:
    error = ApiError(
        403, ["permission denied", "second"], method="PUT", url="https://h:8200/v1/sys/seal"
    )
    assert str(error) == (
        "Error making API request.\n\n"
        "URL: PUT https://h:8200/v1/sys/seal\n"
        "Code: 403. Errors:\n\n"
        "* permission denied\n"
        "* second"
    )
    assert (error.status, error.errors) == (403, ["permission denied", "second"])


def test_api_error_with_a_raw_body() -> None:
    error = ApiError(502, [], method="GET", url="http://h/v1/x", raw="<html>bad gateway</html>")
    assert str(error).endswith("Code: 502. Raw Message:\n\n<html>bad gateway</html>")


def test_api_error_without_details() -> None:
    assert str(ApiError(404, [])) == "Error making API request.\n\nCode: 404. Errors:"


def test_exit_codes() -> None:
    assert CliError("x").exit_code == 1
    assert UsageError("x").exit_code == 2


def test_settings_errors_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cli.main import main

    monkeypatch.setenv("COFFER_ADDR", "not-a-url")
    monkeypatch.setenv("COFFER_TOKEN", "hvs.secret")
    assert main(["operator", "seal"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "Error: invalid address 'not-a-url': expected http(s)://host[:port]\n"
