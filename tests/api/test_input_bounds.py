"""Issue 14, items 6 and 7: numbers out of range, policy arithmetic and control
characters are 400s naming the input; no error quotes a storage key; accessors are
never storage keys (or file names) in plaintext."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient

from api.app import create_app
from node.core.core import Core
from node.physical.file import FileBackend
from tests.api.helpers import Reply, assert_error, call
from tests.conftest import DevServer
from tests.listener_server import ListenerTestServer

HUGE = "1e300"  # sent as raw JSON: a float that is an integer, far past 64 bits
MAX_DURATION_SECONDS = (2**63 - 1) // 10**9  # a Go time.Duration, in seconds


async def send(dev: DevServer, method: str, path: str, raw_body: str) -> Reply:
    return await call(dev.client, method, f"/v1/{path}", data=raw_body, headers=dev.auth)


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("auth/token/create", "explicit_max_ttl"),
        ("auth/token/create", "num_uses"),
        ("auth/token/create", "ttl"),
        ("auth/token/create", "period"),
        ("auth/token/roles/r", "token_num_uses"),
        ("auth/token/roles/r", "token_explicit_max_ttl"),
        ("secret/config", "max_versions"),
        ("secret/metadata/k", "max_versions"),
        ("secret/metadata/k", "delete_version_after"),
        ("sys/mounts/secret/tune", "default_lease_ttl"),
    ],
)
async def test_a_number_out_of_range_is_a_400_naming_the_field(
    dev: DevServer, path: str, field: str
) -> None:
    for value in (HUGE, "-1e300", str(2**64), '"9999999999999999999999h"'):
        reply = await send(dev, "POST", path, f'{{"{field}": {value}}}')
        assert_error(reply, 400, field)


async def test_the_largest_duration_is_accepted_and_one_more_second_is_not(
    dev: DevServer,
) -> None:
    ok = await send(
        dev, "POST", "auth/token/create", f'{{"explicit_max_ttl": {MAX_DURATION_SECONDS}}}'
    )
    assert ok.status == 200, str(ok)
    over = await send(
        dev, "POST", "auth/token/create", f'{{"explicit_max_ttl": {MAX_DURATION_SECONDS + 1}}}'
    )
    assert_error(over, 400, "explicit_max_ttl")


async def test_a_wrap_ttl_out_of_range_is_a_400(dev: DevServer) -> None:
    headers = {**dev.auth, "X-Vault-Wrap-TTL": "99999999999999999999"}
    reply = await call(dev.client, "GET", "/v1/sys/mounts", headers=headers)
    assert_error(reply, 400, "wrap TTL")


async def test_mount_config_durations_and_cas_are_bounded(dev: DevServer) -> None:
    reply = await send(
        dev, "POST", "sys/mounts/big", f'{{"type": "kv", "config": {{"max_lease_ttl": {HUGE}}}}}'
    )
    assert_error(reply, 400, "config.max_lease_ttl")
    reply = await send(
        dev, "POST", "secret/data/k", f'{{"options": {{"cas": {HUGE}}}, "data": {{}}}}'
    )
    assert_error(reply, 400, "check-and-set")


@pytest.mark.parametrize(
    "policy",
    [
        "x = 1/0",
        'path "a" { x = 1/0 }',
        'path "a" { capabilities = ["read"]\n min_wrapping_ttl = 1/0 }',
        "x = 1.0/0.0",
    ],
)
async def test_policy_arithmetic_dividing_by_zero_is_a_400(dev: DevServer, policy: str) -> None:
    reply = await call(
        dev.client, "PUT", "/v1/sys/policies/acl/p", json_body={"policy": policy}, headers=dev.auth
    )
    assert_error(reply, 400, "arithmetic")


@pytest.mark.parametrize("char", ["\x00", "\x01", "\n", "\x7f"])
async def test_policy_path_with_a_control_character_is_a_400(dev: DevServer, char: str) -> None:
    text = f'path "secret/a{char}b" {{ capabilities = ["read"] }}'
    reply = await call(
        dev.client, "PUT", "/v1/sys/policies/acl/p", json_body={"policy": text}, headers=dev.auth
    )
    assert_error(reply, 400, "control characters")
    missing = await call(dev.client, "GET", "/v1/sys/policies/acl/p", headers=dev.auth)
    assert missing.status == 404


@pytest.mark.parametrize("table", ["sys/mounts", "sys/auth"])
@pytest.mark.parametrize("char", ["%00", "%01", "%1F", "%7F"])  # "\n": no route matches (404)
async def test_a_mount_path_with_a_control_character_is_a_400(
    dev: DevServer, table: str, char: str
) -> None:
    """A policy path cannot hold one, so such a mount could not be granted to anyone."""
    kind = "kv" if table == "sys/mounts" else "userpass"
    reply = await call(
        dev.client, "POST", f"/v1/{table}/a{char}b", json_body={"type": kind}, headers=dev.auth
    )
    assert_error(reply, 400, "control character")


async def test_an_invalid_path_error_does_not_quote_the_storage_key(dev: DevServer) -> None:
    reply = await call(
        dev.client, "POST", "/v1/cubbyhole/a//b", json_body={"x": 1}, headers=dev.auth
    )
    [message] = assert_error(reply, 400, "invalid path")
    # The key was logical/<mount uuid>/<the token's cubbyhole id>/a//b.
    mounts = await call(dev.client, "GET", "/v1/sys/mounts", headers=dev.auth)
    assert mounts.data["cubbyhole/"]["uuid"] not in message
    assert "logical/" not in message and "a//b" not in message


# -- accessors on file storage ---------------------------------------------------------


@dataclass
class FileDev:
    core: Core
    client: TestClient
    root: str
    unseal_key: str
    data_dir: Path
    storage: FileBackend


@pytest.fixture
async def file_dev(tmp_path: Path) -> AsyncIterator[FileDev]:
    """A dev core on ``file`` storage."""
    storage = FileBackend(tmp_path)
    core = Core(storage)
    client = TestClient(ListenerTestServer(create_app(core, max_request_size=1024 * 1024)))
    await client.start_server()
    try:
        init = await core.dev_bootstrap()
        yield FileDev(core, client, init.root_token, init.keys_hex[0], tmp_path, storage)
    finally:
        await client.close()


def file_names(root: Path) -> list[str]:
    return [name for _, dirs, files in os.walk(root) for name in dirs + files]


async def create_token(client: TestClient, root: str) -> dict[str, str]:
    reply = await call(
        client, "POST", "/v1/auth/token/create", json_body={}, headers={"X-Vault-Token": root}
    )
    assert reply.status == 200, str(reply)
    auth: dict[str, str] = reply.body["auth"]
    return auth


async def test_file_storage_never_names_a_file_after_an_accessor(
    file_dev: FileDev,
) -> None:
    core, client, root, data_dir = file_dev.core, file_dev.client, file_dev.root, file_dev.data_dir
    auth = await create_token(client, root)
    await file_dev.storage.checkpoint()  # every key in its file
    names = " ".join(file_names(data_dir))
    assert auth["accessor"] not in names
    assert any(name.startswith("_") for name in names.split())
    headers = {"X-Vault-Token": root}
    listed = await call(client, "LIST", "/v1/auth/token/accessors", headers=headers)
    assert auth["accessor"] in listed.data["keys"]
    found = await call(
        client,
        "POST",
        "/v1/auth/token/lookup-accessor",
        json_body={"accessor": auth["accessor"]},
        headers=headers,
    )
    assert found.status == 200 and found.data["accessor"] == auth["accessor"]
    revoked = await call(
        client,
        "POST",
        "/v1/auth/token/revoke-accessor",
        json_body={"accessor": auth["accessor"]},
        headers=headers,
    )
    assert revoked.status == 204, str(revoked)
    assert auth["accessor"] not in await core.tokens.list_accessors()


async def test_plaintext_accessor_keys_of_older_versions_are_read_and_migrated(
    file_dev: FileDev,
) -> None:
    core, client, root, data_dir = file_dev.core, file_dev.client, file_dev.root, file_dev.data_dir
    auth = await create_token(client, root)
    accessor = auth["accessor"]
    # What an older version wrote: the accessor itself as the key.
    view = core.tokens._view
    [salted] = [
        name
        for name in await view.list("accessor/")
        if (await view.get_json(f"accessor/{name}"))["accessor"] == accessor
    ]
    pointer = await view.get_json(f"accessor/{salted}")
    await view.delete(f"accessor/{salted}")
    await view.put_json(f"accessor/{accessor}", {"key": pointer["key"]})
    await file_dev.storage.checkpoint()  # every key in its file
    assert accessor in " ".join(file_names(data_dir))

    assert (await core.tokens.lookup_accessor(accessor)) is not None
    assert accessor in await core.tokens.list_accessors()

    # Unsealing migrates it under its salted name.
    await core.seal()
    status = await core.unseal(file_dev.unseal_key)
    assert status.sealed is False
    await file_dev.storage.checkpoint()
    assert accessor not in " ".join(file_names(data_dir))
    found = await core.tokens.lookup_accessor(accessor)
    assert found is not None and found.accessor == accessor
    assert accessor in await core.tokens.list_accessors()
    assert await core.tokens.migrate_accessors() == 0


async def test_a_value_that_fails_to_decrypt_is_reported_without_its_key(dev: DevServer) -> None:
    written = await call(
        dev.client, "POST", "/v1/secret/data/k", json_body={"data": {"a": "1"}}, headers=dev.auth
    )
    assert written.status == 200, str(written)
    physical = dev.core.physical
    pending = ["logical/"]
    while pending:  # flip the last byte of every value of every mount (tampered storage)
        prefix = pending.pop()
        for name in await physical.list(prefix):
            if name.endswith("/"):
                pending.append(prefix + name)
                continue
            entry = await physical.get(prefix + name)
            assert entry is not None
            await physical.put(entry.key, entry.value[:-1] + bytes([entry.value[-1] ^ 1]))
    dev.core.barrier.invalidate_all()
    reply = await call(dev.client, "GET", "/v1/secret/data/k", headers=dev.auth)
    [message] = assert_error(reply, 500)
    assert message in ("a stored value failed to decrypt", "internal error"), message
    assert "logical/" not in message
