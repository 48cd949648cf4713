"""The config loader: real files on disk, every stanza, every error naming file and key."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from node.config import (
    ConfigError,
    ListenerConfig,
    ReplicationConfig,
    SealStanza,
    ServerConfig,
    StorageConfig,
    TelemetryConfig,
    dev_config,
    load_config,
)

PLAIN_LISTENER = 'listener "tcp" {\n  tls_disable = true\n}\n'
INMEM = 'storage "inmem" {}\n'

FULL_HCL = """
ui            = true
disable_mlock = true
api_addr      = "https://coffer-1.example:8200"
cluster_addr  = "https://coffer-1.example:8201"
cluster_name  = "prod"
log_level     = "debug"
default_lease_ttl = "1h30m"
max_lease_ttl     = "768h"

listener "tcp" {
  address          = "0.0.0.0:8300"
  tls_cert_file    = "/etc/coffer/tls.crt"
  tls_key_file     = "/etc/coffer/tls.key"
  tls_disable      = "false"
  max_request_size = 1048576
  tls_min_version  = "tls13"
}

storage "raft" {
  path                   = "/var/lib/coffer"
  node_id                = "coffer-1"
  performance_multiplier = 5
  retry_join {
    leader_api_addr       = "https://coffer-2.example:8200"
    leader_ca_cert_file   = "/etc/coffer/ca.crt"
    leader_tls_servername = "coffer-2"
  }
  retry_join {
    leader_api_addr         = "https://coffer-3.example:8200"
    leader_client_cert_file = "/etc/coffer/client.crt"
    leader_client_key_file  = "/etc/coffer/client.key"
  }
}

seal "pkcs11" {
  lib            = "/usr/lib/softhsm/libsofthsm2.so"
  slot           = 0
  pin            = "s3cret-pin"
  key_label      = "coffer-root"
  hmac_key_label = "coffer-hmac"
  generate_key   = true
  mechanism      = "0x1087"
  token_label    = "coffer"
}

