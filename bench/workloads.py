"""The workloads, after hashicorp/vault-benchmark's tests, for each kind of target.

Coffer: KV v2 read (1,000 keys, 100-byte values) and write (a new version of a
random key), KV v1 read and write, token create + revoke (one operation = both
requests), userpass login, and a 90/10 mix of KV v2 reads and writes.
etcd: the same key space through the JSON gateway: ``kv2-read`` is a
serializable ``/v3/kv/range`` of one key, ``kv2-write`` a ``/v3/kv/put``.
ceiling: ``kv2-read`` is a GET, ``kv2-write`` a POST of the same body.
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
import string
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import aiohttp
from yarl import URL

from bench.loadgen import Op, Worker, expect
from bench.targets import Endpoints

__all__ = ["KEYS", "VALUE_BYTES", "WORKLOADS", "Workload", "workload"]

KEYS = 1000
VALUE_BYTES = 100
USER, PASSWORD = "bench", "bench-password-1234"
_BODIES = 64  # distinct write bodies, picked at random

#: A coroutine function, so that ``asyncio.run`` can take what it returns.
Setup = Callable[[Endpoints], Coroutine[Any, Any, None]]


@dataclass(frozen=True)
class Workload:
    name: str
    #: Prepares the target once (mounts, users, seed keys); idempotent.
    setup: Setup
    make_op: Callable[[Endpoints], Op]
    label: str = ""


def _value(rng: random.Random) -> str:
    return "".join(rng.choices(string.ascii_letters + string.digits, k=VALUE_BYTES))


def _values() -> list[str]:
    rng = random.Random(42)
    return [_value(rng) for _ in range(_BODIES)]


def _key(index: int) -> str:
    return f"bench/k{index:04d}"


def _urls(base: str, template: str) -> list[URL]:
    return [URL(base + template.format(key=_key(i)), encoded=True) for i in range(KEYS)]


async def _run_all(calls: list[Callable[[aiohttp.ClientSession], Awaitable[None]]]) -> None:
    """Run setup requests 32 at a time."""
    gate = asyncio.Semaphore(32)
    async with aiohttp.ClientSession() as session:

        async def one(call: Callable[[aiohttp.ClientSession], Awaitable[None]]) -> None:
            async with gate:
                await call(session)

        await asyncio.gather(*(one(c) for c in calls))


# -- Coffer ---------------------------------------------------------------------------


def _headers(ep: Endpoints) -> dict[str, str]:
    return {"X-Vault-Token": ep.token, "Content-Type": "application/json", **ep.headers}


async def _post(
    session: aiohttp.ClientSession, url: str, body: object, ep: Endpoints, *ok: int
) -> bytes:
    async with session.post(url, data=json.dumps(body), headers=_headers(ep)) as response:
        return await expect(response, *(ok or (200, 204)))


async def _ensure_mount(ep: Endpoints, path: str, body: dict[str, object]) -> None:
    async with aiohttp.ClientSession() as session:
        url = f"{ep.write}/v1/{path}"
        async with session.post(url, data=json.dumps(body), headers=_headers(ep)) as response:
            text = await response.text()
            if response.status not in (200, 204) and "already in use" not in text:
                raise RuntimeError(f"{path}: {response.status} {text}")


def _seed_coffer(prefix: str, wrap: bool) -> Setup:
    async def setup(ep: Endpoints) -> None:
        values = _values()

        def call(i: int) -> Callable[[aiohttp.ClientSession], Awaitable[None]]:
            data = {"value": values[i % _BODIES]}
            body = {"data": data} if wrap else data

            async def run(session: aiohttp.ClientSession) -> None:
                await _post(session, f"{ep.write}/v1/{prefix}/{_key(i)}", body, ep)

            return run

        await _run_all([call(i) for i in range(KEYS)])

    return setup


async def _setup_kv2(ep: Endpoints) -> None:
    await _seed_coffer("secret/data", wrap=True)(ep)


async def _setup_kv1(ep: Endpoints) -> None:
    await _ensure_mount(ep, "sys/mounts/kv1", {"type": "kv"})
    await _seed_coffer("kv1", wrap=False)(ep)


async def _setup_userpass(ep: Endpoints) -> None:
    await _ensure_mount(ep, "sys/auth/userpass", {"type": "userpass"})
    async with aiohttp.ClientSession() as session:
        await _post(
            session, f"{ep.write}/v1/auth/userpass/users/{USER}", {"password": PASSWORD}, ep
        )


async def _no_setup(ep: Endpoints) -> None:
    return None


def _coffer_read(template: str) -> Callable[[Endpoints], Op]:
    def make(ep: Endpoints) -> Op:
        urls = {base: _urls(base, template) for base in ep.reads}
        headers = _headers(ep)

        async def op(worker: Worker) -> None:
            url = urls[ep.read_url(worker.index)][worker.rng.randrange(KEYS)]
            async with worker.session.get(url, headers=headers) as response:
                await expect(response, 200)

        return op

    return make


def _coffer_write(template: str, wrap: bool) -> Callable[[Endpoints], Op]:
    def make(ep: Endpoints) -> Op:
        urls = _urls(ep.write, template)
        bodies = [
            json.dumps({"data": {"value": v}} if wrap else {"value": v}).encode() for v in _values()
        ]
        headers = _headers(ep)

        async def op(worker: Worker) -> None:
            url = urls[worker.rng.randrange(KEYS)]
            body = bodies[worker.rng.randrange(_BODIES)]
            async with worker.session.put(url, data=body, headers=headers) as response:
                await expect(response, 200, 204)

        return op

    return make


def _mixed(
    read: Callable[[Endpoints], Op], write: Callable[[Endpoints], Op]
) -> Callable[[Endpoints], Op]:
    def make(ep: Endpoints) -> Op:
        read_op, write_op = read(ep), write(ep)

        async def op(worker: Worker) -> None:
            await (write_op if worker.rng.random() < 0.1 else read_op)(worker)

        return op

    return make


def _token_create_revoke(ep: Endpoints) -> Op:
    create = URL(f"{ep.write}/v1/auth/token/create", encoded=True)
    revoke = URL(f"{ep.write}/v1/auth/token/revoke", encoded=True)
    headers = _headers(ep)
    body = json.dumps({"ttl": "1h", "policies": ["default"]}).encode()

    async def op(worker: Worker) -> None:
        async with worker.session.post(create, data=body, headers=headers) as response:
            raw = await expect(response, 200)
        token = json.loads(raw)["auth"]["client_token"]
        payload = json.dumps({"token": token}).encode()
        async with worker.session.post(revoke, data=payload, headers=headers) as response:
            await expect(response, 200, 204)

    return op


def _userpass_login(ep: Endpoints) -> Op:
    url = URL(f"{ep.write}/v1/auth/userpass/login/{USER}", encoded=True)
    body = json.dumps({"password": PASSWORD}).encode()
    headers = {"Content-Type": "application/json"}

    async def op(worker: Worker) -> None:
        async with worker.session.post(url, data=body, headers=headers) as response:
            await expect(response, 200)

    return op


_KV2_READ = _coffer_read("/v1/secret/data/{key}")
_KV2_WRITE = _coffer_write("/v1/secret/data/{key}", wrap=True)

_COFFER = [
    Workload("kv2-read", _setup_kv2, _KV2_READ, "KV v2 read"),
    Workload("kv2-write", _setup_kv2, _KV2_WRITE, "KV v2 write"),
    Workload("kv1-read", _setup_kv1, _coffer_read("/v1/kv1/{key}"), "KV v1 read"),
    Workload("kv1-write", _setup_kv1, _coffer_write("/v1/kv1/{key}", wrap=False), "KV v1 write"),
    Workload("token-create-revoke", _no_setup, _token_create_revoke, "token create + revoke"),
    Workload("userpass-login", _setup_userpass, _userpass_login, "userpass login"),
    Workload(
        "mixed-90-10", _setup_kv2, _mixed(_KV2_READ, _KV2_WRITE), "KV v2 90% read / 10% write"
    ),
]

# -- etcd -----------------------------------------------------------------------------


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _etcd_put_body(index: int, value: str) -> bytes:
    return json.dumps({"key": _b64(_key(index)), "value": _b64(value)}).encode()


async def _setup_etcd(ep: Endpoints) -> None:
    values = _values()

    def call(i: int) -> Callable[[aiohttp.ClientSession], Awaitable[None]]:
        async def run(session: aiohttp.ClientSession) -> None:
            body = _etcd_put_body(i, values[i % _BODIES])
            async with session.post(f"{ep.write}/v3/kv/put", data=body) as response:
                await expect(response, 200)

        return run

    await _run_all([call(i) for i in range(KEYS)])


def _etcd_read(ep: Endpoints) -> Op:
    urls = {base: URL(f"{base}/v3/kv/range", encoded=True) for base in ep.reads}
    bodies = [
        json.dumps({"key": _b64(_key(i)), "serializable": True}).encode() for i in range(KEYS)
    ]

    async def op(worker: Worker) -> None:
        body = bodies[worker.rng.randrange(KEYS)]
        async with worker.session.post(urls[ep.read_url(worker.index)], data=body) as response:
            raw = await expect(response, 200)
        if b'"kvs"' not in raw:
            raise aiohttp.ClientPayloadError("range returned no key")

    return op


def _etcd_write(ep: Endpoints) -> Op:
    url = URL(f"{ep.write}/v3/kv/put", encoded=True)
    values = _values()

    async def op(worker: Worker) -> None:
        rng = worker.rng
        body = _etcd_put_body(rng.randrange(KEYS), values[rng.randrange(_BODIES)])
        async with worker.session.post(url, data=body) as response:
            await expect(response, 200)

    return op


_ETCD = [
    Workload("kv2-read", _setup_etcd, _etcd_read, "range, serializable"),
    Workload("kv2-write", _setup_etcd, _etcd_write, "put"),
    Workload("mixed-90-10", _setup_etcd, _mixed(_etcd_read, _etcd_write), "90% range / 10% put"),
]

# -- ceiling --------------------------------------------------------------------------


def _ceiling_get(ep: Endpoints) -> Op:
    url = URL(f"{ep.write}/v1/secret/data/bench/k0000", encoded=True)

    async def op(worker: Worker) -> None:
        async with worker.session.get(url) as response:
            await expect(response, 200)

    return op


def _ceiling_post(ep: Endpoints) -> Op:
    url = URL(f"{ep.write}/v1/secret/data/bench/k0000", encoded=True)
    body = json.dumps({"data": {"value": _values()[0]}}).encode()

    async def op(worker: Worker) -> None:
        async with worker.session.post(url, data=body) as response:
            await expect(response, 200)

    return op


_CEILING = [
    Workload("kv2-read", _no_setup, _ceiling_get, "GET, small JSON answer"),
    Workload("kv2-write", _no_setup, _ceiling_post, "POST, small JSON answer"),
]

WORKLOADS: dict[str, dict[str, Workload]] = {
    "coffer": {w.name: w for w in _COFFER},
    "etcd": {w.name: w for w in _ETCD},
    "ceiling": {w.name: w for w in _CEILING},
}


def workload(kind: str, name: str) -> Workload:
    return WORKLOADS[kind][name]
