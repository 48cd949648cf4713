"""Joining a cluster: the leader's challenge and the joiner's answer.

1. The joiner (sealed, no data) asks the leader for a challenge:
   ``PUT sys/storage/raft/bootstrap/challenge {server_id}``. The leader
   answers with a random nonce sealed under a key derived from the root key,
   the seal config (so the joiner reports the cluster's t/n) and the stored
   root key blob (already encrypted under the unseal key: harmless to hand
   out), plus the current peers and ``raft_tls``: a new key pair and a
   certificate for ``server_id`` from the cluster CA, sealed under another
   key derived from the root key (``tls_keyring``).
2. The operator unseals the joiner with the cluster's Shamir keys; the joiner
   decrypts the root key blob and with it the challenge and its certificate,
   starts its replica with the leader's peers, the derived transport secret
   and that certificate, and answers:
   ``PUT bootstrap/answer {answer, server_id, cluster_addr}``.
3. The leader compares in constant time, adds the peer and stores the
   joiner's sealed certificate record; the joiner catches up and unseals its
   barrier from the replicated keyring.

The challenge endpoint is unauthenticated, so its memory is bounded per
source as well as in total (one address cannot take every slot), and a
pending challenge is never replaced from another address (that would make
the real joiner's answer fail). A ``leader_ca_cert`` given with the join is
used for the join's own calls only; it joins the trust used for forwarding
when the leader has accepted the answer, i.e. proved it holds the root key.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hmac
import ipaddress
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from node.cluster.errors import ClusterUnavailableError, TooManyJoinsError
from node.outbound import HttpClient, OutboundError
from sdk.errors import InvalidRequestError, PermissionDeniedError

__all__ = [
    "Challenges",
    "PeerHttp",
    "PendingJoin",
    "fetch_challenge",
    "send_answer",
    "source_of",
]

#: How long a challenge may be answered.
CHALLENGE_TTL = 600.0
_MAX_PENDING = 64
#: Outstanding challenges one source may hold (several nodes may join from one host).
MAX_PER_SOURCE = 8


class PeerHttp(HttpClient, Protocol):
    """The client for other nodes' APIs, with the trust a join may add."""

    def pinned(self, ca_pem: str) -> HttpClient:
        """A client that also trusts ``ca_pem``, for one join's calls (close it after)."""
        ...

    def trust(self, ca_pem: str) -> None:
        """Trust ``ca_pem`` from now on (the leader proved it holds the root key)."""
        ...


def source_of(address: str) -> str:
    """The unit the per-source limit counts: an IPv4 address or an IPv6 /64."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if ip.version == 6:
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


@dataclass(frozen=True, slots=True)
class PendingJoin:
    """What a joiner got from the leader and keeps until it is unsealed."""

    leader_api_addr: str
    challenge: str
    seal_config: bytes
    root_key_blob: bytes
    peers: dict[str, str] = field(default_factory=dict)
    #: The CA the operator named for this leader (PEM), or "".
    leader_ca_cert: str = ""
    #: This node's Raft key and certificate, sealed (``tls_keyring.open_node``);
    #: b"" from a leader that predates it (the derived CA stands in).
    raft_tls: bytes = field(default=b"", repr=False)


@dataclass(frozen=True, slots=True)
class _Challenge:
    nonce: bytes
    source: str
    expires: float
    #: The joiner's sealed TLS record, stored once it answered.
    material: bytes = b""


class Challenges:
    """The leader's outstanding challenges, by server id (in memory only)."""

    def __init__(self) -> None:
        self._pending: dict[str, _Challenge] = {}

    def remember(self, server_id: str, nonce: bytes, source: str, material: bytes = b"") -> None:
        """Hold ``nonce`` (and the sealed TLS ``material`` issued with it) for
        ``server_id``, asked for from ``source`` (a client address).

        A pending challenge is replaced only by a request from the same source
        (a joiner that restarted asks again); from anywhere else it is refused.
        """
        now = time.monotonic()
        self._pending = {k: v for k, v in self._pending.items() if v.expires > now}
        unit = source_of(source)
        current = self._pending.get(server_id)
        if current is not None and current.source != unit:
            raise InvalidRequestError(f"a join of server {server_id!r} is already in progress")
        others = {k: v for k, v in self._pending.items() if k != server_id}
        if sum(1 for v in others.values() if v.source == unit) >= MAX_PER_SOURCE:
            raise TooManyJoinsError("too many joins in progress from this address")
        if len(others) >= _MAX_PENDING:
            raise TooManyJoinsError("too many joins in progress")
        self._pending[server_id] = _Challenge(nonce, unit, now + CHALLENGE_TTL, material)

    def attach(self, server_id: str, nonce: bytes, material: bytes) -> None:
        """Keep ``material`` with the challenge ``nonce`` (if it is still the pending one)."""
        pending = self._pending.get(server_id)
        if pending is not None and hmac.compare_digest(pending.nonce, nonce):
            self._pending[server_id] = dataclasses.replace(pending, material=material)

    def check(self, server_id: str, answer: str) -> bytes:
        """Accept ``answer`` once; returns the material issued with the challenge."""
        pending = self._pending.get(server_id)
        if pending is None or pending.expires < time.monotonic():
            raise InvalidRequestError(f"no challenge is outstanding for server {server_id!r}")
        try:
            given = base64.b64decode(answer, validate=True)
        except (binascii.Error, ValueError):
            given = b""
        if not hmac.compare_digest(given, pending.nonce):
            raise PermissionDeniedError()
        del self._pending[server_id]
        return pending.material

    def clear(self) -> None:
        self._pending.clear()


