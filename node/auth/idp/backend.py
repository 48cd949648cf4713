"""``auth/idp``: config, local users and groups, and the unauthenticated login.

Built by :func:`factory` from the mount's config. Outgoing calls go through
the system view's ``http_client()`` (a ``node.outbound.HttpClient`` the server
sets), so this package never touches aiohttp.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from node.auth.idp.config import NO_API_TOKEN_WARNING, IdpConfig, config_fields
from node.auth.idp.login import authenticate, policies_for
from node.auth.idp.mappings import (
    GroupEntry,
    Mappings,
    UserEntry,
    clean_groups,
    clean_policies,
    shown_policies,
    update_json,
)
from node.auth.idp.provider import ProviderClient
from node.barrier.view import BarrierView
from node.framework import Field, FieldData, FieldType, FrameworkBackend, Path
from node.logical.mount import MountEntry
from node.logical.request import Operation, Request
from node.logical.response import Login, Response
from node.logical.system_view import BackendConfig, SystemView
from node.outbound import HttpClient
from node.tokens.entry import TokenEntry
from sdk.errors import (
    CofferError,
    InvalidRequestError,
    PermissionDeniedError,
    UnsupportedPathError,
)

__all__ = ["IdpBackend", "factory"]

_CONFIG = "config"

_HELP = """
The identity-provider method checks a username and password (and a TOTP
passcode when the provider asks for MFA) against an Okta-compatible provider.
Policies come from the config's token_policies, the locally defined user, and
the local groups named like the user's provider groups (looked up only when
an api_token is configured) or assigned to the local user.
"""


class IdpBackend(FrameworkBackend):
    type = "idp"
    help_text = _HELP

    def __init__(self, view: BarrierView, mount: MountEntry, system: SystemView) -> None:
        self._view = view
        self._mount = mount
        self._system = system
        self._mappings = Mappings(view)
        name = Field(FieldType.STRING, "Name of the user or group.", required=True)
        policies = Field(FieldType.COMMA_STRING_LIST, "Policies granted.")
        super().__init__(
            [
                Path(
                    "config",
                    {Operation.READ: self._read_config, Operation.UPDATE: self._write_config},
                    config_fields(),
                    "Configure the identity provider.",
                    exists=self._config_exists,
                ),
                Path("users/?", {Operation.LIST: self._list_users}, {}, "List local users."),
                Path(
                    r"users/(?P<name>.+)",
                    {
                        Operation.READ: self._read_user,
                        Operation.UPDATE: self._write_user,
                        Operation.DELETE: self._delete_user,
                    },
                    {
                        "name": name,
                        "groups": Field(FieldType.COMMA_STRING_LIST, "Local groups of the user."),
                        "policies": policies,
                    },
                    "Manage a local user: extra groups and policies.",
                    exists=self._user_exists,
                ),
                Path("groups/?", {Operation.LIST: self._list_groups}, {}, "List local groups."),
                Path(
                    r"groups/(?P<name>.+)",
                    {
                        Operation.READ: self._read_group,
                        Operation.UPDATE: self._write_group,
                        Operation.DELETE: self._delete_group,
                    },
                    {"name": name, "policies": policies},
                    "Manage a local group (matched case-insensitively to provider groups).",
                    exists=self._group_exists,
                ),
                Path(
                    r"login/(?P<username>.+)",
                    {Operation.UPDATE: self._login},
                    {
                        "username": Field(FieldType.STRING, "Username at the provider."),
                        "password": Field(FieldType.STRING, "Password.", required=True),
                        "totp": Field(FieldType.STRING, "TOTP passcode, when MFA is required."),
                    },
                    "Log in with a username and password.",
                    unauthenticated=True,
                ),
            ]
        )

    # -- config ---------------------------------------------------------------

    async def _config(self) -> IdpConfig | None:
        raw = await self._view.get_json(_CONFIG)
        return IdpConfig.from_json(raw) if raw is not None else None

    async def _config_exists(self, request: Request, data: FieldData) -> bool:
        return await self._view.get(_CONFIG) is not None

    async def _read_config(self, request: Request, data: FieldData) -> Response:
        config = await self._config()
        if config is None:
            raise UnsupportedPathError()
        return Response(data=config.public(), warnings=config.warnings())

    async def _write_config(self, request: Request, data: FieldData) -> Response:
        def change(raw: dict[str, Any] | None) -> dict[str, Any]:
            current = IdpConfig.from_json(raw) if raw else IdpConfig(org_name="")
            return current.updated(data).to_json()

        config = IdpConfig.from_json(await update_json(self._view, _CONFIG, change))
        warnings = config.warnings()
        if not config.api_token:
            warnings.append(NO_API_TOKEN_WARNING)
        return Response(warnings=warnings)

    # -- users ----------------------------------------------------------------

    async def _user_exists(self, request: Request, data: FieldData) -> bool:
        return await self._mappings.user(data.get("name")) is not None

    async def _list_users(self, request: Request, data: FieldData) -> Response:
        return _listing(await self._mappings.users())

    async def _read_user(self, request: Request, data: FieldData) -> Response:
        user = await self._mappings.user(data.get("name"))
        if user is None:
            raise UnsupportedPathError()
        return Response(data={"groups": user.groups, "policies": shown_policies(user.policies)})

    async def _write_user(self, request: Request, data: FieldData) -> None:
        def change(user: UserEntry) -> UserEntry:
            return UserEntry(
                clean_groups(data.get("groups")) if data.given("groups") else user.groups,
                clean_policies(data.get("policies")) if data.given("policies") else user.policies,
            )

        await self._mappings.update_user(data.get("name"), change)

    async def _delete_user(self, request: Request, data: FieldData) -> None:
        await self._mappings.delete_user(data.get("name"))

    # -- groups ---------------------------------------------------------------

    async def _group_exists(self, request: Request, data: FieldData) -> bool:
        return await self._mappings.group(data.get("name")) is not None

    async def _list_groups(self, request: Request, data: FieldData) -> Response:
        return _listing(await self._mappings.groups())

    async def _read_group(self, request: Request, data: FieldData) -> Response:
        group = await self._mappings.group(data.get("name"))
        if group is None:
            raise UnsupportedPathError()
        return Response(data={"policies": shown_policies(group.policies)})

    async def _write_group(self, request: Request, data: FieldData) -> None:
        def change(group: GroupEntry) -> GroupEntry:
            if not data.given("policies"):
                return group
            return GroupEntry(clean_policies(data.get("policies")))

        await self._mappings.update_group(data.get("name"), change)

    async def _delete_group(self, request: Request, data: FieldData) -> None:
        await self._mappings.delete_group(data.get("name"))

    # -- login ----------------------------------------------------------------

    def _http(self) -> HttpClient:
        client = self._system.http_client()
        if client is None:
            raise CofferError("no outbound HTTP client is configured on this server")
        return client

    async def _login(self, request: Request, data: FieldData) -> Response:
        username: str = data.get("username")
        config = await self._configured()
        # Checked here as well as by the core, so a refused address never
        # makes the server send the password to the provider.
        if not config.token.allows_address(request.remote_addr):
            raise PermissionDeniedError("login is not allowed from this address")
        password: str = data.get("password")
        login, warnings = await self._checked(
            config,
            username,
            password,
            data.get("totp") or "",
            _header(request, "X-Forwarded-For"),
        )
        # Kept with the token (barrier-encrypted) so a renewal can ask the
        # provider again, as the reference's Okta method keeps it.
        login = replace(login, internal_data={"username": username, "password": password})
        return Response(login=login, warnings=warnings)

    async def renew_login(self, entry: TokenEntry, request: Request) -> Login:
        """Re-run the login without a passcode, as the reference does: a user
        locked, removed or whose password changed at the provider is refused;
        policies and token settings come from the config and groups as they are
        now."""
        username = entry.internal.get("username", "")
        password = entry.internal.get("password", "")
        if not username or not password:
            raise PermissionDeniedError("this token's login cannot be renewed: no credentials kept")
        login, _ = await self._checked(await self._configured(), username, password, "", "")
        return login

    async def _configured(self) -> IdpConfig:
        config = await self._config()
        if config is None:
            raise InvalidRequestError("idp auth method not configured")
        return config

    async def _checked(
        self, config: IdpConfig, username: str, password: str, totp: str, forwarded_for: str
    ) -> tuple[Login, list[str]]:
        client = ProviderClient(self._http(), config.origin, config.api_token)
        granted = await authenticate(client, config, username, password, totp, forwarded_for)
        policies, groups = await policies_for(self._mappings, username, granted.provider_groups)
        login = Login(
            alias_name=username,
            policies=policies,
            token=config.token,
            display_name=username,
            metadata={"username": username, "policies": ",".join(policies)},
            group_aliases=groups,
        )
        return login, granted.warnings


def _listing(keys: list[str]) -> Response:
    if not keys:
        raise UnsupportedPathError()
    return Response(data={"keys": keys})


def _header(request: Request, name: str) -> str:
    wanted = name.lower()
    return next((v for k, v in request.headers.items() if k.lower() == wanted), "")


def factory(config: BackendConfig) -> IdpBackend:
    return IdpBackend(config.storage, config.mount, config.system)
