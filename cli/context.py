"""What a command runs with: settings, the API client, and the three streams.

Settings and the client are built lazily, so commands that never talk to the
server (``version``, ``generate-root -decode``) are not tripped up by a bad
``COFFER_ADDR``, and server errors become :class:`CliError` in one place.

A response that comes back wrapped (``-wrap-ttl``) raises
:class:`WrappedResponse` from :meth:`Context.send`, whatever the command: the
command cannot use it, and ``main`` prints the wrapping token instead, as
Vault prints ``wrap_info`` for any wrapped command.
"""

from __future__ import annotations

import contextlib
import getpass
import os
from collections.abc import Callable, Mapping
from functools import cached_property
from pathlib import Path
from typing import Any, TextIO

from cli.errors import EXIT_USAGE, CliError
from cli.http import ApiClient, ApiError, Json, TransportError
from cli.output import print_warnings
from cli.settings import TOKEN_FILE, GlobalFlags, Settings, resolve_settings

__all__ = ["Context", "WrappedResponse"]


class WrappedResponse(Exception):
    """The server wrapped the response; ``response`` carries ``wrap_info``."""

    def __init__(self, response: Json) -> None:
        super().__init__("wrapped response")
        self.response = response


def _failed(doing: str, exc: ApiError | TransportError) -> CliError:
    """A failed request as Vault reports it: ``Error <doing>: ...``, exit 2."""
    return CliError(f"Error {doing}: {exc}", EXIT_USAGE)


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

    @property
    def home(self) -> Path | None:
        return self._home

    @property
    def env(self) -> Mapping[str, str]:
        return self._env

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
                wrap_ttl=s.wrap_ttl,
            )
        except TransportError as exc:
            raise CliError(f"Error configuring the client: {exc}") from None

    def send(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        *,
        wrap: bool = True,
        content_type: str = "application/json",
        token: str | None = None,
    ) -> Json | None:
        """One API request, errors untouched (:class:`ApiError`, :class:`TransportError`).

        Raises :class:`WrappedResponse` when the server wrapped the answer.
        """
        _, response = self.client.request(
            method, path, body, wrap=wrap, content_type=content_type, token=token
        )
        if wrap and response is not None and isinstance(response.get("wrap_info"), dict):
            raise WrappedResponse(response)
        return response

    def call(
        self,
        doing: str,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        *,
        wrap: bool = True,
        content_type: str = "application/json",
        token: str | None = None,
    ) -> Json | None:
        """One API request; a failure becomes ``Error <doing>: ...`` (exit 2)."""
        try:
            return self.send(method, path, body, wrap=wrap, content_type=content_type, token=token)
        except (ApiError, TransportError) as exc:
            raise _failed(doing, exc) from None

    def fetch(
        self,
        doing: str,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        *,
        wrap: bool = True,
    ) -> Json | None:
        """A read: like :meth:`call`, but "nothing there" (404) returns ``None``.

        A 404 whose body still carries ``data`` (a deleted KV v2 version keeps
        its metadata) is returned as the response, as Vault's client does;
        warnings on an empty 404 are printed to stderr.
        """
        try:
            return self.send(method, path, body, wrap=wrap)
        except ApiError as exc:
            if exc.status != 404:
                raise _failed(doing, exc) from None
            if exc.body is not None and exc.body.get("data"):
                return exc.body
            print_warnings(exc.body, self.err)
            return None
        except TransportError as exc:
            raise _failed(doing, exc) from None

    def store_token(self, token: str) -> Path:
        """Save ``token`` as ``~/.coffer-token`` (mode 0600, replaced atomically)."""
        if self._home is None:
            raise CliError("Error storing token: cannot determine the home directory")
        path = self._home / TOKEN_FILE
        temporary = path.with_name(f"{TOKEN_FILE}.tmp-{os.getpid()}")
        with contextlib.suppress(OSError):
            temporary.unlink()  # left over from an interrupted run
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(token)
            os.replace(temporary, path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                temporary.unlink()
            raise CliError(f"Error storing token in {path}: {exc.strerror or exc}") from None
        return path

    def print(self, text: str = "") -> None:
        self.out.write(text + "\n")

    def warn(self, text: str) -> None:
        self.err.write(text + "\n")

    def secret_argument(self, value: str | None, prompt: str, what: str, notice: str = "") -> str:
        """A secret given on the command line, ``-`` (all of stdin), or else asked for
        with :meth:`read_secret` (``notice`` is printed to stderr before the prompt)."""
        if value == "-":
            value = self.stdin.read().strip()
        if value:
            return value.strip()
        if notice:
            self.warn(notice)
        return self.read_secret(prompt, what)

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