def _url(base: str, path: str) -> str:
    return base.rstrip("/") + path


def _b64(value: Any, what: str) -> bytes:
    if not isinstance(value, str):
        raise InvalidRequestError(f"the leader's {what} is missing")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidRequestError(f"the leader's {what} is not base64") from exc


async def _call(http: HttpClient, url: str, body: Mapping[str, Any]) -> dict[str, Any]:
    try:
        reply = await http.request("PUT", url, json=dict(body), timeout=30.0)
    except OutboundError as exc:
        raise ClusterUnavailableError(f"cannot reach the leader at {url}: {exc}") from exc
    try:
        doc = json.loads(reply.body) if reply.body else {}
    except ValueError:
        doc = {}
    if reply.status != 200 or not isinstance(doc, dict):
        errors = doc.get("errors") if isinstance(doc, dict) else None
        raise ClusterUnavailableError(
            f"the leader at {url} answered {reply.status}: {errors or reply.body!r}"
        )
    data = doc.get("data")
    return data if isinstance(data, dict) else doc


async def fetch_challenge(
    http: HttpClient, leader_api_addr: str, server_id: str, leader_ca_cert: str = ""
) -> PendingJoin:
    url = _url(leader_api_addr, "/v1/sys/storage/raft/bootstrap/challenge")
    data = await _call(http, url, {"server_id": server_id})
    peers = data.get("peers")
    if not isinstance(peers, dict) or not peers:
        raise InvalidRequestError("the leader did not name its peers")
    challenge = data.get("challenge")
    if not isinstance(challenge, str):
        raise InvalidRequestError("the leader sent no challenge")
    return PendingJoin(
        leader_api_addr=leader_api_addr,
        challenge=challenge,
        seal_config=_b64(data.get("seal_config"), "seal config"),
        root_key_blob=_b64(data.get("root_key_blob"), "root key blob"),
        peers={str(k): str(v) for k, v in peers.items() if str(k) != server_id},
        leader_ca_cert=leader_ca_cert,
        raft_tls=_b64(data["raft_tls"], "raft certificate") if "raft_tls" in data else b"",
    )


async def send_answer(
    http: HttpClient, join: PendingJoin, server_id: str, answer: bytes, cluster_addr: str
) -> None:
    url = _url(join.leader_api_addr, "/v1/sys/storage/raft/bootstrap/answer")
    body = {
        "server_id": server_id,
        "answer": base64.b64encode(answer).decode("ascii"),
        "cluster_addr": cluster_addr,
        "non_voter": False,
    }
    await _call(http, url, body)
