"""Reading config files and directories, and merging them into one ``ServerConfig``."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import hcl

from node.config.blocks import number_repeated_blocks
from node.config.errors import ConfigError
from node.config.model import ListenerConfig, ServerConfig, StorageConfig
from node.config.stanzas import SCALAR_KEYS, STANZA_KEYS, FileConfig, parse_file

__all__ = ["dev_config", "load_config"]

_SUFFIXES = (".hcl", ".json")


def load_config(paths: list[str]) -> ServerConfig:
    """Load, validate and merge config files; any problem raises ``ConfigError``.

    Each path is a file or a directory (its ``*.hcl`` and ``*.json`` files, by
    name). Later files override top-level scalars; a stanza (listener,
    storage, seal, telemetry) may be defined once across all files, because
    silently picking one of two storage backends could lose data.
    """
    files = _expand(paths)
    if not files:
        raise ConfigError("no configuration files given")
    return _merge([parse_file(_parse(path), str(path)) for path in files])


def dev_config(listen_address: str = "127.0.0.1:8200") -> ServerConfig:
    """Dev mode's built-in config: in-memory storage, plain HTTP, UI on."""
    return ServerConfig(
        listener=ListenerConfig(address=listen_address, tls_disable=True),
        storage=StorageConfig("inmem", {}),
        ui=True,
    )


def _expand(paths: Iterable[str]) -> list[Path]:
    """Files to load in order; a file reached twice (directory and by name) loads once."""
    files: list[Path] = []
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        found = _directory(path) if path.is_dir() else [path]
        for file in found:
            key = file.resolve()
            if key not in seen:
                seen.add(key)
                files.append(file)
    return files


def _directory(path: Path) -> list[Path]:
    # Dotfiles are skipped: editors leave swap and lock files such as ``.config.hcl.swp``.
    try:
        entries = sorted(path.iterdir(), key=lambda entry: entry.name)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot list directory: {exc.strerror or exc}") from None
    files = [
        entry
        for entry in entries
        if entry.suffix in _SUFFIXES and not entry.name.startswith(".") and entry.is_file()
    ]
    if not files:
        raise ConfigError(f"{path}: directory holds no .hcl or .json files")
    return files


def _parse(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file or directory") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text: {exc.reason}") from None
    try:
        return hcl.loads(number_repeated_blocks(text))
    except ValueError as exc:  # pyhcl's syntax errors, and json's (a ValueError subclass)
        raise ConfigError(f"{path}: cannot parse: {exc}") from None


def _merge(parts: list[FileConfig]) -> ServerConfig:
    sources = tuple(part.source for part in parts)
    values: dict[str, Any] = {}
    set_by: dict[str, str] = {}
    for part in parts:
        for name in STANZA_KEYS:
            stanza = getattr(part, name)
            if stanza is None:
                continue
            if name in set_by:
                raise ConfigError(
                    f"{part.source}: {name}: a second {name} stanza (the first is in "
                    f"{set_by[name]}); only one is allowed"
                )
            values[name], set_by[name] = stanza, part.source
            if name == "listener":
                values["extra_listeners"] = part.extra_listeners
        for name in SCALAR_KEYS:
            scalar = getattr(part, name)
            if scalar is not None:
                values[name], set_by[name] = scalar, part.source
    for name in ("storage", "listener"):
        if name not in values:
            example = 'storage "file" { path = "..." }' if name == "storage" else 'listener "tcp"'
            raise ConfigError(f"{', '.join(sources)}: no {name} stanza; add one such as {example}")
    config = ServerConfig(**values, sources=sources)
    if config.default_lease_ttl > config.max_lease_ttl:
        where = ", ".join(
            dict.fromkeys(set_by[k] for k in ("default_lease_ttl", "max_lease_ttl") if k in set_by)
        )
        raise ConfigError(
            f"{where}: default_lease_ttl ({config.default_lease_ttl}s) is greater than "
            f"max_lease_ttl ({config.max_lease_ttl}s)"
        )
    return config
