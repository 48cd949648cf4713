"""Bad start-up configuration stops ``coffer server`` at once, with a useful message."""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from harness.server import CofferFactory

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

QUICK = 15.0  # seconds; start-up failures must not hang


def listener(address: str = "127.0.0.1:8209", body: str = "tls_disable = 1") -> str:
    return f'listener "tcp" {{\n  address = "{address}"\n  {body}\n}}\n'


def assert_refused(
    coffer: CofferFactory, config: Path, *needles: str, port: int | None = None
) -> str:
    started = time.monotonic()
    result = coffer.run(f"-config={config}", timeout=QUICK)
    elapsed = time.monotonic() - started
    assert result.returncode != 0, (result.stdout, result.stderr)
    assert elapsed < QUICK
    for needle in needles:
        assert needle in result.stderr, (needle, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    assert "listening" not in result.stdout, result.stdout
    if port is not None:  # nothing was left listening
        with socket.socket() as sock:
            assert sock.connect_ex(("127.0.0.1", port)) != 0
    return result.stderr


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('{listener}storage "inmem" {{}}\nbogus_setting = 1\n', "bogus_setting"),
        ('{listener}storage "inmem" {{}}\nlog_levle = "debug"\n', "log_levle"),
        (
            'listener "tcp" {{\n  address = "{address}"\n  tls_disable = 1\n'
            "  tls_disabel = 1\n}}\n"
            'storage "inmem" {{}}\n',
            "tls_disabel",
        ),
        ('{listener}storage "file" {{\n  path = "/tmp/x"\n  pth = "y"\n}}\n', "pth"),
        ('{listener}storage "inmem" {{}}\nbogus_stanza {{\n  a = 1\n}}\n', "bogus_stanza"),
    ],
    ids=["top-level", "typo", "listener", "storage", "stanza"],
)
def test_unknown_key_is_refused_naming_file_and_key(
    coffer: CofferFactory, tmp_path: Path, text: str, key: str
) -> None:
    address = "127.0.0.1:8209"
    config = tmp_path / "bad.hcl"
    config.write_text(text.format(listener=listener(address), address=address))
    stderr = assert_refused(coffer, config, str(config), f'"{key}"')
    assert "unknown" in stderr


def test_unknown_key_in_json_config(coffer: CofferFactory, tmp_path: Path) -> None:
    config = tmp_path / "bad.json"
    config.write_text(
        '{"listener": {"tcp": {"address": "127.0.0.1:8209", "tls_disable": true}},'
        ' "storage": {"inmem": {}}, "not_a_key": true}'
    )
    assert_refused(coffer, config, str(config), '"not_a_key"')


def test_bad_file_in_a_config_directory_is_named(coffer: CofferFactory, tmp_path: Path) -> None:
    folder = tmp_path / "conf.d"
    folder.mkdir()
    (folder / "10-listener.hcl").write_text(listener())
    (folder / "20-storage.hcl").write_text('storage "inmem" {}\nunknown_thing = "x"\n')
    result = coffer.run(f"-config={folder}", timeout=QUICK)
    assert result.returncode != 0
    assert "20-storage.hcl" in result.stderr and '"unknown_thing"' in result.stderr
    assert "10-listener.hcl" not in result.stderr


def test_missing_config_flag(coffer: CofferFactory) -> None:
    result = coffer.run(timeout=QUICK)
    assert result.returncode != 0
    assert "-config" in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_config_file(coffer: CofferFactory, tmp_path: Path) -> None:
    assert_refused(coffer, tmp_path / "nope.hcl", "nope.hcl")


def test_unparseable_config(coffer: CofferFactory, tmp_path: Path) -> None:
    config = tmp_path / "broken.hcl"
    config.write_text('listener "tcp" {\n  address = \n')
    assert_refused(coffer, config, "broken.hcl")


def test_tls_listener_without_certificate(coffer: CofferFactory, tmp_path: Path) -> None:
    config = tmp_path / "notls.hcl"
    config.write_text(listener(body="") + 'storage "inmem" {}\n')
    assert_refused(coffer, config, "notls.hcl", "tls_cert_file")


def test_certificate_file_that_does_not_exist(coffer: CofferFactory, tmp_path: Path) -> None:
    port = coffer.free_port()
    config = tmp_path / "nocert.hcl"
    missing = tmp_path / "missing.crt"
    config.write_text(
        listener(
            f"127.0.0.1:{port}",
            f'tls_cert_file = "{missing}"\n  tls_key_file = "{tmp_path / "missing.key"}"',
        )
        + 'storage "inmem" {}\n'
    )
    assert_refused(coffer, config, "Error", port=port)


def test_port_in_use(coffer: CofferFactory, tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        config = tmp_path / "busy.hcl"
        config.write_text(listener(f"127.0.0.1:{port}") + 'storage "inmem" {}\n')
        assert_refused(coffer, config, "Error")
