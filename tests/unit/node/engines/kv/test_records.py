"""KV v2 records: hand-written encodings match the ``asdict`` ones byte for byte,
and decoded records are reused only while the stored bytes are unchanged."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, replace
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from node.barrier.barrier import Barrier
from node.barrier.view import BarrierView
from node.engines.kv.records import KeyMetadata, MountConfig, VersionInfo, _format, now_rfc3339
from node.engines.kv.store import Abort, KVStore, valid_key
from node.engines.kv.v2 import KVv2Backend
from node.framework import backend as backend_module
from node.logical.request import Operation, Request
from node.logical.response import Response
from node.memo import DecodeMemo
from node.physical.inmem import InmemBackend
from sdk.physical import TxnOp

T1, T2, T3 = (
    "2026-01-02T03:04:05.000006Z",
    "2026-01-02T03:04:06.000000Z",
    "2026-02-03T04:05:06.789012Z",
)


def old_metadata_json(meta: KeyMetadata) -> dict[str, Any]:
    """What ``KeyMetadata.to_json`` returned before it was hand-written."""
    raw = asdict(meta)
    raw["versions"] = {str(k): asdict(v) for k, v in meta.versions.items()}
    return raw


def records() -> list[KeyMetadata]:
    return [
        KeyMetadata(data_id="a" * 32, created_time=T1),
        KeyMetadata(
            data_id="b" * 32,
            versions={1: VersionInfo(T1), 2: VersionInfo(T2, deletion_time=T3)},
            current_version=2,
            oldest_version=1,
            created_time=T1,
            updated_time=T2,
            custom_metadata={"owner": "ops", "ünïcode": "välue \u2603", "quote": 'a"b\\c'},
        ),
        KeyMetadata(
            data_id="c" * 32,
            versions={
                4: VersionInfo(T1, destroyed=True),
                5: VersionInfo(T2, deletion_time=T2),
                6: VersionInfo(T3, deletion_time=T3, destroyed=True),
                7: VersionInfo(T3),
            },
            current_version=7,
            oldest_version=4,
            created_time=T1,
            updated_time=T3,
            max_versions=4,
            cas_required=True,
            delete_version_after=3600,
        ),
        KeyMetadata(data_id="d" * 32, created_time=T2, delete_version_after=-1),
    ]


@pytest.mark.parametrize("meta", records(), ids=["empty", "custom", "deleted-destroyed", "off"])
def test_metadata_encoding_is_unchanged(meta: KeyMetadata) -> None:
    old = json.dumps(old_metadata_json(meta)).encode()
    assert json.dumps(meta.to_json()).encode() == old
    decoded = KeyMetadata.from_json(json.loads(old))
    assert decoded == meta
    assert json.dumps(decoded.to_json()).encode() == old


def test_mount_config_and_version_encodings_are_unchanged() -> None:
    for config in (MountConfig(), MountConfig(7, True, -1), MountConfig(0, False, 90)):
        assert json.dumps(config.to_json()) == json.dumps(asdict(config))
        assert MountConfig.from_json(json.loads(json.dumps(config.to_json()))) == config
    info = VersionInfo(T1, T2, True)
    assert json.dumps(info.to_json()) == json.dumps(asdict(info))


def test_from_json_leaves_its_input_alone_and_fills_defaults() -> None:
    raw = {"data_id": "e" * 32, "versions": {"3": {"created_time": T1}}, "created_time": T1}
    before = json.dumps(raw)
    meta = KeyMetadata.from_json(raw)
    assert json.dumps(raw) == before
    assert meta.versions == {3: VersionInfo(T1)}
    assert (meta.updated_time, meta.max_versions, meta.custom_metadata) == (T1, 0, {})


def test_copy_is_independent() -> None:
    meta = records()[1]
    clone = meta.copy()
    assert clone == meta
    # A change replaces the version record, which the copies share (its fields are
    # read-only to the type checker, tests/unit/sdk/test_record.py).
    assert clone.versions[2] is meta.versions[2]
    clone.versions[2] = replace(clone.versions[2], destroyed=True)
    clone.versions[3] = VersionInfo(T3)
    clone.custom_metadata["new"] = "x"
    assert meta == records()[1]


def test_to_json_does_not_alias_custom_metadata() -> None:
    meta = records()[1]
    meta.to_json()["custom_metadata"]["owner"] = "changed"
    meta.version_json(1)["custom_metadata"]["owner"] = "changed"
    meta.metadata_json()["custom_metadata"]["owner"] = "changed"
    assert meta.custom_metadata["owner"] == "ops"


def test_is_live_without_a_time_given() -> None:
    assert VersionInfo(T1).is_live()
    assert not VersionInfo(T1, destroyed=True).is_live()
    assert not VersionInfo(T1, deletion_time=T2).is_live()  # in the past
    assert VersionInfo(T1, deletion_time="9999-01-01T00:00:00.000000Z").is_live()
    assert VersionInfo(T1, deletion_time=T2).is_live(T1)


# -- the decode memo ----------------------------------------------------------------


def test_memo_reuses_only_identical_bytes() -> None:
    calls: list[bytes] = []

    def decode(raw: bytes) -> Any:
        calls.append(raw)
        return json.loads(raw)

    memo: DecodeMemo[Any] = DecodeMemo(decode, capacity=2)
    first = memo.decode("k", b'{"a":1}')
    fresh = json.dumps({"a": 1}, separators=(",", ":")).encode()
    assert memo.decode("k", fresh) is first  # equal bytes, another object
    assert memo.decode("k", b'{"a":2}') == {"a": 2}
    assert memo.decode("other", b'{"a":2}') == {"a": 2}  # keyed by storage key too
    assert len(calls) == 3
    memo.decode("third", b"{}")
    assert len(memo) == 2  # bounded: the least recently used went
    memo.decode("k", b'{"a":2}')
    assert len(calls) == 5
    memo.clear()
    assert len(memo) == 0


# -- the store over a real barrier ---------------------------------------------------


@pytest.fixture
async def view() -> BarrierView:
    barrier = Barrier(InmemBackend())
    await barrier.initialize(os.urandom(32))
    return BarrierView(barrier, "logical/kv/")


async def add_version(meta: KeyMetadata) -> list[TxnOp]:
    meta.add_version(T1, "", MountConfig())
    return []


async def test_a_write_by_another_store_is_seen(view: BarrierView) -> None:
    """Another writer (e.g. the active node, its entry applied here by Raft)
    changes the stored bytes, so a memoised decode is not reused."""
    here, elsewhere = KVStore(view), KVStore(view)
    await here.mutate("k", add_version, create=True)
    meta, revision = await here.load("k")
    assert meta is not None and meta.current_version == 1
    await elsewhere.mutate("k", add_version)
    again, newer = await here.load("k")
    assert again is not None and again.current_version == 2 and newer > revision
    await elsewhere.remove("k")
    assert await here.load("k") == (None, 0)


async def test_loads_share_one_decoded_record_until_it_changes(view: BarrierView) -> None:
    store = KVStore(view)
    written = await store.mutate("k", add_version, create=True)
    first, _ = await store.load("k")
    second, _ = await store.load("k")
    assert first is second is written
    await store.mutate("k", add_version)
    third, _ = await store.load("k")
    assert third is not first and third is not None and third.current_version == 2
    assert first.current_version == 1  # the shared record was never changed


async def test_an_aborted_mutation_leaves_the_shared_record_alone(view: BarrierView) -> None:
    store = KVStore(view)
    await store.mutate("k", add_version, create=True)

    async def half_done(meta: KeyMetadata) -> list[TxnOp]:
        meta.versions[1] = replace(meta.versions[1], destroyed=True)
        meta.custom_metadata["x"] = "y"
        raise Abort(Response(status=404))

    with pytest.raises(Abort):
        await store.mutate("k", half_done)
    meta, _ = await store.load("k")
    assert meta is not None and not meta.versions[1].destroyed and not meta.custom_metadata


async def test_a_mutation_that_changes_nothing_commits_nothing(view: BarrierView) -> None:
    store = KVStore(view)

    async def set_metadata(meta: KeyMetadata) -> list[TxnOp]:
        meta.custom_metadata = {"a": "1", "b": "2"}
        return []

    async def reorder(meta: KeyMetadata) -> list[TxnOp]:
        meta.custom_metadata = {"b": "2", "a": "1"}  # equal record, other byte order
        return []

    await store.mutate("k", set_metadata, create=True)
    _, revision = await store.load("k")
    await store.mutate("k", set_metadata)
    await store.mutate("k", reorder)
    meta, after = await store.load("k")
    assert after == revision
    assert meta is not None and list(meta.custom_metadata) == ["a", "b"]


async def test_the_config_follows_the_stored_record(view: BarrierView) -> None:
    """The decoded config is shared while its bytes are unchanged, and any change
    (this store's, another's) is seen at once."""
    here, elsewhere = KVStore(view), KVStore(view)
    assert await here.config() == MountConfig()

    def cas(config: MountConfig) -> None:
        config.cas_required = True

    await here.update_config(cas)
    first = await here.config()
    assert first == MountConfig(cas_required=True)
    assert await here.config() is first

    def versions(config: MountConfig) -> None:
        config.max_versions = 3

    await elsewhere.update_config(versions)
    assert await here.config() == MountConfig(max_versions=3, cas_required=True)
    assert first == MountConfig(cas_required=True)  # the shared one was never changed
    await view.delete("config")
    assert await here.config() == MountConfig()


async def test_version_bodies_follow_the_stored_bytes(view: BarrierView) -> None:
    store = KVStore(view)
    meta = await store.mutate("k", add_version, create=True)
    await view.put(store.version_key(meta, 1), b'{"v":"one"}')
    assert await store.version_data(meta, 1) == {"v": "one"}
    await view.put(store.version_key(meta, 1), b'{"v":"two"}')
    assert await store.version_data(meta, 1) == {"v": "two"}


async def test_remembered_routes_keep_each_path_s_captures(
    view: BarrierView, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backend_module, "_ROUTES_KEPT", 2)
    kv = KVv2Backend(view)
    for name in ("a", "b/c", "d"):
        await kv.handle(Request(Operation.UPDATE, f"data/{name}", {"data": {"v": name}}))
    for name in ("d", "a", "b/c", "a"):
        response = await kv.handle(Request(Operation.READ, f"data/{name}"))
        assert response is not None and response.data is not None
        assert response.data["data"] == {"v": name}
    assert len(kv._routes) == 2
    assert not await kv.exists(Request(Operation.UPDATE, "nowhere"))


def test_now_is_written_as_the_datetime_formatter_writes_it() -> None:
    """The remembered second plus microseconds: same text and width as formatting
    the aware datetime, and ordered with it."""
    for _ in range(2_000):  # crosses at least one remembered second now and then
        before = _format(datetime.now(UTC))
        now = now_rfc3339()
        after = _format(datetime.now(UTC))
        assert before <= now <= after
        assert len(now) == len(before)
        assert _format(datetime.fromisoformat(now)) == now


def _valid_key_before(path: str) -> bool:
    if not path or path.startswith("/") or path.endswith("/") or "//" in path:
        return False
    return "\x00" not in path and not any(p in (".", "..") for p in path.split("/"))


@given(st.text(alphabet="ab./\x00", max_size=12))
def test_valid_key_answers_as_before(path: str) -> None:
    assert valid_key(path) is _valid_key_before(path)
