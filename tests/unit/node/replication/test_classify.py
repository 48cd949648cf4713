"""The one decision per barrier key: which secondary gets it."""

from __future__ import annotations

import pytest

from node.replication.classify import (
    PERF_MIRROR_KEY,
    DataClass,
    Kind,
    MountIndex,
    PathsFilter,
    classify,
    filter_table,
    merge_table,
    sends,
)

INDEX = MountIndex.build(
    [
        ("logical/u-secret/", "secret/", False),
        ("logical/u-cubby/", "cubbyhole/", True),
        ("logical/u-local/", "localkv/", True),
        ("logical/u-team/", "team/", False),
        ("auth/u-userpass/", "auth/userpass/", False),
        ("namespaces/ns1id/logical/u-nskv/", "ns1/kv/", False),
    ],
    [("root", ""), ("ns1id", "ns1/")],
)


@pytest.mark.parametrize(
    ("key", "cls", "route"),
    [
        ("core/raft/nodes/node1", DataClass.IGNORED, ""),
        ("core/replication/dr/state", DataClass.IGNORED, ""),
        ("core/cluster", DataClass.IGNORED, ""),
        ("core/dr-operation-token/abc", DataClass.IGNORED, ""),
        ("core/keyring", DataClass.REPLICATED, ""),
        ("core/seal-config", DataClass.REPLICATED, ""),
        ("sys/token/id/abc", DataClass.LOCAL, ""),
        ("sys/token/salt", DataClass.LOCAL, ""),
        ("sys/token/roles/ci", DataClass.REPLICATED, ""),
        ("namespaces/ns1id/sys/token/roles/ci", DataClass.REPLICATED, "ns1/"),
        ("core/mounts", DataClass.TABLE, ""),
        ("core/auth", DataClass.TABLE, ""),
        ("core/audit", DataClass.TABLE, ""),
        ("namespaces/ns1id/core/mounts", DataClass.TABLE, "ns1/"),
        ("logical/u-secret/data/x", DataClass.REPLICATED, "secret/"),
        ("logical/u-cubby/tok/x", DataClass.LOCAL, "cubbyhole/"),
        ("logical/u-local/app", DataClass.LOCAL, "localkv/"),
        ("auth/u-userpass/user/ops", DataClass.REPLICATED, "auth/userpass/"),
        ("namespaces/ns1id/logical/u-nskv/a", DataClass.REPLICATED, "ns1/kv/"),
        ("namespaces/ns1id/sys/policy/policy/p", DataClass.REPLICATED, "ns1/"),
        ("sys/namespaces/ns1id", DataClass.REPLICATED, "ns1/"),
        ("sys/policy/policy/admin", DataClass.REPLICATED, ""),
        # A mount this side does not know (removed here): replicated, so a sync can delete it.
        ("logical/u-gone/x", DataClass.REPLICATED, ""),
    ],
)
def test_every_key_has_one_class(key: str, cls: DataClass, route: str) -> None:
    verdict = classify(key, INDEX)
    assert (verdict.cls, verdict.route) == (cls, route)


def test_dr_gets_everything_but_ignored_keys_and_perf_no_local_data() -> None:
    for key in ("sys/token/id/abc", "logical/u-local/app", "logical/u-secret/x", "core/mounts"):
        assert sends(classify(key, INDEX), Kind.DR, PathsFilter("deny", ("secret/",)))
    assert not sends(classify("core/raft/sync/n", INDEX), Kind.DR, None)
    assert not sends(classify("sys/token/id/abc", INDEX), Kind.PERFORMANCE, None)
    assert not sends(classify("logical/u-local/app", INDEX), Kind.PERFORMANCE, None)
    assert sends(classify("logical/u-secret/x", INDEX), Kind.PERFORMANCE, None)


def test_deny_filter_keeps_a_mount_and_a_namespace_off_a_perf_secondary() -> None:
    deny = PathsFilter("deny", ("team/", "ns1/"))
    off = ("logical/u-team/x", "namespaces/ns1id/logical/u-nskv/a", "sys/namespaces/ns1id")
    for key in off:
        assert not sends(classify(key, INDEX), Kind.PERFORMANCE, deny), key
    assert sends(classify("logical/u-secret/x", INDEX), Kind.PERFORMANCE, deny)
    assert sends(classify("core/keyring", INDEX), Kind.PERFORMANCE, deny)


def test_allow_filter_keeps_only_listed_paths_and_the_pinned_mounts() -> None:
    allow = PathsFilter("allow", ("ns1/kv/",))
    assert sends(classify("namespaces/ns1id/logical/u-nskv/a", INDEX), Kind.PERFORMANCE, allow)
    assert sends(classify("sys/namespaces/ns1id", INDEX), Kind.PERFORMANCE, allow)
    assert not sends(classify("logical/u-team/x", INDEX), Kind.PERFORMANCE, allow)
    assert allow.keeps("sys/") and allow.keeps("ns1/identity/") and allow.keeps("auth/token/")
    assert not allow.keeps("auth/userpass/")
    assert not PathsFilter("allow", ("secret/",)).keeps("ns1/sys/")


def test_a_filtered_namespace_takes_its_own_sys_and_identity_mounts_with_it() -> None:
    deny = PathsFilter("deny", ("ns1/",))
    assert not deny.keeps("ns1/sys/") and not deny.keeps("ns1/identity/")
    assert deny.keeps("sys/") and deny.keeps("ns2/sys/")


def test_a_bad_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="allow or deny"):
        PathsFilter("whitelist", ("a/",))


def test_tables_lose_local_and_filtered_entries_and_merge_keeps_the_secondarys_own() -> None:
    primary = [
        {"path": "sys/", "local": False, "uuid": "p-sys"},
        {"path": "cubbyhole/", "local": True, "uuid": "p-cubby"},
        {"path": "team/", "local": False, "uuid": "p-team"},
        {"path": "secret/", "local": False, "uuid": "p-secret"},
    ]
    sent = filter_table(primary, "", PathsFilter("deny", ("team/",)))
    assert [e["uuid"] for e in sent] == ["p-sys", "p-secret"]
    mine = [
        {"path": "sys/", "local": False, "uuid": "s-sys"},
        {"path": "cubbyhole/", "local": True, "uuid": "s-cubby"},
        {"path": "mine/", "local": True, "uuid": "s-mine"},
        {"path": "secret/", "local": True, "uuid": "s-clash"},
    ]
    merged = merge_table(sent, mine)
    assert [e["uuid"] for e in merged] == ["p-sys", "p-secret", "s-cubby", "s-mine"]


def test_filter_round_trips() -> None:
    found = PathsFilter("deny", ("a/", "b/"))
    assert PathsFilter.from_json(found.to_json()) == found


def test_the_performance_state_copy_goes_to_dr_secondaries_only() -> None:
    """It holds the performance CA's key: a DR promote takes the role over with it."""
    verdict = classify(PERF_MIRROR_KEY, INDEX)
    assert sends(verdict, Kind.DR, None)
    assert not sends(verdict, Kind.PERFORMANCE, None)
    assert not sends(verdict, Kind.PERFORMANCE, PathsFilter("deny", ("secret/",)))
    assert classify("core/replication/performance/state", INDEX).cls is DataClass.IGNORED
