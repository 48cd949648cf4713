"""Drive ``deploy/compose.replication.yaml``: a primary site and a DR secondary site.

``clusterctl.py --replication up`` (``make replication-up``) starts both three-node
clusters, initialises and unseals each (its own keys), enables the primary's DR
replication on ``primary-repl:8203`` (the primary's load balancer, which sends the
stream to the active node), makes a batch DR operation token on the primary,
issues a secondary token, enables the DR secondary with it, unseals the DR site
with the primary's keys (all three nodes together: the first unseal writes through
Raft) and waits until its active node reports ``stream-wals``.

Each site is a :class:`~deploy.clusterctl.ComposeCluster` over the one compose
project (its own nodes, load balancer, network and key file
``<project>.<site>.json``). After the DR site is enabled its key file holds the
primary's keys, root token and DR operation token: enabling wiped its own.
Standard library only, like ``clusterctl``.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from deploy.clusterctl import (
    DEPLOY,
    STATE_DIR,
    ClusterError,
    ComposeCluster,
    http_request,
    log,
    wait_until,
)
from harness.ports import free_ports

__all__ = [
    "DR_OPERATION_POLICY",
    "REPLICATION_COMPOSE_FILE",
    "ReplicationPair",
    "replication_port_env",
]

REPLICATION_COMPOSE_FILE = DEPLOY / "compose.replication.yaml"
PRIMARY, DR = "primary", "dr"
SITES = (PRIMARY, DR)
DEFAULT_PROJECT = "coffer-repl"
#: The replication port behind each site's load balancer (deploy/haproxy/replication.cfg).
REPLICATION_PORT = 8203
SECONDARY_ID = "dr"
#: What a DR secondary's active node answers on sys/health (``drsecondarycode``).
DR_SECONDARY_HEALTH = 472
#: The batch DR operation token's policy and role (docs/replication.md).
DR_OPERATION_POLICY = "dr-secondary-promotion"
DR_OPERATION_ROLE = "failover-handler"
_POLICY = """
path "sys/replication/dr/secondary/promote" { capabilities = ["update"] }
path "sys/replication/dr/secondary/update-primary" { capabilities = ["update"] }
"""


def port_variables() -> tuple[str, ...]:
    names: list[str] = []
    for site in SITES:
        prefix = f"COFFER_{site.upper()}"
        names += [f"{prefix}_LB_PORT", f"{prefix}_LB_STATS_PORT"]
        names += [f"{prefix}_NODE{n}_PORT" for n in (1, 2, 3)]
    return tuple(names)


def replication_port_env() -> dict[str, str]:
    """Free 127.0.0.1 ports for every published port of both sites."""
    names = port_variables()
    return dict(zip(names, map(str, free_ports(len(names))), strict=True))


def _site(site: str, project: str, state_dir: Path, env: dict[str, str]) -> ComposeCluster:
    return ComposeCluster(
        project=project,
        compose_file=REPLICATION_COMPOSE_FILE,
        state_dir=state_dir,
        env=env,
        nodes=tuple(f"{site}{n}" for n in (1, 2, 3)),
        lb=f"{site}-lb",
        site=site,
    )


@dataclass
class ReplicationPair:
    """The two sites of one compose project."""

    project: str = DEFAULT_PROJECT
    state_dir: Path = STATE_DIR
    env: dict[str, str] = field(default_factory=dict)
    primary: ComposeCluster = field(init=False)
    dr: ComposeCluster = field(init=False)

    def __post_init__(self) -> None:
        self.primary = _site(PRIMARY, self.project, self.state_dir, self.env)
        self.dr = _site(DR, self.project, self.state_dir, self.env)

    @staticmethod
    def replication_addr(site: str) -> str:
        """A site's ``primary_cluster_addr``: its load balancer, seen from the other site."""
        return f"{site}-repl:{REPLICATION_PORT}"

    # -- life cycle ------------------------------------------------------------------

    def up(self, *, build: bool = True) -> dict[str, Any]:
        if build:
            subprocess.run(
                [str(DEPLOY / "build-images.sh")], check=True, env={**os.environ, **self.env}
            )
        log(f"starting compose project {self.project!r} (both sites)")
        self.primary.start()  # every service of the file: both sites
        self._init_site(self.primary)
        self._init_site(self.dr)
        self.enable_dr()
        return self.wait_streaming()

    def _init_site(self, site: ComposeCluster) -> None:
        site.initialise()
        first = site.nodes[0]
        wait_until(lambda: site.health(first), 60, f"{first} to answer")
        site.unseal(first)
        wait_until(lambda: site.health(first) == 200, 60, f"{first} to become active")
        for service in site.nodes[1:]:
            site.unseal(service)
        site.wait_ready()
        log(f"site {site.site!r} unsealed, active {site.lb_active()}")

    def down(self) -> None:
        self.primary.down()  # the whole project: both sites
        with contextlib.suppress(FileNotFoundError):
            self.dr.keys_path.unlink()

    # -- replication -----------------------------------------------------------------

    def _ok(self, site: ComposeCluster, method: str, path: str, body: Any, token: str) -> Any:
        reply = http_request(method, site.lb_url + path, body=body, token=token, timeout=60)
        if reply.status not in (200, 204):
            raise ClusterError(f"{method} {path}: {reply.status} {reply.body[:500]!r}")
        return reply.doc

    def make_dr_operation_token(self, ttl: str = "8h") -> str:
        """A batch DR operation token made on the primary (policy and role as in
        docs/replication.md); the DR secondary holds the primary's token store."""
        root = self.primary.root_token
        self._ok(
            self.primary,
            "PUT",
            f"/v1/sys/policies/acl/{DR_OPERATION_POLICY}",
            {"policy": _POLICY},
            root,
        )
        self._ok(
            self.primary,
            "POST",
            f"/v1/auth/token/roles/{DR_OPERATION_ROLE}",
            {
                "allowed_policies": DR_OPERATION_POLICY,
                "orphan": True,
                "renewable": False,
                "token_type": "batch",
            },
            root,
        )
        doc = self._ok(
            self.primary, "POST", f"/v1/auth/token/create/{DR_OPERATION_ROLE}", {"ttl": ttl}, root
        )
        return str(doc["auth"]["client_token"])

    def enable_dr(self) -> None:
        """Primary enable, secondary token, secondary enable, unseal with the primary's keys."""
        if self.dr_status().get("mode") == "secondary":
            log("the dr site is already a DR secondary")
            return
        root = self.primary.root_token
        if self.primary_status().get("mode") != "primary":
            self._ok(
                self.primary,
                "POST",
                "/v1/sys/replication/dr/primary/enable",
                {"primary_cluster_addr": self.replication_addr(PRIMARY)},
                root,
            )
        operation_token = self.make_dr_operation_token()
        doc = self._ok(
            self.primary,
            "POST",
            "/v1/sys/replication/dr/primary/secondary-token",
            {"id": SECONDARY_ID},
            root,
        )
        activation = str(doc["wrap_info"]["token"])
        self._ok(
            self.dr,
            "POST",
            "/v1/sys/replication/dr/secondary/enable",
            # Through the primary's load balancer: whichever node is active unwraps.
            {"token": activation, "primary_api_addr": f"http://{PRIMARY}-lb:8200"},
            self.dr.root_token,
        )
        log("dr site enabled as a DR secondary; it seals itself")
        for service in self.dr.nodes:
            wait_until(partial(self._sealed, service), 60, f"{service} to seal")
        keys = self.primary.load_keys()
        self.dr._write_keys(
            {**keys, "project": self.project, "dr_operation_token": operation_token}
        )
        # Together: the first unseal writes through Raft, which needs a quorum.
        with ThreadPoolExecutor(len(self.dr.nodes)) as pool:
            done = list(pool.map(self._unseal_dr, self.dr.nodes))
        unsealed = [s for s, ok in zip(self.dr.nodes, done, strict=True) if ok]
        if len(unsealed) <= len(self.dr.nodes) // 2:
            raise ClusterError(f"only {unsealed} of the DR site unsealed: no quorum")
        missing = sorted(set(self.dr.nodes) - set(unsealed))
        if missing:
            # Seen on this machine: a node whose unseal found no Raft leader (the
            # others renewed the Raft certificates meanwhile) stays sealed; see
            # docs/replication.md, "Compose".
            log(f"WARNING: {', '.join(missing)} did not unseal; the DR site runs without it")
        log(f"dr site unsealed with the primary's keys: {', '.join(unsealed)}")

    def _unseal_dr(self, service: str) -> bool:
        try:
            self.dr.unseal(service, timeout=60)
        except ClusterError as exc:
            log(f"{service}: {exc}")
            return False
        return True

    def _unsealed(self, service: str) -> bool:
        try:
            return self.dr.seal_status(service).get("sealed") is False
        except (OSError, ClusterError):
            return False

    def _sealed(self, service: str) -> bool:
        return self.dr.seal_status(service).get("sealed") is True

    def _status(self, site: ComposeCluster, service: str | None) -> dict[str, Any]:
        url = site.url(service) if service else site.lb_url
        reply = http_request("GET", url + "/v1/sys/replication/dr/status?merkle=false", timeout=3)
        doc = reply.doc
        if reply.status != 200 or not isinstance(doc, dict):
            raise ClusterError(f"replication status answered {reply.status}")
        data: dict[str, Any] = doc["data"]
        return data

    def primary_status(self) -> dict[str, Any]:
        """The primary's DR status, from its active node (unauthenticated)."""
        return self._status(self.primary, self.primary.active_node())

    def dr_active(self) -> str | None:
        """The DR site's active node: 472 while a secondary, 200 once promoted."""
        for service in self.dr.nodes:
            try:
                reply = self.dr.node_request(service, "GET", "/v1/sys/health", timeout=1.0)
            except (OSError, ClusterError):
                continue
            doc = reply.doc
            serving = reply.status in (DR_SECONDARY_HEALTH, 200)
            if serving and isinstance(doc, dict) and doc.get("standby") is False:
                return service
        return None

    def dr_status(self) -> dict[str, Any]:
        """The DR site's DR status, from its active node (or any node before one is)."""
        return self._status(self.dr, self.dr_active() or self.dr.nodes[0])

    def wait_streaming(self, timeout: float = 180.0) -> dict[str, Any]:
        """The DR site's active node streams and has applied the primary's last WAL."""

        def streaming() -> dict[str, Any] | None:
            unsealed = [s for s in self.dr.nodes if self._unsealed(s)]
            if len(unsealed) <= len(self.dr.nodes) // 2:
                return None
            active = self.dr_active()
            if active is None or self.dr.health(active) != DR_SECONDARY_HEALTH:
                return None
            status = self._status(self.dr, active)
            if status.get("state") != "stream-wals":
                return None
            last_wal = int(self.primary_status().get("last_wal") or 0)
            if int(status.get("last_remote_wal") or 0) < last_wal:
                return None
            return {
                "primary_active": self.primary.lb_active(),
                "dr_active": active,
                "dr_unsealed": unsealed,
                **status,
            }

        return wait_until(streaming, timeout, "the DR secondary to stream", every=0.5)

    def promote(self, operation_token: str, timeout: float = 60.0) -> str:
        """Promote the DR site (its active node) to DR primary on ``dr-repl:8203``."""
        active = wait_until(self.dr_active, timeout, "a DR active node")
        reply = http_request(
            "POST",
            self.dr.url(active) + "/v1/sys/replication/dr/secondary/promote",
            body={
                "dr_operation_token": operation_token,
                "primary_cluster_addr": self.replication_addr(DR),
            },
            timeout=timeout,
        )
        if reply.status not in (200, 204):
            raise ClusterError(f"promote answered {reply.status}: {reply.body[:500]!r}")
        return active

    def summary(self, ready: dict[str, Any]) -> str:
        keys = self.primary.load_keys()
        return "\n".join(
            [
                f"Replication pair {self.project!r} is up: DR secondary state "
                f"{ready.get('state')}, last_remote_wal {ready.get('last_remote_wal')}.",
                f"  primary:  {self.primary.lb_url}  (active {ready.get('primary_active')}, "
                f"replication {self.replication_addr(PRIMARY)})",
                f"  dr:       {self.dr.lb_url}  (active {ready.get('dr_active')}, unsealed "
                f"{', '.join(ready.get('dr_unsealed', []))}: a DR secondary serves no "
                "clients until promoted)",
                f"  root token (primary; the DR site holds it too): {keys['root_token']}",
                f"  keys:     {self.primary.keys_path} (the DR site's: "
                f"{self.dr.keys_path}, with the batch DR operation token)",
                "",
                f"  export COFFER_ADDR={self.primary.lb_url} COFFER_TOKEN={keys['root_token']}",
            ]
        )

    def status(self) -> str:
        lines = [self.primary.status(), self.dr.status()]
        for name, read in (("primary", self.primary_status), ("dr", self.dr_status)):
            try:
                doc = read()
                detail = ", ".join(
                    f"{k}={doc.get(k)}"
                    for k in ("mode", "state", "last_wal", "last_remote_wal")
                    if k in doc
                )
                lines.append(f"  {name} DR replication: {detail}")
            except (OSError, ClusterError) as exc:
                lines.append(f"  {name} DR replication: unavailable ({exc})")
        return "\n".join(lines)
