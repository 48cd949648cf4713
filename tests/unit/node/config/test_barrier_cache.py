"""``cache_size`` and ``disable_cache`` in the server config, as Vault spells them."""

from __future__ import annotations

from pathlib import Path

import pytest

from api.server import core_settings
from node.config import DEFAULT_CACHE_SIZE, ConfigError, load_config
from node.core.core import Core
from node.physical.inmem import InmemBackend

BASE = 'listener "tcp" {\n  tls_disable = 1\n}\nstorage "inmem" {}\n'


def load(tmp_path: Path, extra: str) -> tuple[int, bool]:
    path = tmp_path / "server.hcl"
    path.write_text(BASE + extra)
    config = load_config([str(path)])
    return config.cache_size, config.disable_cache


def test_defaults_are_vaults(tmp_path: Path) -> None:
    assert load(tmp_path, "") == (131072, False) == (DEFAULT_CACHE_SIZE, False)


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ("cache_size = 1000\n", (1000, False)),
        ('cache_size = "2048"\n', (2048, False)),  # Vault documents it as a string
        ("cache_size = 0\n", (DEFAULT_CACHE_SIZE, False)),  # 0 means the default, as in Vault
        ("disable_cache = true\n", (DEFAULT_CACHE_SIZE, True)),
        ('disable_cache = "1"\n', (DEFAULT_CACHE_SIZE, True)),
    ],
)
def test_values_are_read(tmp_path: Path, extra: str, expected: tuple[int, bool]) -> None:
    assert load(tmp_path, extra) == expected


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("cache_size = -1\n", "cache_size: must not be negative, got -1"),
        ('cache_size = "lots"\n', 'cache_size: expected an integer, got "lots"'),
        ("cache_size = 1.5\n", "cache_size: expected an integer, got 1.5"),
        ('disable_cache = "maybe"\n', 'disable_cache: expected a boolean, got "maybe"'),
    ],
)
def test_bad_values_name_the_file_and_key(tmp_path: Path, extra: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, extra)
    assert str(raised.value) == f"{tmp_path / 'server.hcl'}: {message}"


def test_a_later_file_overrides(tmp_path: Path) -> None:
    first, second = tmp_path / "a.hcl", tmp_path / "b.hcl"
    first.write_text(BASE + "cache_size = 10\n")
    second.write_text("cache_size = 20\ndisable_cache = true\n")
    config = load_config([str(first), str(second)])
    assert (config.cache_size, config.disable_cache) == (20, True)


def test_the_server_settings_reach_the_barrier(tmp_path: Path) -> None:
    (tmp_path / "server.hcl").write_text(BASE + "cache_size = 7\ndisable_cache = true\n")
    config = load_config([str(tmp_path / "server.hcl")])
    core = Core(InmemBackend(), core_settings(config))
    assert (core.barrier.cache.size, core.barrier.cache.enabled) == (7, False)
