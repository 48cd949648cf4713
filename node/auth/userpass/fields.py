"""Request fields of userpass paths, and the reference's legacy spellings.

``policies``, ``ttl``, ``max_ttl`` and ``bound_cidrs`` predate the shared
``token_*`` fields; they still work and mean the same, but giving both
spellings of one setting is an error (as in the reference).
"""

from __future__ import annotations

from typing import Any

from node.auth.common.token_settings import TOKEN_FIELDS, TokenSettings, token_fields
from node.framework import Field, FieldData, FieldType
from sdk.errors import InvalidRequestError

__all__ = [
    "LEGACY",
    "USERNAME",
    "login_fields",
    "password_fields",
    "policy_fields",
    "token_settings",
    "user_fields",
]

#: A user name as the reference accepts it: word characters, with ``.`` and
#: ``-`` inside (never ``/`` or a leading dot, so it is one storage key).
USERNAME = r"(?P<username>[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?)"

#: Legacy field -> the ``token_*`` field it stands for.
LEGACY = {
    "policies": "token_policies",
    "ttl": "token_ttl",
    "max_ttl": "token_max_ttl",
    "bound_cidrs": "token_bound_cidrs",
}

_USERNAME = Field(FieldType.STRING, "Name of the user (case-insensitive; stored lower-cased).")
_PASSWORD = Field(FieldType.STRING, "Password of the user. Never stored or returned.")


def _legacy(names: tuple[str, ...]) -> dict[str, Field]:
    fields = token_fields()
    return {
        old: Field(fields[new].type, f"Deprecated: use {new}.")
        for old, new in LEGACY.items()
        if new in names
    }


def user_fields() -> dict[str, Field]:
    return {
        "username": _USERNAME,
        "password": Field(FieldType.STRING, "Password; required when the user is created."),
        **token_fields(),
        **_legacy(TOKEN_FIELDS),
    }


def password_fields() -> dict[str, Field]:
    return {"username": _USERNAME, "password": _PASSWORD}


def policy_fields() -> dict[str, Field]:
    policies = token_fields()["token_policies"]
    return {"username": _USERNAME, "token_policies": policies, **_legacy(("token_policies",))}


def login_fields() -> dict[str, Field]:
    return {"username": _USERNAME, "password": _PASSWORD}


def token_settings(data: FieldData, current: TokenSettings | None) -> TokenSettings:
    """The given ``token_*`` fields (or legacy spellings) applied on ``current``."""
    raw: dict[str, Any] = {name: data.get(name) for name in TOKEN_FIELDS if data.given(name)}
    for old, new in LEGACY.items():
        if not data.given(old):
            continue
        if new in raw:
            raise InvalidRequestError(f'cannot specify both "{old}" and "{new}"')
        raw[new] = data.get(old)
    return TokenSettings.from_fields(FieldData(token_fields(), raw), current)
