"""Paths of a userpass mount (``auth/<path>/``), as in the reference's API.

The method only checks the password and names the user's token settings; the
core mints the token, enforces ``token_bound_cidrs`` against the client
address and applies the mount's TTL limits (``node.core.login``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from node.auth.userpass.fields import (
    USERNAME,
    login_fields,
    password_fields,
    policy_fields,
    token_settings,
    user_fields,
)
from node.auth.userpass.passwords import Passwords
from node.auth.userpass.store import UserEntry, UserStore
from node.barrier.view import BarrierView
from node.framework import FieldData, FrameworkBackend, Path
from node.logical.mount import MountEntry
from node.logical.request import Operation, Request
from node.logical.response import Login, Response
from node.logical.system_view import BackendConfig
from sdk.errors import ConflictError, InvalidRequestError, UnsupportedPathError

__all__ = ["INVALID_CREDENTIALS", "UserpassBackend", "factory"]

#: The reference's answer to a wrong password and to an unknown user alike.
INVALID_CREDENTIALS = "invalid username or password"


def _username(data: FieldData) -> str:
    # The reference lower-cases names on every path, so "Alice" and "alice" are one user.
    return str(data.get("username")).lower()


def _password(data: FieldData) -> str | None:
    """The given password, ``None`` when absent; an empty one is refused."""
    if not data.given("password"):
        return None
    password = str(data.get("password"))
    if not password:
        raise InvalidRequestError("password must not be empty")
    return password


class UserpassBackend(FrameworkBackend):
    type = "userpass"
    help_text = (
        "The userpass auth method: users log in with a name and password and get a token "
        "with the user's policies and token settings."
    )

    def __init__(
        self,
        view: BarrierView,
        mount: MountEntry,
        *,
        passwords: Passwords | None = None,
    ) -> None:
        self._users = UserStore(view)
        self._passwords = passwords or Passwords()
        update = Operation.UPDATE
        super().__init__(
            [
                Path(
                    "users/?",
                    {Operation.LIST: self._list},
                    {},
                    "List users.",
                ),
                Path(
                    f"users/{USERNAME}",
                    {
                        Operation.CREATE: self._write,
                        update: self._write,
                        Operation.READ: self._read,
                        Operation.DELETE: self._delete,
                    },
                    user_fields(),
                    "Create, read, update or delete a user.",
                    "A new user needs a password. The token_* fields set the tokens its "
                    "logins get; policies, ttl, max_ttl and bound_cidrs are their legacy names.",
                    exists=self._exists,
                ),
                Path(
                    f"users/{USERNAME}/password",
                    {update: self._set_password},
                    password_fields(),
                    "Change a user's password.",
                ),
                Path(
                    f"users/{USERNAME}/policies",
                    {update: self._set_policies},
                    policy_fields(),
                    "Change the policies of a user's tokens.",
                ),
                Path(
                    f"login/{USERNAME}",
                    {update: self._login},
                    login_fields(),
                    "Log in with a username and password.",
                    unauthenticated=True,
                ),
            ]
        )

    async def _exists(self, request: Request, data: FieldData) -> bool:
        return await self._users.get(_username(data)) is not None

    async def _list(self, request: Request, data: FieldData) -> Response:
        names = await self._users.names()
        if not names:
            raise UnsupportedPathError()
        return Response(data={"keys": names})

    async def _read(self, request: Request, data: FieldData) -> Response:
        user = await self._users.get(_username(data))
        if user is None:
            raise UnsupportedPathError()
        shown: dict[str, Any] = user.token.public()
        shown["policies"] = list(user.token.policies)
        return Response(data=shown)

    async def _write(self, request: Request, data: FieldData) -> None:
        name = _username(data)
        password = _password(data)
        current = await self._users.get(name)
        if current is None and password is None:
            raise InvalidRequestError("missing password")
        # Validate before paying for the hash; ``change`` re-applies on fresh data.
        token_settings(data, current.token if current else None)
        new_hash = await self._passwords.hash(password) if password is not None else None

        def change(found: UserEntry | None) -> UserEntry:
            # The ACL was checked for create or update; a concurrent write must not
            # turn one into the other (a create-only token overwriting a user).
            if found is not None and request.operation is Operation.CREATE:
                raise ConflictError("the user was created concurrently; retry the request")
            if found is None and request.operation is Operation.UPDATE:
                raise InvalidRequestError("username does not exist")
            if found is None and new_hash is None:
                raise InvalidRequestError("missing password")
            settings = token_settings(data, found.token if found else None)
            password_hash = new_hash or (found.password_hash if found else "")
            return UserEntry(password_hash, settings)

        await self._users.update(name, change)

    async def _delete(self, request: Request, data: FieldData) -> None:
        await self._users.delete(_username(data))

    async def _set_password(self, request: Request, data: FieldData) -> None:
        name = _username(data)
        password = _password(data)
        if password is None:
            raise InvalidRequestError("missing password")
        if await self._users.get(name) is None:
            raise InvalidRequestError("username does not exist")
        new_hash = await self._passwords.hash(password)
        await self._users.update(
            name, lambda found: replace(_existing(found), password_hash=new_hash)
        )

    async def _set_policies(self, request: Request, data: FieldData) -> None:
        if not (data.given("token_policies") or data.given("policies")):
            raise InvalidRequestError('missing "token_policies"')

        def change(found: UserEntry | None) -> UserEntry:
            user = _existing(found)
            return replace(user, token=token_settings(data, user.token))

        await self._users.update(_username(data), change)

    async def _login(self, request: Request, data: FieldData) -> Response:
        name = _username(data)
        password = _password(data)
        if password is None:
            raise InvalidRequestError("missing password")
        user = await self._users.get(name)
        matches = await self._passwords.verify(user.password_hash if user else None, password)
        if user is None or not matches:
            raise InvalidRequestError(INVALID_CREDENTIALS)
        return Response(
            login=Login(
                alias_name=name,
                policies=list(user.token.policies),
                token=user.token,
                display_name=name,
                metadata={"username": name},
                alias_metadata={},
            )
        )


def _existing(found: UserEntry | None) -> UserEntry:
    if found is None:
        raise InvalidRequestError("username does not exist")
    return found


def factory(config: BackendConfig) -> UserpassBackend:
    """The method needs only its storage: the core mints tokens (``node.core.login``)."""
    return UserpassBackend(config.storage, config.mount)
