"""The listener's slow-client limits and connection cap (issue 14, item 5): Vault's
key names, durations in any of its forms, and what ``coffer server`` serves with."""

from __future__ import annotations

from pathlib import Path

import pytest

from api.listener import ListenerLimits
from api.server import listener_limits
from tests.unit.node.config.test_config import load, refused

_BASE = 'storage "inmem" {}\n'


def _listener(body: str) -> str:
    return (
        _BASE + f'listener "tcp" {{\n  address = "127.0.0.1:8200"\n  tls_disable = true\n{body}}}\n'
    )


def test_the_limits_are_read_from_the_listener_stanza(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        _listener(
            '  http_read_header_timeout = "5s"\n  http_read_timeout = 45\n'
            '  http_idle_timeout = "2m"\n  max_connections = 64\n'
        ),
    )
    assert listener_limits(config.listener) == ListenerLimits(
        read_header_timeout=5, read_timeout=45, idle_timeout=120, max_connections=64
    )


def test_defaults_are_vaults(tmp_path: Path) -> None:
    assert listener_limits(load(tmp_path, _listener("")).listener) == ListenerLimits(
        read_header_timeout=10, read_timeout=30, idle_timeout=300, max_connections=1024
    )


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ('  http_read_header_timeout = "soon"\n', "http_read_header_timeout"),
        ('  http_idle_timeout = "-5s"\n', "http_idle_timeout"),
        ("  max_connections = 0\n", "max_connections"),
        ('  max_connections = "many"\n', "max_connections"),
    ],
)
def test_bad_values_are_refused_by_name(tmp_path: Path, line: str, fragment: str) -> None:
    assert fragment in refused(tmp_path, _listener(line))
