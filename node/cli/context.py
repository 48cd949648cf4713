"""What a command runs with: settings, the API client, and the three streams.

Settings and the client are built lazily, so commands that never talk to the
server (``version``, ``generate-root -decode``) are not tripped up by a bad
``COFFER_ADDR``, and server errors become :class:`CliError` in one place.
"""

from __future__ import annotations

import getpass
from collections.abc import Callable, Mapping
from functools import cached_property
from pathlib import Path
from typing import Any, TextIO

from node.cli.errors import EXIT_USAGE, CliError
from node.cli.http import ApiClient, ApiError, Json, TransportError
from node.cli.settings import GlobalFlags, Settings, resolve_settings

__all__ = ["Context"]


class Context:
    """Per-invocation state handed to every command handler."""

    def __init__(
        self,
        flags: GlobalFlags,
        *,
        env: Mapping[str, str],
        home: Path | None,
        stdin: TextIO,
        stdout: TextIO,
        stderr: TextIO,
        prompt: Callable[[str], str] | None = None,
    ) -> None:
        self._flags = flags
        self._env = env
        self._home = home
        self.stdin = stdin
        self.out = stdout
        self.err = stderr
        self._prompt = prompt

    @cached_property
    def settings(self) -> Settings:
        return resolve_settings(self._flags, self._env, self._home)

    @property
    def json(self) -> bool:
        """Whether ``-format=json`` (or COFFER_FORMAT=json) is in effect."""
        return self.settings.output_format == "json"

    @cached_property
    def client(self) -> ApiClient:
        s = self.settings
        try:
            return ApiClient(
                s.address,
                token=s.token,
                namespace=s.namespace,
                ca_cert=s.ca_cert,
                ca_path=s.ca_path,
                skip_verify=s.skip_verify,
            )
        except TransportError as exc:
            raise CliError(f"Error configuring the client: {exc}") from None

    def call(
        self, doing: str, method: str, path: str, body: Mapping[str, Any] | None = None
    ) -> Json | None:
        """One API request; failures become ``Error <doing>: ...`` with exit 2 (Vault's)."""
        try:
            _, response = self.client.request(method, path, body)
        except (ApiError, TransportError) as exc:
            raise CliError(f"Error {doing}: {exc}", EXIT_USAGE) from None
        return response

    def print(self, text: str = "") -> None:
        self.out.write(text + "\n")

    def warn(self, text: str) -> None:
        self.err.write(text + "\n")

    def read_secret(self, prompt: str, what: str) -> str:
        """Ask for a secret without echo; an empty answer is an error.

        A terminal gets a ``getpass`` prompt; piped input is read as one line
        from stdin, as Vault does (``getpass`` would read the terminal instead).
        """
        try:
            if self._prompt is None and not self.stdin.isatty():
                value = self.stdin.readline().strip()
            else:
                value = (self._prompt or getpass.getpass)(prompt).strip()
        except (EOFError, KeyboardInterrupt):
            self.err.write("\n")
            raise CliError(f"Error reading {what}: no input") from None
        if not value:
            raise CliError(f"Error: {what} must not be empty")
        return value
