#!/usr/bin/env python3
"""Drive the compose cluster in ``deploy/compose.yaml``: up, down, unseal, status, snapshots.

``make cluster-up`` runs ``clusterctl.py up``: build the images, start three nodes and
HAProxy, initialise node1 (5 key shares, threshold 3), write the keys and root token to
a 0600 file under ``deploy/.cluster/``, unseal node1, then unseal node2 and node3 (which
``retry_join`` has made pending joiners), and wait until all three are Raft voters and
HAProxy has an active node to send writes to.

``--seal pkcs11`` (``make cluster-up COFFER_SEAL=pkcs11``) adds ``deploy/compose.hsm.yaml``:
one SoftHSM2 token shared by the three nodes, made before they start; node1 is
initialised with recovery keys (5 shares, threshold 3) and every node unseals itself,
at start and after any ``docker restart``, so nothing here types a key.

``--replication`` (``make replication-up`` / ``replication-down``) drives the two sites of
``deploy/compose.replication.yaml`` instead: ``deploy/replication_pair.py``.

Standard library only, so it runs with any Python 3.11: its HTTP client, waits and
ports are the test harness's stdlib-only modules (``harness/``, next to ``deploy/``).
``chaos.compose`` imports :class:`ComposeCluster` from here.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import http.client
import io
import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

if not __package__:  # run as a script (``python3 deploy/clusterctl.py``): find ``harness``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import wait
from harness.ports import free_ports
from harness.rest import NO_ANSWER, Reply, fetch

__all__ = [
    "COMPOSE_FILE",
    "NODES",
    "PORT_VARIABLES",
    "ClusterError",
    "ComposeCluster",
    "free_port_env",
    "http_request",
    "main",
    "wait_until",
]

DEPLOY = Path(__file__).resolve().parent
COMPOSE_FILE = DEPLOY / "compose.yaml"
HSM_COMPOSE_FILE = DEPLOY / "compose.hsm.yaml"
SEALS = ("shamir", "pkcs11")
STATE_DIR = DEPLOY / ".cluster"
NODES = ("node1", "node2", "node3")
LB = "lb"
DEFAULT_PROJECT = "coffer"
KEY_SHARES, KEY_THRESHOLD = 5, 3
#: The compose variables that choose the host ports (all on 127.0.0.1).
PORT_VARIABLES = (
    "COFFER_LB_PORT",
    "COFFER_LB_STATS_PORT",
    "COFFER_NODE1_PORT",
    "COFFER_NODE2_PORT",
    "COFFER_NODE3_PORT",
)

T = TypeVar("T")


class ClusterError(RuntimeError):
    pass


# --- HTTP ---------------------------------------------------------------------------------


def http_request(
    method: str,
    url: str,
    *,
    body: Any = None,
    raw: bytes | None = None,
    token: str | None = None,
    timeout: float = 5.0,
    headers: Mapping[str, str] | None = None,
) -> Reply:
    """One request; HTTP error statuses are replies, any failure to answer raises OSError."""
    try:
        return fetch(
            method,
            url,
            body,
            timeout=timeout,
            token=token or None,
            token_header="X-Vault-Token",
            headers=dict(headers or {}),
            raw=raw,
        )
    except http.client.HTTPException as exc:
        raise OSError(f"{type(exc).__name__}: {exc}") from exc


def wait_until(check: Callable[[], T | None], timeout: float, what: str, every: float = 0.5) -> T:
    """Poll ``check`` until it returns something truthy; errors count as "not yet"."""
    retry = (*NO_ANSWER, ClusterError, ValueError)
    return wait.wait_until(check, timeout, what, every, retry_on=retry, error=ClusterError)


def free_port_env() -> dict[str, str]:
    """Free 127.0.0.1 ports for every published port, as compose variables."""
    ports = free_ports(len(PORT_VARIABLES))
    return dict(zip(PORT_VARIABLES, map(str, ports), strict=True))


def log(message: str) -> None:
    print(f"[cluster] {message}", file=sys.stderr, flush=True)


# --- the cluster --------------------------------------------------------------------------


@dataclass
class ComposeCluster:
    """One compose project of ``deploy/compose.yaml`` and the key file that goes with it.

    ``env`` overrides the compose variables (host ports, image names); the actual ports
    are always read back from Docker, so defaults and overrides both work.
    """

    project: str = DEFAULT_PROJECT
    compose_file: Path = COMPOSE_FILE
    state_dir: Path = STATE_DIR
    env: dict[str, str] = field(default_factory=dict)
    #: ``pkcs11``: the HSM variant (``compose.hsm.yaml``), auto-unsealing nodes.
    seal: str = "shamir"
    #: The node services and the load balancer of this cluster; another compose file
    #: (``compose.replication.yaml``) holds two clusters, each a ``site`` of its own
    #: with its own network and key file.
    nodes: tuple[str, ...] = NODES
    lb: str = LB
    site: str = ""
    _ports: dict[tuple[str, int], int] = field(default_factory=dict, repr=False)

    # -- docker ----------------------------------------------------------------------

    @property
    def keys_path(self) -> Path:
        name = f"{self.project}.{self.site}" if self.site else self.project
        return self.state_dir / f"{name}.json"

    @property
    def network(self) -> str:
        return f"{self.project}_{self.site or 'coffer'}"

    @property
    def hsm(self) -> bool:
        return self.seal == "pkcs11"

    @property
    def hsm_pins_path(self) -> Path:
        return self.state_dir / f"{self.project}.hsm.json"

    def hsm_pins(self, *, create: bool = False) -> dict[str, str]:
        """The SoftHSM2 token's user and SO PINs: made once per project, kept 0600 beside
        the key file (the compose file reads them as COFFER_HSM_PIN / COFFER_HSM_SO_PIN)."""
        if self.hsm_pins_path.exists():
            pins: dict[str, str] = json.loads(self.hsm_pins_path.read_text())
            return pins
        pins = {"COFFER_HSM_PIN": secrets.token_hex(16), "COFFER_HSM_SO_PIN": secrets.token_hex(16)}
        if create:
            self._write_private(self.hsm_pins_path, pins)
        return pins

    def compose(
        self, *args: str, check: bool = True, timeout: float = 300, hsm: bool | None = None
    ) -> str:
        """``docker-compose`` on this project; ``hsm`` (default: the seal) adds the HSM file."""
        files = [self.compose_file]
        env = {**os.environ, **self.env}
        if (self.hsm if hsm is None else hsm) and self.compose_file == COMPOSE_FILE:
            files.append(HSM_COMPOSE_FILE)
            env.update(self.hsm_pins(create=self.hsm))
        command = ["docker-compose", "-p", self.project]
        for path in files:
            command += ["-f", str(path)]
        command += args
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
            check=False,
        )
        if check and done.returncode != 0:
            raise ClusterError(f"{' '.join(command)} failed: {done.stderr.strip()[-2000:]}")
        return done.stdout

    def container(self, service: str) -> str:
        """The container id of ``service`` (stopped or not)."""
        cid = self.compose("ps", "-a", "-q", service).strip()
        if not cid:
            raise ClusterError(f"no container for {service}")
        return cid.splitlines()[0]

    def docker(self, *args: str, check: bool = True, timeout: float = 120) -> str:
        done = subprocess.run(
            ["docker", *args], capture_output=True, text=True, timeout=timeout, check=False
        )
        if check and done.returncode != 0:
            raise ClusterError(f"docker {' '.join(args)} failed: {done.stderr.strip()}")
        return done.stdout

    def container_state(self, service: str) -> dict[str, Any]:
        state: dict[str, Any] = json.loads(
            self.docker("inspect", "-f", "{{json .State}}", self.container(service))
        )
        return state

    def port(self, service: str, container_port: int = 8200) -> int:
        key = (service, container_port)
        if key not in self._ports:
            out = self.compose("port", service, str(container_port)).strip()
            if not out or ":" not in out:
                raise ClusterError(f"{service}:{container_port} is not published")
            self._ports[key] = int(out.rsplit(":", 1)[1])
        return self._ports[key]

    def url(self, service: str, container_port: int = 8200) -> str:
        return f"http://127.0.0.1:{self.port(service, container_port)}"

    @property
    def lb_url(self) -> str:
        return self.url(self.lb)

    @property
    def stats_url(self) -> str:
        return self.url(self.lb, 8404) + "/stats"

    def start(self) -> None:
        self._ports.clear()
        if self.hsm:
            # The token and key exist before any node starts: no two nodes generate.
            self.compose("run", "--rm", "--no-deps", "hsm-init", timeout=300)
        self.compose("up", "-d", "--no-build", timeout=600)

    def down(self) -> None:
        # With the HSM file whatever the seal, so an HSM project's token volume goes too.
        self.compose(
            "down", "-v", "--remove-orphans", "--timeout", "10", check=False, timeout=600, hsm=True
        )
        self._ports.clear()
        for path in (self.keys_path, self.hsm_pins_path):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    # -- keys ------------------------------------------------------------------------

    def load_keys(self) -> dict[str, Any]:
        try:
            keys: dict[str, Any] = json.loads(self.keys_path.read_text())
        except FileNotFoundError:
            raise ClusterError(
                f"{self.keys_path} does not exist: this cluster was not initialised by "
                "clusterctl (or the file was removed); unseal it by hand"
            ) from None
        return keys

    @property
    def root_token(self) -> str:
        return str(self.load_keys()["root_token"])

    def _save_keys(self, reply: Mapping[str, Any]) -> None:
        if self.hsm:
            self._write_keys(
                {
                    "project": self.project,
                    "seal": "pkcs11",
                    "unseal_keys_b64": [],
                    "recovery_keys_b64": reply["recovery_keys_base64"],
                    "recovery_shares": KEY_SHARES,
                    "recovery_threshold": KEY_THRESHOLD,
                    "root_token": reply["root_token"],
                }
            )
            return
        self._write_keys(
            {
                "project": self.project,
                "unseal_keys_b64": reply["keys_base64"],
                "unseal_shares": KEY_SHARES,
                "unseal_threshold": KEY_THRESHOLD,
                "root_token": reply["root_token"],
            }
        )

    def _write_keys(self, doc: Mapping[str, Any]) -> None:
        self._write_private(self.keys_path, doc)

    def _write_private(self, path: Path, doc: Mapping[str, Any]) -> None:
        """Write a JSON file atomically, 0600 in a 0700 folder."""
        self.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(dict(doc), out, indent=2)
            out.write("\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)

    # -- node API --------------------------------------------------------------------

    def node_request(self, service: str, method: str, path: str, **kw: Any) -> Reply:
        return http_request(method, self.url(service) + path, **kw)

    def health(self, service: str, timeout: float = 2.0) -> int | None:
        """The node's ``sys/health`` status (200 active, 473 perf standby, 503 sealed...)."""
        try:
            return self.node_request(service, "GET", "/v1/sys/health", timeout=timeout).status
        except (OSError, ClusterError):
            return None

    def seal_status(self, service: str, timeout: float = 3.0) -> dict[str, Any]:
        reply = self.node_request(service, "GET", "/v1/sys/seal-status", timeout=timeout)
        doc = reply.doc
        if reply.status != 200 or not isinstance(doc, dict):
            raise ClusterError(f"{service}: seal-status answered {reply.status}")
        return doc

    def initialise(self) -> None:
        """Initialise node1 unless some node already is; write the key file."""
        statuses = {
            s: wait_until(partial(self.seal_status, s), 120, f"{s} API") for s in self.nodes
        }
        if any(status.get("initialized") for status in statuses.values()):
            if not self.keys_path.exists():
                raise ClusterError(
                    f"the cluster is initialised but {self.keys_path} is missing; "
                    "unseal it by hand or `make cluster-down` to start over"
                )
            log("already initialised; using " + str(self.keys_path))
            return
        if self.hsm:
            body = {"recovery_shares": KEY_SHARES, "recovery_threshold": KEY_THRESHOLD}
        else:
            body = {"secret_shares": KEY_SHARES, "secret_threshold": KEY_THRESHOLD}
        first = self.nodes[0]
        reply = self.node_request(first, "PUT", "/v1/sys/init", body=body, timeout=60)
        if reply.status != 200:
            raise ClusterError(f"init failed: {reply.status} {reply.body[:500]!r}")
        self._save_keys(reply.doc)
        log(f"initialised {first}; keys written to {self.keys_path}")

    def unseal(self, service: str, timeout: float = 120.0) -> None:
        """Unseal ``service`` with the stored keys (a pending joiner completes its join).

        Under the HSM seal there are no unseal keys: wait for the node to unseal itself."""
        if self.hsm:
            wait_until(
                lambda: self.seal_status(service).get("sealed") is False,
                timeout,
                f"{service} to unseal itself from the HSM",
            )
            return
        keys = self.load_keys()["unseal_keys_b64"][:KEY_THRESHOLD]

        def attempt() -> bool | None:
            status = self.seal_status(service)
            if not status.get("sealed"):
                return True
            if not status.get("initialized"):
                return None  # a joiner that has not fetched its challenge yet
            self.node_request(service, "PUT", "/v1/sys/unseal", body={"reset": True}, timeout=10)
            for key in keys:
                reply = self.node_request(
                    service, "PUT", "/v1/sys/unseal", body={"key": key}, timeout=90
                )
                doc = reply.doc
                if reply.status != 200 or not isinstance(doc, dict):
                    raise ClusterError(f"{service}: unseal answered {reply.status}: {doc}")
                if not doc.get("sealed"):
                    return True
            return None

        wait_until(attempt, timeout, f"{service} to unseal", every=1.0)

    def unseal_all(
        self, services: Iterable[str] | None = None, timeout: float = 120.0
    ) -> list[str]:
        """Unseal every sealed, running node; returns the ones that were sealed."""
        unsealed: list[str] = []
        for service in self.nodes if services is None else services:
            try:
                sealed = self.seal_status(service).get("sealed", True)
            except (OSError, ClusterError):
                sealed = True
            if sealed:
                self.unseal(service, timeout)
                unsealed.append(service)
        return unsealed

    def raft_servers(self, timeout: float = 5.0) -> list[dict[str, Any]]:
        """The Raft configuration, asked of the active node through the load balancer."""
        reply = http_request(
            "GET",
            self.lb_url + "/v1/sys/storage/raft/configuration",
            token=self.root_token,
            timeout=timeout,
        )
        doc = reply.doc
        if reply.status != 200 or not isinstance(doc, dict):
            raise ClusterError(f"raft configuration answered {reply.status}: {reply.body[:300]!r}")
        servers: list[dict[str, Any]] = doc["data"]["config"]["servers"]
        return servers

    def lb_servers(self) -> dict[str, dict[str, str]]:
        """HAProxy's view: {backend: {server: status}} from its CSV statistics."""
        reply = http_request("GET", self.stats_url + ";csv", timeout=3)
        text = reply.body.decode().lstrip("# ")
        view: dict[str, dict[str, str]] = {}
        for row in csv.DictReader(io.StringIO(text)):
            if row["svname"] not in ("FRONTEND", "BACKEND"):
                view.setdefault(row["pxname"], {})[row["svname"]] = row["status"]
        return view

    def lb_active(self) -> str | None:
        """The node HAProxy sends writes to (the one UP in coffer_write), if any."""
        up = [
            s for s, status in self.lb_servers().get("coffer_write", {}).items() if status == "UP"
        ]
        return up[0] if len(up) == 1 else None

    def active_node(self, timeout: float = 1.0) -> str | None:
        """The node whose own ``sys/health`` says active, asked directly."""
        for service in self.nodes:
            if self.health(service, timeout) == 200:
                return service
        return None

    def leader_view(self, service: str, timeout: float = 3.0) -> dict[str, Any]:
        """``sys/leader`` as ``service`` itself answers it (never forwarded)."""
        reply = self.node_request(service, "GET", "/v1/sys/leader", timeout=timeout)
        doc = reply.doc
        if reply.status != 200 or not isinstance(doc, dict):
            raise ClusterError(f"{service}: sys/leader answered {reply.status}")
        return doc

    def wait_ready(
        self, timeout: float = 120.0, nodes: Iterable[str] | None = None
    ) -> dict[str, Any]:
        """The cluster is whole again: every node unsealed, a Raft voter, following the
        active node and caught up with it (applied what it had committed), and HAProxy
        sending writes to that active node."""
        wanted = sorted(set(self.nodes if nodes is None else nodes))

        def ready() -> dict[str, Any] | None:
            for service in wanted:
                if self.seal_status(service).get("sealed", True):
                    return None
            active = self.lb_active()
            if active is None or self.health(active) != 200:
                return None
            leader = self.leader_view(active)
            if not leader.get("is_self"):
                return None
            target = int(leader.get("raft_committed_index", 0))
            for service in wanted:
                view = self.leader_view(service)
                if view.get("leader_address") != leader.get("leader_address"):
                    return None
                if int(view.get("raft_applied_index", 0)) < target:
                    return None
            servers = self.raft_servers()
            if not set(wanted) <= {s["node_id"] for s in servers}:
                return None
            return {"active": active, "servers": servers, "index": target}

        return wait_until(ready, timeout, "the cluster to be ready", every=0.25)

    def up(self, *, build: bool = True) -> dict[str, Any]:
        if build:
            subprocess.run(
                [str(DEPLOY / "build-images.sh"), *(["--hsm"] if self.hsm else [])],
                check=True,
                env={**os.environ, **self.env},
            )
        log(f"starting compose project {self.project!r}")
        self.start()
        self.initialise()
        first = self.nodes[0]
        wait_until(lambda: self.health(first), 60, f"{first} to answer")
        self.unseal(first)
        wait_until(lambda: self.health(first) == 200, 60, f"{first} to become active")
        for service in self.nodes[1:]:
            self.unseal(service)
            log(f"{service} unsealed")
        return self.wait_ready()

    def summary(self, ready: Mapping[str, Any]) -> str:
        lines = [
            f"Coffer cluster {self.project!r} is up.",
            f"  address:    {self.lb_url}   (HAProxy: writes -> active node, "
            "reads -> active + performance standbys)",
            f"  active:     {ready['active']}",
        ]
        for service in self.nodes:
            lines.append(f"  {service}:{' ' * max(1, 11 - len(service))}{self.url(service)}")
        lines += [
            f"  stats:      {self.stats_url}",
            f"  root token: {self.root_token}",
            f"  keys:       {self.keys_path}"
            f"  (0600; {KEY_SHARES} {'recovery ' if self.hsm else ''}shares, "
            f"threshold {KEY_THRESHOLD})",
            "",
            f"  export COFFER_ADDR={self.lb_url} COFFER_TOKEN={self.root_token}",
        ]
        return "\n".join(lines)

    def status(self) -> str:
        lines = [f"compose project {self.project!r}"]
        for service in self.nodes:
            try:
                running = self.container_state(service)
                state = running.get("Status", "?")
                if running.get("Paused"):
                    state = "paused"
            except ClusterError:
                state = "absent"
            lines.append(f"  {service}: container {state}, sys/health {self.health(service)}")
        with contextlib.suppress(OSError, ClusterError, KeyError):
            lines.append(f"  load balancer write backend: {self.lb_servers().get('coffer_write')}")
        try:
            servers = self.raft_servers()
            lines.append(
                "  raft: "
                + ", ".join(f"{s['node_id']}{'*' if s.get('leader') else ''}" for s in servers)
            )
        except (OSError, ClusterError, KeyError) as exc:
            lines.append(f"  raft: unavailable ({exc})")
        return "\n".join(lines)

    def snapshot_save(self, path: Path) -> int:
        reply = http_request(
            "GET",
            self.lb_url + "/v1/sys/storage/raft/snapshot",
            token=self.root_token,
            timeout=120,
        )
        if reply.status != 200:
            raise ClusterError(f"snapshot answered {reply.status}: {reply.body[:300]!r}")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(reply.body)
        return len(reply.body)

    def snapshot_restore(
        self, path: Path, *, force: bool = False, keys: Path | None = None
    ) -> None:
        """Restore a snapshot through the active node.

        A snapshot of another cluster (``force``) holds that cluster's keyring, so
        with ``keys`` (that cluster's key file) every node is restarted and unsealed
        with those keys, which then become this project's key file.
        """
        endpoint = "snapshot-force" if force else "snapshot"
        reply = http_request(
            "POST",
            self.lb_url + f"/v1/sys/storage/raft/{endpoint}",
            raw=path.read_bytes(),
            token=self.root_token,
            timeout=300,
            headers={"Content-Type": "application/octet-stream"},
        )
        if reply.status not in (200, 204):
            raise ClusterError(f"restore answered {reply.status}: {reply.body[:300]!r}")
        if keys is None:
            return
        doc = json.loads(keys.read_text())
        if not isinstance(doc, dict) or "unseal_keys_b64" not in doc or "root_token" not in doc:
            raise ClusterError(f"{keys} is not a clusterctl key file")
        self._write_keys({**doc, "project": self.project})
        self.docker("restart", "--time", "20", *(self.container(s) for s in self.nodes))
        self.unseal_all()
        self.wait_ready()


