"""Token lookups reuse decoded entries only while the stored bytes are unchanged,
and entries by token ID only while nothing stored changed; revocation, expiry
and use counts still take effect on the next request."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Callable
from dataclasses import asdict

import pytest

from node.barrier.barrier import Barrier
from node.barrier.view import BarrierView
from node.tokens.entry import TokenEntry
from node.tokens.store import TokenStore
from sdk.errors import PermissionDeniedError
from tests.support.view_reads import count_reads


@pytest.fixture
def view(barrier: Barrier) -> BarrierView:
    return BarrierView(barrier, "sys/token/")


#: Builds a store over the view, keeping entries by token ID or not.
StoreFactory = Callable[[BarrierView], TokenStore]


@pytest.fixture(params=["by-token-id", "by-storage-key-only"])
def make_store(request: pytest.FixtureRequest, barrier: Barrier) -> StoreFactory:
    """Every behaviour below holds with entries kept by token ID (as the core
    builds the store) and without."""
    if request.param == "by-token-id":
        return lambda view: TokenStore(view, generation=barrier.read_generation)
    return TokenStore


def new_entry(**changes: object) -> TokenEntry:
    base = TokenEntry(
        key="", accessor="", policies=["default", "dev"], display_name="t", creation_time=1.5
    )
    return base.with_changes(**changes)


@pytest.mark.parametrize(
    "entry",
    [
        new_entry(key="k", accessor="a"),
        new_entry(
            key="k",
            accessor="a",
            parent="p",
            meta={"user": "ünïcode \u2603"},
            num_uses=3,
            expire_time=1.7e9,
            bound_cidrs=["10.0.0.0/8"],
            last_renewal_time=1.6e9,
            role="r",
            max_ttl=60,
        ),
    ],
)
def test_entry_encoding_is_unchanged(entry: TokenEntry) -> None:
    encoded = json.dumps(entry.to_json(), separators=(",", ":"))
    assert encoded == json.dumps(asdict(entry), separators=(",", ":"))
    assert TokenEntry.from_json(json.loads(encoded)) == entry
    entry.to_json()["policies"].append("x")
    assert entry.policies == ["default", "dev"]


async def test_hash_id_is_the_salted_hmac(view: BarrierView, make_store: StoreFactory) -> None:
    store = make_store(view)
    salt = await store._salt_bytes()
    expected = hmac.new(salt, b"s.token", hashlib.sha256).hexdigest()
    assert await store.hash_id("s.token") == expected


async def test_lookups_share_the_decoded_entry(view: BarrierView, make_store: StoreFactory) -> None:
    store = make_store(view)
    token, _ = await store.store_new(new_entry())
    first = await store.lookup(token)
    assert first is not None and await store.lookup(token) is first


async def test_revocation_takes_effect_at_once(view: BarrierView, make_store: StoreFactory) -> None:
    store = make_store(view)
    token, _ = await store.store_new(new_entry())
    assert await store.lookup(token) is not None
    await store.revoke(token)
    assert await store.lookup(token) is None


async def test_a_change_made_by_another_node_is_seen(
    view: BarrierView, make_store: StoreFactory
) -> None:
    """Another store over the same storage stands for the active node, whose
    writes reach this node's storage through Raft: the bytes change."""
    here, active = make_store(view), make_store(view)
    token, _ = await here.store_new(new_entry())
    entry = await here.lookup(token)
    assert entry is not None and entry.policies == ["default", "dev"]
    await active.save(entry.with_changes(policies=["default"]))
    changed = await here.lookup(token)
    assert changed is not None and changed.policies == ["default"]
    await active.revoke(token)
    assert await here.lookup(token) is None


async def test_expiry_is_checked_on_every_lookup(
    view: BarrierView, make_store: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = make_store(view)
    now = time.time()
    token, _ = await store.store_new(new_entry(expire_time=now + 100))
    assert await store.lookup(token) is not None
    monkeypatch.setattr(time, "time", lambda: now + 101)
    assert await store.lookup(token) is None


async def test_use_counts_are_spent_through_the_memo(
    view: BarrierView, make_store: StoreFactory
) -> None:
    store = make_store(view)
    token, _ = await store.store_new(new_entry(num_uses=2))
    for left in (1, -1):
        entry = await store.lookup(token)
        assert entry is not None
        assert (await store.use(entry)).num_uses == left
    assert await store.lookup(token) is None  # used up (-1), even before revocation
    entry = await store.get_by_key(await store.hash_id(token))
    assert entry is not None
    with pytest.raises(PermissionDeniedError):
        await store.use(entry)


async def test_seal_drops_decoded_entries(view: BarrierView, make_store: StoreFactory) -> None:
    store = make_store(view)
    token, _ = await store.store_new(new_entry())
    first = await store.lookup(token)
    store.forget_cached_salt()
    again = await store.lookup(token)
    assert again == first and again is not first


# -- entries kept by token ID ----------------------------------------------------


async def test_a_token_is_read_once_while_nothing_stored_changes(
    barrier: Barrier, view: BarrierView, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = TokenStore(view, generation=barrier.read_generation)
    token, _ = await store.store_new(new_entry())
    reads = count_reads(view, monkeypatch)
    first = await store.lookup(token)
    assert first is not None and reads == [f"id/{first.key}"]
    assert await store.lookup(token) is first
    assert await store.lookup(token) is first
    assert len(reads) == 1

    # Any stored change, even of an unrelated key, and the entry is read again.
    await BarrierView(barrier, "secret/").put("unrelated", b"x")
    assert await store.lookup(token) is first  # same bytes: the decoded entry is shared
    assert len(reads) == 2


async def test_without_the_generation_every_lookup_reads(
    barrier: Barrier, view: BarrierView, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = TokenStore(view, generation=barrier.read_generation)
    token, _ = await store.store_new(new_entry())
    barrier.cache.configure(barrier.cache.size, enabled=False)
    assert barrier.read_generation() is None
    reads = count_reads(view, monkeypatch)
    for _ in range(3):
        assert await store.lookup(token) is not None
    assert len(reads) == 3


async def test_a_revocation_applied_from_raft_is_seen_on_the_next_lookup(
    barrier: Barrier, view: BarrierView, root_key: bytes
) -> None:
    """The active node's barrier writes to the shared storage, as Raft's apply
    does on this node; the invalidation that follows every apply
    (``node.cluster.invalidation``) is all this node is told."""
    here = TokenStore(view, generation=barrier.read_generation)
    token, entry = await here.store_new(new_entry())
    assert await here.lookup(token) is not None

    active_barrier = Barrier(barrier.physical)
    await active_barrier.unseal(root_key)
    active = TokenStore(BarrierView(active_barrier, "sys/token/"))
    await active.revoke(token)
    barrier.invalidate([f"sys/token/id/{entry.key}"])

    assert await here.lookup(token) is None