telemetry {
  prometheus_retention_time      = "12h"
  disable_hostname               = true
  unauthenticated_metrics_access = "true"
}
"""


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text)
    return path


def load(tmp_path: Path, text: str, name: str = "config.hcl") -> ServerConfig:
    return load_config([str(write(tmp_path, name, text))])


def refused(tmp_path: Path, text: str, name: str = "config.hcl") -> str:
    """The ConfigError message; it must always name the file."""
    path = write(tmp_path, name, text)
    with pytest.raises(ConfigError) as caught:
        load_config([str(path)])
    message = str(caught.value)
    assert str(path) in message
    return message


# --- every stanza parses -----------------------------------------------------


def test_full_hcl_config_parses_every_stanza(tmp_path: Path) -> None:
    config = load(tmp_path, FULL_HCL)

    assert config.listener == ListenerConfig(
        address="0.0.0.0:8300",
        tls_disable=False,
        tls_cert_file="/etc/coffer/tls.crt",
        tls_key_file="/etc/coffer/tls.key",
        max_request_size=1048576,
        tls_min_version="tls13",
    )
    assert config.storage == StorageConfig(
        "raft",
        {
            "path": "/var/lib/coffer",
            "node_id": "coffer-1",
            "performance_multiplier": 5,
            "retry_join": [
                {
                    "leader_api_addr": "https://coffer-2.example:8200",
                    "leader_ca_cert_file": "/etc/coffer/ca.crt",
                    "leader_tls_servername": "coffer-2",
                },
                {
                    "leader_api_addr": "https://coffer-3.example:8200",
                    "leader_client_cert_file": "/etc/coffer/client.crt",
                    "leader_client_key_file": "/etc/coffer/client.key",
                },
            ],
        },
    )
    assert config.seal == SealStanza(
        "pkcs11",
        {
            "lib": "/usr/lib/softhsm/libsofthsm2.so",
            "slot": "0",
            "pin": "s3cret-pin",
            "key_label": "coffer-root",
            "hmac_key_label": "coffer-hmac",
            "generate_key": "true",
            "mechanism": "0x1087",
            "token_label": "coffer",
        },
    )
    assert config.seal_type == "pkcs11"
    assert config.telemetry == TelemetryConfig(
        prometheus_retention_time=12 * 3600,
        disable_hostname=True,
        unauthenticated_metrics_access=True,
    )
    assert config.ui is True
    assert config.api_addr == "https://coffer-1.example:8200"
    assert config.cluster_addr == "https://coffer-1.example:8201"
    assert config.cluster_name == "prod"
    assert config.log_level == "debug"
    assert config.default_lease_ttl == 5400
    assert config.max_lease_ttl == 768 * 3600
    assert config.sources == (str(tmp_path / "config.hcl"),)


def test_full_config_in_json_matches_hcl(tmp_path: Path) -> None:
    from_hcl = load(tmp_path, FULL_HCL)
    doc = {
        "ui": True,
        "disable_mlock": True,
        "api_addr": "https://coffer-1.example:8200",
        "cluster_addr": "https://coffer-1.example:8201",
        "cluster_name": "prod",
        "log_level": "debug",
        "default_lease_ttl": "1h30m",
        "max_lease_ttl": "768h",
        "listener": [
            {
                "tcp": {
                    "address": "0.0.0.0:8300",
                    "tls_cert_file": "/etc/coffer/tls.crt",
                    "tls_key_file": "/etc/coffer/tls.key",
                    "tls_disable": "false",
                    "max_request_size": 1048576,
                    "tls_min_version": "tls13",
                }
            }
        ],
        "storage": {
            "raft": {
                "path": "/var/lib/coffer",
                "node_id": "coffer-1",
                "performance_multiplier": 5,
                "retry_join": [
                    {
                        "leader_api_addr": "https://coffer-2.example:8200",
                        "leader_ca_cert_file": "/etc/coffer/ca.crt",
                        "leader_tls_servername": "coffer-2",
                    },
                    {
                        "leader_api_addr": "https://coffer-3.example:8200",
                        "leader_client_cert_file": "/etc/coffer/client.crt",
                        "leader_client_key_file": "/etc/coffer/client.key",
                    },
                ],
            }
        },
        "seal": {
            "pkcs11": {
                "lib": "/usr/lib/softhsm/libsofthsm2.so",
                "slot": "0",
                "pin": "s3cret-pin",
                "key_label": "coffer-root",
                "hmac_key_label": "coffer-hmac",
                "generate_key": "true",
                "mechanism": "0x1087",
                "token_label": "coffer",
            }
        },
        "telemetry": [
            {
                "prometheus_retention_time": "12h",
                "disable_hostname": True,
                "unauthenticated_metrics_access": True,
            }
        ],
    }
    from_json = load(tmp_path, json.dumps(doc), name="config.json")

    assert dataclasses.replace(from_json, sources=()) == dataclasses.replace(from_hcl, sources=())


def test_file_storage_and_shamir_seal(tmp_path: Path) -> None:
    config = load(
        tmp_path, PLAIN_LISTENER + 'storage "file" {\n  path = "/srv/coffer"\n}\nseal "shamir" {}\n'
    )
    assert config.storage == StorageConfig("file", {"path": "/srv/coffer"})
    assert config.seal == SealStanza("shamir", {})
    assert config.seal_type == "shamir"


def test_single_retry_join_block_becomes_a_list(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        PLAIN_LISTENER + 'storage "raft" {\n  path = "/r"\n'
        '  retry_join {\n    leader_api_addr = "https://a:8200"\n  }\n}\n',
    )
    assert config.storage.options == {
        "path": "/r",
        "retry_join": [{"leader_api_addr": "https://a:8200"}],
    }


def test_raft_without_retry_join_has_empty_list(tmp_path: Path) -> None:
    config = load(tmp_path, PLAIN_LISTENER + 'storage "raft" {\n  path = "/r"\n}\n')
    assert config.storage.options == {"path": "/r", "retry_join": []}


def test_pkcs11_integer_mechanism_is_kept_as_hex(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        PLAIN_LISTENER + INMEM + 'seal "pkcs11" {\n  lib = "/l.so"\n  key_label = "k"\n'
        "  mechanism = 0x1087\n  generate_key = 0\n}\n",
    )
    assert config.seal is not None
    assert config.seal.options == {
        "lib": "/l.so",
        "key_label": "k",
        "mechanism": "0x1087",
        "generate_key": "false",
    }


# --- defaults ----------------------------------------------------------------


def test_defaults(tmp_path: Path) -> None:
    config = load(tmp_path, 'listener "tcp" {\n  tls_disable = 1\n}\n' + INMEM)

    assert config.listener == ListenerConfig(
        address="127.0.0.1:8200",
        tls_disable=True,
        tls_cert_file=None,
        tls_key_file=None,
        max_request_size=33554432,
        tls_min_version="tls12",
    )
    assert config.storage == StorageConfig("inmem", {})
    assert config.seal is None
    assert config.seal_type == "shamir"
    assert config.ui is False
    assert config.telemetry == TelemetryConfig(86400, False, False)
    assert (config.api_addr, config.cluster_addr, config.cluster_name) == ("", "", "")
    assert config.log_level == "info"
    assert config.default_lease_ttl == 2764800
    assert config.max_lease_ttl == 2764800


def test_zero_means_default_for_request_size_and_lease_ttls(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        'listener "tcp" {\n  tls_disable = 1\n  max_request_size = 0\n}\n'
        + INMEM
        + 'default_lease_ttl = 0\nmax_lease_ttl = "0s"\n',
    )
    assert config.listener.max_request_size == 33554432
    assert config.default_lease_ttl == 2764800
    assert config.max_lease_ttl == 2764800


def test_dev_config() -> None:
    config = dev_config("127.0.0.1:8222")
    assert config.listener.address == "127.0.0.1:8222"
    assert config.listener.tls_disable is True
    assert config.storage == StorageConfig("inmem", {})
    assert config.ui is True
    assert config.seal is None
    assert dev_config().listener.address == "127.0.0.1:8200"


def test_config_is_frozen(tmp_path: Path) -> None:
    config = load(tmp_path, PLAIN_LISTENER + INMEM)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.ui = True  # type: ignore[misc]


# --- value forms -------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("true", True),
        ("1", True),
        ('"true"', True),
        ('"1"', True),
        ('"TRUE"', True),
        ("false", False),
        ("0", False),
        ('"false"', False),
        ('"0"', False),
    ],
)
def test_tls_disable_forms(tmp_path: Path, raw: str, expected: bool) -> None:
    certs = 'tls_cert_file = "/c"\n  tls_key_file = "/k"\n'
    config = load(tmp_path, f'listener "tcp" {{\n  tls_disable = {raw}\n  {certs}}}\n' + INMEM)
    assert config.listener.tls_disable is expected


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [
        ('"768h"', 768 * 3600),
        ('"1h30m"', 5400),
        ('"10s"', 10),
        ('"45m"', 2700),
        ("3600", 3600),
        ('"120"', 120),
    ],
)
def test_durations(tmp_path: Path, raw: str, seconds: int) -> None:
    config = load(
        tmp_path,
        PLAIN_LISTENER + INMEM + f"default_lease_ttl = {raw}\nmax_lease_ttl = {raw}\n"
        f"telemetry {{\n  prometheus_retention_time = {raw}\n}}\n",
    )
    assert config.default_lease_ttl == seconds
    assert config.max_lease_ttl == seconds
    assert config.telemetry.prometheus_retention_time == seconds


@pytest.mark.parametrize("raw", ['"3x"', '"forever"', '"h1"', "true"])
def test_bad_duration_names_file_and_key(tmp_path: Path, raw: str) -> None:
    message = refused(tmp_path, PLAIN_LISTENER + INMEM + f"max_lease_ttl = {raw}\n")
    assert "max_lease_ttl" in message


def test_negative_duration_is_refused(tmp_path: Path) -> None:
    message = refused(tmp_path, PLAIN_LISTENER + INMEM + 'default_lease_ttl = "-1h"\n')
    assert "default_lease_ttl: must not be negative" in message


def test_default_lease_ttl_above_max_is_refused(tmp_path: Path) -> None:
    message = refused(
        tmp_path, PLAIN_LISTENER + INMEM + 'default_lease_ttl = "48h"\nmax_lease_ttl = "24h"\n'
    )
    assert "default_lease_ttl (172800s) is greater than max_lease_ttl (86400s)" in message


@pytest.mark.parametrize(
    ("raw", "expected"), [('"WARNING"', "warn"), ('"warn"', "warn"), ('"trace"', "trace")]
)
def test_log_levels(tmp_path: Path, raw: str, expected: str) -> None:
    assert load(tmp_path, PLAIN_LISTENER + INMEM + f"log_level = {raw}\n").log_level == expected


def test_pin_never_appears_in_repr_or_str(tmp_path: Path) -> None:
    config = load(tmp_path, FULL_HCL)
    assert config.seal is not None
    assert config.seal.options["pin"] == "s3cret-pin"
    for text in (repr(config.seal), str(config.seal), repr(config), str(config), f"{config}"):
        assert "s3cret-pin" not in text
        assert "coffer-root" in text  # the rest of the stanza is still shown


# --- several sources ---------------------------------------------------------


def test_directory_loads_hcl_and_json_sorted_by_name(tmp_path: Path) -> None:
    folder = tmp_path / "conf.d"
    folder.mkdir()
    write(folder, "10-listener.hcl", PLAIN_LISTENER + 'log_level = "debug"\n')
    write(folder, "20-storage.json", '{"storage": {"file": {"path": "/srv"}}, "ui": true}')
    write(folder, "30-override.hcl", 'log_level = "error"\ncluster_name = "c1"\n')
    write(folder, "README.md", "not a config")
    write(folder, ".editor-swap.hcl", "this is not HCL {")
    (folder / "sub.hcl").mkdir()  # a directory with a config-like name is skipped

    config = load_config([str(folder)])

    assert config.sources == (
        str(folder / "10-listener.hcl"),
        str(folder / "20-storage.json"),
        str(folder / "30-override.hcl"),
    )
    assert config.storage == StorageConfig("file", {"path": "/srv"})
    assert config.listener.tls_disable is True
    assert config.ui is True
    assert config.log_level == "error"  # the later file wins
    assert config.cluster_name == "c1"


def test_files_and_directories_mix_and_later_scalars_win(tmp_path: Path) -> None:
    folder = tmp_path / "conf.d"
    folder.mkdir()
    base = write(folder, "base.hcl", PLAIN_LISTENER + INMEM + "ui = true\n")
    extra = write(tmp_path, "extra.hcl", "ui = false\n")

    config = load_config([str(folder), str(extra), str(base)])

    assert config.ui is False
    assert config.sources == (str(base), str(extra))  # base.hcl is read once


def test_duplicate_storage_in_two_files_names_both(tmp_path: Path) -> None:
    first = write(tmp_path, "a.hcl", PLAIN_LISTENER + INMEM)
    second = write(tmp_path, "b.hcl", 'storage "file" {\n  path = "/x"\n}\n')
    with pytest.raises(ConfigError) as caught:
        load_config([str(first), str(second)])
    message = str(caught.value)
    assert str(first) in message
    assert str(second) in message
    assert "storage" in message


def test_duplicate_listener_across_directory_files_names_both(tmp_path: Path) -> None:
    write(tmp_path, "a.hcl", PLAIN_LISTENER + INMEM)
    write(tmp_path, "b.json", '{"listener": {"tcp": {"tls_disable": true}}}')
    with pytest.raises(ConfigError) as caught:
        load_config([str(tmp_path)])
    message = str(caught.value)
    assert str(tmp_path / "a.hcl") in message
    assert str(tmp_path / "b.json") in message
    assert "listener" in message


# --- errors: each names the file and the key ---------------------------------


def test_unknown_stanza(tmp_path: Path) -> None:
    message = refused(tmp_path, PLAIN_LISTENER + INMEM + "bogus_stanza {\n  a = 1\n}\n")
    assert message.endswith('config.hcl: unknown stanza "bogus_stanza"')


def test_unknown_top_level_key(tmp_path: Path) -> None:
    message = refused(tmp_path, PLAIN_LISTENER + INMEM + 'log_levle = "debug"\n')
    assert message.endswith('config.hcl: unknown key "log_levle"')


def test_unknown_key_inside_listener(tmp_path: Path) -> None:
    message = refused(
        tmp_path, 'listener "tcp" {\n  adress = "0.0.0.0:8200"\n  tls_disable = 1\n}\n' + INMEM
    )
    assert message == f'{tmp_path / "config.hcl"}: listener "tcp": unknown key "adress"'


def test_unknown_key_in_json_storage(tmp_path: Path) -> None:
    message = refused(
        tmp_path,
        '{"listener": {"tcp": {"tls_disable": 1}}, "storage": {"file": {"path": "/x", "pth": 1}}}',
        name="config.json",
    )
    assert message.endswith('config.json: storage "file": unknown key "pth"')


def test_wrong_type(tmp_path: Path) -> None:
    message = refused(tmp_path, PLAIN_LISTENER + INMEM + 'ui = "yes"\n')
    assert message == f'{tmp_path / "config.hcl"}: ui: expected a boolean, got "yes"'


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ('tls_disable = "yes"', 'listener "tcp": tls_disable: expected a boolean, got "yes"'),
        ("tls_disable = 1\n  address = 8200", 'listener "tcp": address: expected a string'),
        ('tls_disable = 1\n  address = "localhost"', 'address: expected "host:port"'),
        ('tls_disable = 1\n  max_request_size = "big"', "max_request_size: expected an integer"),
        ("tls_disable = 1\n  max_request_size = -1", "max_request_size: must not be negative"),
        ('tls_disable = 1\n  tls_min_version = "tls10"', 'tls_min_version: expected "tls12"'),
    ],
)
def test_wrong_listener_values(tmp_path: Path, body: str, needle: str) -> None:
    message = refused(tmp_path, f'listener "tcp" {{\n  {body}\n}}\n' + INMEM)
    assert needle in message


def test_wrong_type_for_stanza(tmp_path: Path) -> None:
    message = refused(tmp_path, PLAIN_LISTENER + INMEM + "telemetry = 5\n")
    assert "telemetry: expected a block, got 5" in message


def test_bad_log_level(tmp_path: Path) -> None:
    message = refused(tmp_path, PLAIN_LISTENER + INMEM + 'log_level = "verbose"\n')
    assert 'log_level: expected one of trace, debug, info, warn, error, got "verbose"' in message


def test_missing_required_storage_path(tmp_path: Path) -> None:
    message = refused(tmp_path, PLAIN_LISTENER + 'storage "file" {}\n')
    assert message == f'{tmp_path / "config.hcl"}: storage "file": "path" is required'


def test_missing_required_raft_path(tmp_path: Path) -> None:
    message = refused(tmp_path, PLAIN_LISTENER + 'storage "raft" {\n  node_id = "n1"\n}\n')
    assert 'storage "raft": "path" is required' in message


def test_retry_join_needs_leader_api_addr(tmp_path: Path) -> None:
    message = refused(
        tmp_path,
        PLAIN_LISTENER + 'storage "raft" {\n  path = "/r"\n'
        '  retry_join {\n    leader_ca_cert_file = "/ca"\n  }\n}\n',
    )
    assert 'storage "raft": retry_join: "leader_api_addr" is required' in message


def test_unknown_key_in_second_retry_join(tmp_path: Path) -> None:
    message = refused(
        tmp_path,
        PLAIN_LISTENER + 'storage "raft" {\n  path = "/r"\n'
        '  retry_join {\n    leader_api_addr = "https://a:8200"\n  }\n'
        '  retry_join {\n    leader_api_addr = "https://b:8200"\n    auto_join = "x"\n  }\n}\n',
    )
    assert 'storage "raft": retry_join[1]: unknown key "auto_join"' in message


def test_pkcs11_requires_lib(tmp_path: Path) -> None:
    message = refused(tmp_path, PLAIN_LISTENER + INMEM + 'seal "pkcs11" {\n  key_label = "k"\n}\n')
    assert 'seal "pkcs11": "lib" is required' in message


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('storage "consul" {}\n', 'storage "consul": unknown storage type'),
        ('seal "awskms" {}\n' + INMEM, 'seal "awskms": unknown seal type'),
    ],
)
def test_unknown_types(tmp_path: Path, text: str, needle: str) -> None:
    assert needle in refused(tmp_path, PLAIN_LISTENER + text)


def test_unknown_listener_type(tmp_path: Path) -> None:
    message = refused(tmp_path, 'listener "unix" {\n  address = "/run/c.sock"\n}\n' + INMEM)
    assert 'listener "unix": unknown listener type (supported: tcp)' in message


def test_unlabelled_listener(tmp_path: Path) -> None:
    message = refused(tmp_path, 'listener {\n  address = "127.0.0.1:8200"\n}\n' + INMEM)
    assert 'listener: expected a labelled block such as listener "<type>"' in message


def test_two_storage_types_in_one_file(tmp_path: Path) -> None:
    message = refused(tmp_path, PLAIN_LISTENER + INMEM + 'storage "file" {\n  path = "/x"\n}\n')
    assert 'storage: more than one storage stanza ("inmem", "file")' in message


def test_two_json_listeners_on_one_address_are_refused(tmp_path: Path) -> None:
    doc = {
        "listener": [{"tcp": {"tls_disable": 1}}, {"tcp": {"tls_disable": 1}}],
        "storage": {"inmem": {}},
    }
    message = refused(tmp_path, json.dumps(doc), name="config.json")
    assert "listener \"tcp\": address '127.0.0.1:8200' is used by more than one" in message


def test_several_json_listeners(tmp_path: Path) -> None:
    doc = {
        "listener": [
            {"tcp": {"tls_disable": 1, "address": "127.0.0.1:8201"}},
            {"tcp": {"tls_disable": 1, "address": "127.0.0.1:8202", "max_request_size": 10}},
        ],
        "storage": {"inmem": {}},
    }
    config = load(tmp_path, json.dumps(doc), name="config.json")
    assert [(item.address, item.max_request_size) for item in config.listeners] == [
        ("127.0.0.1:8201", 33554432),
        ("127.0.0.1:8202", 10),
    ]


SEVERAL_HCL = """
# listener "tcp" { address = "in a comment" }
listener "tcp" {
  address     = "127.0.0.1:8301"
  tls_disable = true
}
storage "inmem" {}
listener "tcp" {
  address       = "0.0.0.0:8302"
  tls_cert_file = "/c"
  tls_key_file  = "/k"
}
/* listener "tcp" { } */
listener "tcp" {
  address     = "127.0.0.1:8303"
  tls_disable = "true"
  max_request_size = 1024
}
"""


def test_several_hcl_listeners_stay_apart(tmp_path: Path) -> None:
    """pyhcl alone merges same-label blocks key by key: here into one listener."""
    config = load(tmp_path, SEVERAL_HCL)
    assert config.listeners == (
        ListenerConfig(address="127.0.0.1:8301", tls_disable=True),
        ListenerConfig(address="0.0.0.0:8302", tls_cert_file="/c", tls_key_file="/k"),
        ListenerConfig(address="127.0.0.1:8303", tls_disable=True, max_request_size=1024),
    )
    assert config.listener == config.listeners[0]


def test_several_hcl_listeners_are_each_validated(tmp_path: Path) -> None:
    text = PLAIN_LISTENER + INMEM + 'listener "tcp" {\n  address = "127.0.0.1:9"\n}\n'
    message = refused(tmp_path, text)
    assert 'listener "tcp": "tls_cert_file" is required unless tls_disable is true' in message
    text = PLAIN_LISTENER + INMEM + 'listener "unix" {\n  address = "/s"\n}\n'
    assert 'listener "unix": unknown listener type' in refused(tmp_path, text)
    assert "tcp#coffer" not in refused(tmp_path, PLAIN_LISTENER + PLAIN_LISTENER + INMEM)


def test_telemetry_push_settings(tmp_path: Path) -> None:
    text = (
        PLAIN_LISTENER
        + INMEM
        + 'telemetry {\n  statsd_address = "127.0.0.1:8125"\n'
        + '  dogstatsd_addr = "localhost:8126"\n  dogstatsd_tags = ["env:test"]\n'
        + '  prometheus_retention_time = "30s"\n}\n'
    )
    telemetry = load(tmp_path, text).telemetry
    assert telemetry.statsd_address == "127.0.0.1:8125"
    assert telemetry.dogstatsd_addr == "localhost:8126"
    assert telemetry.dogstatsd_tags == ("env:test",)
    assert telemetry.prometheus_retention_time == 30
    for bad in (
        'statsd_address = "nowhere"',
        'dogstatsd_tags = "env:x"',
        'dogstatsd_tags = ["a|b"]',
    ):
        message = refused(tmp_path, PLAIN_LISTENER + INMEM + f"telemetry {{\n  {bad}\n}}\n")
        assert "telemetry: " in message


@pytest.mark.parametrize("missing", ["tls_cert_file", "tls_key_file"])
def test_tls_needs_cert_and_key(tmp_path: Path, missing: str) -> None:
    present = {"tls_cert_file": "/c", "tls_key_file": "/k"}
    del present[missing]
    body = "\n".join(f'  {key} = "{value}"' for key, value in present.items())
    message = refused(tmp_path, f'listener "tcp" {{\n{body}\n}}\n' + INMEM)
    assert f'listener "tcp": "{missing}" is required unless tls_disable is true' in message


def test_tls_is_on_by_default_so_an_empty_listener_needs_certs(tmp_path: Path) -> None:
    message = refused(tmp_path, 'listener "tcp" {}\n' + INMEM)
    assert '"tls_cert_file" is required' in message


def test_no_storage_stanza(tmp_path: Path) -> None:
    message = refused(tmp_path, PLAIN_LISTENER + "ui = true\n")
    assert "no storage stanza" in message


def test_no_listener_stanza(tmp_path: Path) -> None:
    message = refused(tmp_path, INMEM)
    assert "no listener stanza" in message


def test_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.hcl"
    with pytest.raises(ConfigError) as caught:
        load_config([str(missing)])
    assert str(caught.value) == f"{missing}: no such file or directory"


def test_invalid_hcl(tmp_path: Path) -> None:
    message = refused(tmp_path, 'listener "tcp" {\n  address = \n', name="broken.hcl")
    assert "broken.hcl: cannot parse: " in message
    assert "Unexpected end of file" in message  # pyhcl's own explanation


def test_invalid_json(tmp_path: Path) -> None:
    message = refused(tmp_path, '{"storage": }', name="broken.json")
    assert "broken.json: cannot parse: Expecting value" in message


def test_bad_file_in_directory_is_the_one_named(tmp_path: Path) -> None:
    good = write(tmp_path, "10-good.hcl", PLAIN_LISTENER)
    bad = write(tmp_path, "20-bad.hcl", INMEM + 'unknown_thing = "x"\n')
    with pytest.raises(ConfigError) as caught:
        load_config([str(tmp_path)])
    message = str(caught.value)
    assert message == f'{bad}: unknown key "unknown_thing"'
    assert str(good) not in message


def test_empty_directory(tmp_path: Path) -> None:
    write(tmp_path, "notes.txt", "nothing here")
    with pytest.raises(ConfigError) as caught:
        load_config([str(tmp_path)])
    assert str(caught.value) == f"{tmp_path}: directory holds no .hcl or .json files"


def test_no_paths() -> None:
    with pytest.raises(ConfigError, match="no configuration files"):
        load_config([])


def test_replication_stanza_bounds_the_primarys_wal_buffer(tmp_path: Path) -> None:
    text = "replication {\n  logshipper_buffer_length = 50\n  logshipper_buffer_size = 4096\n}\n"
    config = load(tmp_path, PLAIN_LISTENER + INMEM + text)
    assert config.replication == ReplicationConfig(50, 4096)
    assert load(tmp_path, PLAIN_LISTENER + INMEM).replication == ReplicationConfig()


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ("logshipper_buffer_length = 0", "logshipper_buffer_length"),
        ('logshipper_buffer_size = "lots"', "logshipper_buffer_size"),
        ("resolver = 1", "resolver"),
    ],
)
def test_bad_replication_stanza_names_the_key(tmp_path: Path, body: str, named: str) -> None:
    message = refused(tmp_path, PLAIN_LISTENER + INMEM + f"replication {{\n  {body}\n}}\n")
    assert named in message