# --- command line -------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="clusterctl", description=__doc__.splitlines()[0])
    parser.add_argument(
        "-p", "--project", default=os.environ.get("COFFER_PROJECT", DEFAULT_PROJECT)
    )
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("up", help="build, start, initialise and unseal")
    up.add_argument("--no-build", action="store_true", help="use the images as they are")
    parser.add_argument(
        "--seal",
        choices=SEALS,
        default=os.environ.get("COFFER_SEAL") or "shamir",
        help="pkcs11: the HSM variant (deploy/compose.hsm.yaml), nodes unseal themselves",
    )
    commands.add_parser("down", help="remove containers, network, volumes and the key file")
    commands.add_parser("unseal", help="unseal every sealed node with the stored keys")
    commands.add_parser("status", help="containers, health, load balancer and Raft view")
    save = commands.add_parser("snapshot-save", help="write a Raft snapshot to FILE")
    save.add_argument("file", type=Path)
    restore = commands.add_parser("snapshot-restore", help="restore a Raft snapshot from FILE")
    restore.add_argument("file", type=Path)
    restore.add_argument("--force", action="store_true", help="snapshot of another cluster")
    restore.add_argument(
        "--keys",
        type=Path,
        help="with --force: the snapshot's cluster's key file; restart and unseal with it",
    )
    parser.add_argument(
        "--replication",
        action="store_true",
        help="deploy/compose.replication.yaml: a primary and a DR secondary site "
        "(up, down, status)",
    )
    args = parser.parse_args(argv)
    if args.replication:
        return _replication(args)

    cluster = ComposeCluster(project=args.project, seal=args.seal)
    try:
        if args.command == "up":
            started = time.monotonic()
            ready = cluster.up(build=not args.no_build)
            print(cluster.summary(ready))
            log(f"ready in {time.monotonic() - started:.0f}s")
        elif args.command == "down":
            cluster.down()
            log(f"removed compose project {args.project!r} (containers, network, volumes)")
        elif args.command == "unseal":
            done = cluster.unseal_all()
            cluster.wait_ready()
            log(f"unsealed: {', '.join(done) or 'nothing was sealed'}")
        elif args.command == "status":
            print(cluster.status())
        elif args.command == "snapshot-save":
            size = cluster.snapshot_save(args.file)
            log(f"wrote {size} bytes to {args.file}")
        elif args.command == "snapshot-restore":
            cluster.snapshot_restore(args.file, force=args.force, keys=args.keys)
            log(f"restored {args.file}")
    except (ClusterError, OSError, subprocess.CalledProcessError) as exc:
        print(f"clusterctl: {exc}", file=sys.stderr)
        return 1
    return 0


def _replication(args: argparse.Namespace) -> int:
    """``--replication``: both sites of ``compose.replication.yaml`` (replication_pair.py)."""
    from deploy.replication_pair import DEFAULT_PROJECT as PAIR_PROJECT
    from deploy.replication_pair import ReplicationPair

    if args.command not in ("up", "down", "status"):
        print(f"clusterctl: --replication supports up, down and status, not {args.command}",
              file=sys.stderr)  # fmt: skip
        return 2
    project = PAIR_PROJECT if args.project == DEFAULT_PROJECT else args.project
    pair = ReplicationPair(project=project)
    try:
        if args.command == "up":
            started = time.monotonic()
            ready = pair.up(build=not args.no_build)
            print(pair.summary(ready))
            log(f"ready in {time.monotonic() - started:.0f}s")
        elif args.command == "down":
            pair.down()
            log(f"removed compose project {project!r} (both sites, networks, volumes)")
        else:
            print(pair.status())
    except (ClusterError, OSError, subprocess.CalledProcessError) as exc:
        print(f"clusterctl: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
