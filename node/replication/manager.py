"""The replication of one cluster: its state per kind, and the active node's duties.

On the active node of a primary it follows the applied stream (:meth:`observe`,
fed by ``node.core.replicated``), keeps recent WALs in a :class:`WalRing` and
serves secondaries on its replication address (``primary.py``); on the active
node of a secondary it keeps one connection to the primary and applies what
arrives (``secondary.py``). The endpoints (``node/core/system/replication.py``)
call the methods here.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from itertools import repeat
from typing import Any

from node.barrier.barrier import KEYRING_PATH, Barrier
from node.logical.request import Request
from node.logical.response import Login, Response
from node.namespaces.store import NamespaceStore
from node.outbound import HttpClient
from node.replication import merkle
from node.replication.classify import (
    PERF_MIRROR_KEY,
    DataClass,
    Kind,
    MountIndex,
    PathsFilter,
    classify,
)
from node.replication.forwarding import (
    dynamic_filter_from,
    login_link_to,
    request_to,
    response_from,
    wait_applied,
)
from node.replication.frames import FrameError
from node.replication.live import ClientStatus, Live, walk
from node.replication.ports import Channel, Transport
from node.replication.primary import serve_link, view_of
from node.replication.secondary import fetch_bootstrap, my_view, run_secondary, secondary_tls
from node.replication.state import Bundle, KindState, position_key, state_key
from node.replication.wal import DEFAULT_CAPACITY, DEFAULT_MAX_BYTES, Wal, WalRing
from node.routing.router import Router
from node.seal.config import SEAL_CONFIG_PATH
from node.seal.shamir_seal import RECOVERY_CONFIG_PATH, RECOVERY_KEY_PATH, ROOT_KEY_PATH
from sdk import jsoncodec
from sdk.certs import ClusterCA, RaftTLS, create_cluster_ca
from sdk.errors import (
    CofferError,
    InvalidRequestError,
    SealedError,
    StorageError,
)
from sdk.physical import AppliedChanges, Delete, PhysicalBackend, Put

__all__ = ["ACTIVATION_PREFIX", "SEAL_KEYS", "Replication", "activation_token", "walk"]

log = logging.getLogger("coffer.replication")

#: The keys a secondary takes from the primary at enable time (its seal).
SEAL_KEYS = (
    SEAL_CONFIG_PATH,
    ROOT_KEY_PATH,
    KEYRING_PATH,
    RECOVERY_CONFIG_PATH,
    RECOVERY_KEY_PATH,
)
#: Keys a wiped secondary keeps: its Raft members' records and sync markers.
_KEEP_ON_WIPE = ("core/raft/nodes/", "core/raft/sync/", "core/replication/")
#: An activation token: this prefix, then base64url JSON {"addr", "jti"} (as the
#: reference's JWT carries the primary's address and the real wrapping token).
ACTIVATION_PREFIX = "cofr."
_STATE_PREFIX = "core/replication/"
_ROOT_TTL = 1.0


class PrimaryUnreachableError(CofferError):
    """A secondary could not get an answer from its primary."""

    status = 503

    def __init__(self) -> None:
        super().__init__("this secondary cannot reach its primary; retry later")


class Replication:
    def __init__(
        self,
        physical: PhysicalBackend,
        barrier: Barrier,
        router: Router,
        namespaces: NamespaceStore,
        http: Callable[[], HttpClient | None],
    ) -> None:
        self.physical = physical
        self.barrier = barrier
        self.router = router
        self.namespaces = namespaces
        self._http = http
        #: The network (``api/replication_net.py``); None: replication cannot run.
        self.transport: Transport | None = None
        #: Seals this node (set by the core): a standby of a new secondary does.
        self.seal_self: Callable[[], Awaitable[None]] | None = None
        #: Runs a request a performance secondary forwarded (set by the core).
        self.forwarded_handler: Callable[[Request], Awaitable[tuple[Response, int]]] | None = None
        #: Links a secondary's login to an entity here (set by the core): the entity
        #: id and the applied index the secondary waits for.
        self.identity_link_handler: (
            Callable[[str, str, Login], Awaitable[tuple[str, int]]] | None
        ) = None
        self.states: dict[Kind, KindState] = {k: KindState(k) for k in Kind}
        self._live: Live | None = None
        #: Held from the end of one active period to the start of the next: the
        #: cluster watcher and a role change (promote, demote, update-primary)
        #: restart the active duties concurrently, and two interleaved starts
        #: left a Live nobody stops, streaming beside the reported one.
        self._active_lock = asyncio.Lock()
        #: The last index ``observe`` saw, with or without a Live to ship it.
        self._observed = 0
        self._lock = asyncio.Lock()
        self._reloads: set[asyncio.Task[None]] = set()
        self._roots: dict[Kind, tuple[float, str]] = {}
        #: The WAL ring's bounds (the config's ``replication`` stanza): how far behind
        #: a secondary may fall and still resume rather than sync.
        self.ring_capacity = DEFAULT_CAPACITY
        self.ring_max_bytes = DEFAULT_MAX_BYTES

    # -- state --------------------------------------------------------------------------

    async def load(self) -> None:
        """Read both kinds' state (unsealed): at unseal and when this node becomes active."""
        for kind in Kind:
            raw = await self.barrier.get(state_key(kind))
            self.states[kind] = (
                KindState.from_json(jsoncodec.loads(raw.value)) if raw else KindState(kind)
            )

    async def _save(self, state: KindState) -> None:
        raw = jsoncodec.dumps(state.to_json())
        await self.barrier.put(state_key(state.kind), raw)
        self.states[state.kind] = state
        if state.kind is Kind.PERFORMANCE and not self.is_dr_secondary:
            # The DR secondaries' copy (a DR secondary's own arrives by replication).
            if state.mode == "primary":
                await self.barrier.put(PERF_MIRROR_KEY, raw)
            else:
                await self.barrier.delete(PERF_MIRROR_KEY)

    def _is_primary(self) -> bool:
        """Whether this cluster is a primary of either kind (its WALs are shipped)."""
        states = self.states
        return states[Kind.PERFORMANCE].mode == "primary" or states[Kind.DR].mode == "primary"

    def mode(self, kind: Kind) -> str:
        return self.states[kind].mode

    def mode_of(self, kind: str) -> str:
        """``mode`` by the kind's name ("dr", "performance"): ``Core.replication_mode``."""
        return self.states[Kind(kind)].mode

    @property
    def is_dr_secondary(self) -> bool:
        """For the DR operation-token endpoints and the request gate."""
        return self.states[Kind.DR].mode == "secondary"

    @property
    def is_perf_secondary(self) -> bool:
        return self.states[Kind.PERFORMANCE].mode == "secondary"

    def writable_here(self, key: str) -> bool:
        """Whether a performance secondary writes ``key`` itself (its local data)."""
        return classify(key, self.mount_index()).cls in (DataClass.LOCAL, DataClass.IGNORED)

    async def forward(self, request: Request) -> Response:
        """Run ``request`` (authorised here) on the primary; answer once it came back."""
        answer = await self._ask_primary({"type": "forward", "request": request_to(request)})
        response, index = response_from(answer)
        if not await self._wait_applied(index):
            response.warnings.append(
                "the write was made on the primary but has not reached this secondary yet"
            )
        return response

    async def link_login(self, namespace_id: str, mount_accessor: str, login: Login) -> str:
        """The entity id of a login on this performance secondary: the primary's active
        node finds or creates entity and alias (replicated data, which a secondary
        must not write), and this returns once they have arrived by the stream (or
        after ``WAL_WAIT``, logged), so the token's entity resolves here."""
        answer = await self._ask_primary(
            {"type": "identity-link", "link": login_link_to(namespace_id, mount_accessor, login)}
        )
        response, index = response_from(answer)
        entity_id = (response.data or {}).get("entity_id")
        if not isinstance(entity_id, str):
            raise InvalidRequestError("the primary answered an identity link without an entity")
        if not await self._wait_applied(index):
            log.warning("replication.identity_link_not_applied", extra={"index": index})
        return entity_id

    async def _ask_primary(self, frame: dict[str, Any]) -> dict[str, Any]:
        """One question to the primary's active node, from this secondary's active node."""
        bundle = self.states[Kind.PERFORMANCE].bundle
        if bundle is None or self.transport is None or self._live is None:
            raise InvalidRequestError("this performance secondary cannot reach its primary")
        return await self._exchange(bundle, frame, 30.0)

    async def _exchange(
        self, bundle: Bundle, frame: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        """Send ``frame`` to the primary over a fresh mutual-TLS link; its one answer."""
        assert self.transport is not None
        try:
            link = await self.transport.dial(
                bundle.primary_cluster_addr, secondary_tls(bundle), 5.0
            )
            channel = Channel(link)
            try:
                await channel.send(
                    {**frame, "kind": Kind.PERFORMANCE.value, "secondary_id": bundle.secondary_id}
                )
                answer: dict[str, Any] = await channel.receive_within(timeout)
            finally:
                await channel.close()
        except (OSError, TimeoutError, FrameError) as error:
            raise PrimaryUnreachableError() from error
        return answer

    async def _wait_applied(self, index: int) -> bool:
        live = self._live
        if live is None:
            return False
        return await wait_applied(lambda: live.client.last_remote_wal, index)

    def mount_index(self) -> MountIndex:
        return MountIndex.build(
            ((e.storage_prefix, e.route_path, e.local) for e in self.router.entries()),
            ((n.id, n.path) for n in self.namespaces.all()),
        )

    # -- primary ------------------------------------------------------------------------

    async def enable_primary(self, kind: Kind, primary_cluster_addr: str) -> list[str]:
        async with self._lock:
            state = self.states[kind]
            if state.mode != "disabled":
                raise InvalidRequestError(f"{kind.value} replication is already {state.mode}")
            if not primary_cluster_addr:
                raise InvalidRequestError("primary_cluster_addr is required (HOST:PORT)")
            _check_addr(primary_cluster_addr)
            ca = create_cluster_ca(f"coffer-replication-{kind.value}")
            await self._save(
                KindState(
                    kind,
                    mode="primary",
                    cluster_id=str(uuid.uuid4()),
                    primary_cluster_addr=primary_cluster_addr,
                    ca_cert=ca.cert_pem.decode(),
                    ca_key=ca.key_pem.decode(),
                )
            )
        if self._live is not None:
            await self._start_listener()
        return [
            "This cluster is now a replication primary; secondaries connect to "
            f"{primary_cluster_addr}."
        ]

    def _primary(self, kind: Kind) -> KindState:
        state = self.states[kind]
        if state.mode != "primary":
            raise InvalidRequestError(f"this cluster is not a {kind.value} replication primary")
        return state

    async def secondary_token(self, kind: Kind, secondary_id: str, api_addr: str) -> Bundle:
        if not secondary_id or "/" in secondary_id or len(secondary_id) > 128:
            raise InvalidRequestError("id is required (no slashes, at most 128 characters)")
        async with self._lock:
            state = self._primary(kind)
            known = state.secondaries.get(secondary_id)
            # (an id inherited by a promotion is issued again, for its update-primary)
            if known is not None and not known.get("revoked") and not known.get("inherited"):
                raise InvalidRequestError(f"a secondary with id {secondary_id!r} already exists")
            ca = ClusterCA(state.ca_cert.encode(), state.ca_key.encode())
            issued = ca.issue(secondary_id)
            state.secondaries[secondary_id] = {"revoked": False, "issued": time.time()}
            await self._save(state)
        return Bundle(
            kind,
            api_addr,
            state.primary_cluster_addr,
            state.cluster_id,
            secondary_id,
            issued.ca_pem.decode(),
            issued.cert_pem.decode(),
            issued.key_pem.decode(),
        )

    async def revoke_secondary(self, kind: Kind, secondary_id: str) -> None:
        async with self._lock:
            state = self._primary(kind)
            if secondary_id not in state.secondaries:
                raise InvalidRequestError(f"no secondary with id {secondary_id!r}")
            state.secondaries[secondary_id]["revoked"] = True
            state.filters.pop(secondary_id, None)
            await self._save(state)
        if self._live is not None:
            link = self._live.links.get(f"{kind.value}/{secondary_id}")
            if link is not None:
                link.connection_status = "revoked"

    def get_filter(self, secondary_id: str) -> PathsFilter | None:
        return self._primary(Kind.PERFORMANCE).filters.get(secondary_id)

    async def set_filter(self, secondary_id: str, paths_filter: PathsFilter | None) -> None:
        async with self._lock:
            state = self._primary(Kind.PERFORMANCE)
            if paths_filter is None:
                state.filters.pop(secondary_id, None)
            else:
                state.filters[secondary_id] = paths_filter
            await self._save(state)
        if self._live is not None:
            link = self._live.links.get(f"{Kind.PERFORMANCE.value}/{secondary_id}")
            if link is not None:
                link.resync = True  # what it may hold changed: compare everything

    def dynamic_filter(self, secondary_id: str) -> dict[str, list[str]]:
        """The mounts and namespaces a secondary's paths filter excludes now (filtering
        ``ns1/`` also excludes ``ns1/ns2/`` and ``ns1/kv/``)."""
        paths_filter = self._primary(Kind.PERFORMANCE).filters.get(secondary_id)
        if not self.allowed(Kind.PERFORMANCE, secondary_id):
            raise InvalidRequestError(f"no secondary with id {secondary_id!r}")
        if paths_filter is None:
            return {"dynamic_filtered_mounts": [], "dynamic_filtered_namespaces": []}
        mounts = sorted(
            e.route_path
            for e in self.router.entries()
            if not e.local and not paths_filter.keeps(e.route_path)
        )
        namespaces = sorted(
            n.path for n in self.namespaces.all() if n.path and not paths_filter.keeps(n.path)
        )
        return {"dynamic_filtered_mounts": mounts, "dynamic_filtered_namespaces": namespaces}

    async def secondary_dynamic_filter(self, secondary_id: str) -> dict[str, list[str]]:
        """On a performance secondary: what its primary's paths filter excludes for it now,
        asked of the primary (the excluded mounts are no longer stored here)."""
        bundle = self.states[Kind.PERFORMANCE].bundle
        if not self.is_perf_secondary or bundle is None:
            raise InvalidRequestError("this cluster is not a performance secondary of a primary")
        if secondary_id != bundle.secondary_id:
            raise InvalidRequestError(f"this secondary's id is {bundle.secondary_id!r}")
        if self.transport is None:
            raise InvalidRequestError("replication is not available on this server")
        answer = await self._exchange(bundle, {"type": "dynamic-filter"}, 10.0)
        try:
            return dynamic_filter_from(answer)
        except FrameError as exc:
            raise PrimaryUnreachableError() from exc

    def allowed(self, kind: Kind, secondary_id: str) -> bool:
        state = self.states[kind]
        found = state.secondaries.get(secondary_id)
        return state.mode == "primary" and found is not None and not found.get("revoked")

    def server_tls(self, kind: Kind, host: str) -> RaftTLS:
        state = self._primary(kind)
        ca = ClusterCA(state.ca_cert.encode(), state.ca_key.encode())
        return ca.issue(f"primary-{kind.value}", host)

    async def bootstrap_for(self, kind: Kind, secondary_id: str) -> dict[str, Any]:
        """The seal keys (as stored: ciphertext) and the secondary's own state, encrypted
        with the keyring it is about to share, for the wiped secondary to store raw."""
        seal: dict[str, str] = {}
        for key in SEAL_KEYS:
            entry = await self.physical.get(key)
            if entry is not None:
                seal[key] = base64.b64encode(entry.value).decode()
        return {"type": "bootstrap", "seal": seal}

    def encrypt_state_for(self, state: KindState) -> bytes:
        return self.barrier.encrypt_entry(state_key(state.kind), jsoncodec.dumps(state.to_json()))

    # -- secondary ------------------------------------------------------------------------

    async def enable_secondary(self, kind: Kind, token: str, primary_api_addr: str) -> list[str]:
        """Unwrap the bundle at the primary, fetch its seal keys over the replication
        channel, wipe this cluster's data and store the primary's seal. The caller seals
        this node: it unseals next with the primary's keys."""
        if self.transport is None:
            raise InvalidRequestError("replication is not available on this server")
        for other in Kind:
            if self.states[other].mode != "disabled":
                raise InvalidRequestError(
                    f"this cluster is already a {other.value} replication {self.states[other].mode}"
                )
        jti, addr = parse_activation_token(token)
        addr = (primary_api_addr or addr).rstrip("/")
        if not addr:
            raise InvalidRequestError("primary_api_addr is required with a plain wrapping token")
        bundle = await self._unwrap(addr, jti)
        if bundle.kind is not kind:
            raise InvalidRequestError(f"the token is for {bundle.kind.value} replication")
        boot = await fetch_bootstrap(self, bundle)
        seal = {k: base64.b64decode(v) for k, v in boot["seal"].items()}
        state_blob = base64.b64decode(boot["state"])
        await self._wipe()
        ops: list[Any] = []
        for key, value in seal.items():
            ops.append(Put(key, value))
        ops.append(Put(state_key(kind), state_blob))
        ops.append(Put(position_key(kind), b"0"))
        await self.physical.commit(ops)
        self.states[kind] = KindState(
            kind, mode="secondary", cluster_id=bundle.cluster_id, bundle=bundle
        )
        return [
            "This cluster's data was wiped; it is now a "
            f"{kind.value} replication secondary of {bundle.primary_api_addr}.",
            "It seals itself now: unseal it with the primary's unseal keys.",
        ]

    # -- role changes -------------------------------------------------------------------
    #
    # Each returns warnings; the caller restarts the active node's duties, so the
    # listener, the client and lease expiry follow the new role.

    async def promote(
        self, kind: Kind, primary_cluster_addr: str, perf_cluster_addr: str = ""
    ) -> list[str]:
        """A promoted DR secondary also takes over its old primary's performance role
        (``perf_cluster_addr``: where to listen for it, default the old primary's)."""
        async with self._lock:
            state = self.states[kind]
            if state.mode != "secondary":
                raise InvalidRequestError(f"this cluster is not a {kind.value} secondary")
            if not primary_cluster_addr:
                raise InvalidRequestError("primary_cluster_addr is required (HOST:PORT)")
            _check_addr(primary_cluster_addr)
            if perf_cluster_addr:
                _check_addr(perf_cluster_addr)
            ca = create_cluster_ca(f"coffer-replication-{kind.value}")
            await self._save(
                KindState(
                    kind,
                    mode="primary",
                    cluster_id=state.cluster_id,
                    primary_cluster_addr=primary_cluster_addr,
                    ca_cert=ca.cert_pem.decode(),
                    ca_key=ca.key_pem.decode(),
                )
            )
            warnings = [
                f"This cluster is now the {kind.value} replication primary; other secondaries "
                "need update-primary with a token from it."
            ]
            if kind is Kind.DR:
                warnings += await self._take_over_performance(perf_cluster_addr)
        return warnings

    async def _take_over_performance(self, address: str) -> list[str]:
        """Become the performance primary the old primary was (same CA, secondaries and
        paths filters, from the copy it replicated here); under ``self._lock``."""
        if self.states[Kind.PERFORMANCE].mode != "disabled":
            return []
        raw = await self.barrier.get(PERF_MIRROR_KEY)
        if raw is None:
            return []
        old = KindState.from_json(jsoncodec.loads(raw.value))
        if old.mode != "primary":
            return []
        old.primary_cluster_addr = address or old.primary_cluster_addr
        for entry in old.secondaries.values():
            if not entry.get("revoked"):
                entry["inherited"] = True
        await self._save(old)
        names = sorted(k for k, v in old.secondaries.items() if v.get("inherited"))
        return [
            "This cluster took over the old primary's performance primary role at "
            f"{old.primary_cluster_addr}; its performance secondaries ({', '.join(names)}) "
            "need update-primary with a secondary token for the same id from this cluster."
        ]

    async def demote(self, kind: Kind) -> list[str]:
        async with self._lock:
            state = self._primary(kind)
            await self._save(KindState(kind, mode="secondary", cluster_id=state.cluster_id))
        return [
            f"This cluster is now a {kind.value} secondary with no primary; "
            "update-primary connects it to one without a wipe."
        ]

    async def disable(self, kind: Kind, mode: str) -> list[str]:
        async with self._lock:
            if self.states[kind].mode != mode:
                raise InvalidRequestError(f"this cluster is not a {kind.value} {mode}")
            await self._save(KindState(kind))
        return [f"{kind.value} replication is disabled on this cluster."]

    async def update_primary(self, kind: Kind, token: str, primary_api_addr: str) -> list[str]:
        """Point a secondary (or a demoted primary) at a primary that shares its keyring:
        no wipe; it compares everything once (its old position means nothing there)."""
        if self.states[kind].mode != "secondary":
            raise InvalidRequestError(f"this cluster is not a {kind.value} secondary")
        jti, addr = parse_activation_token(token)
        addr = (primary_api_addr or addr).rstrip("/")
        if not addr:
            raise InvalidRequestError("primary_api_addr is required with a plain wrapping token")
        bundle = await self._unwrap(addr, jti)
        if bundle.kind is not kind:
            raise InvalidRequestError(f"the token is for {bundle.kind.value} replication")
        async with self._lock:
            await self._save(
                KindState(kind, mode="secondary", cluster_id=bundle.cluster_id, bundle=bundle)
            )
            await self.physical.put(position_key(kind), b"0")
        return [f"This secondary now follows {bundle.primary_api_addr}."]

    async def _unwrap(self, addr: str, jti: str) -> Bundle:
        client = self._http()
        if client is None:
            raise InvalidRequestError("no outgoing HTTP client is configured")
        try:
            reply = await client.request(
                "POST",
                f"{addr}/v1/sys/wrapping/unwrap",
                headers={"X-Vault-Token": jti},
                json={},
                timeout=10.0,
            )
        except Exception as exc:
            raise InvalidRequestError(f"could not reach the primary at {addr}") from exc
        if reply.status != 200:
            raise InvalidRequestError(
                f"the primary refused the activation token (HTTP {reply.status})"
            )
        try:
            data = jsoncodec.loads(reply.body)["data"]
            return Bundle.from_json(data)
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidRequestError("the primary's answer is not an activation bundle") from exc

    async def _wipe(self) -> None:
        keys = await walk(self.physical, "")
        doomed = [k for k in keys if not k.startswith(_KEEP_ON_WIPE)]
        for start in range(0, len(doomed), 500):
            await self.physical.commit([Delete(k) for k in doomed[start : start + 500]])
        self.barrier.invalidate_all()

    # -- the active node ------------------------------------------------------------------

    async def start_active(self, applied: int) -> None:
        async with self._active_lock:
            await self._stop_active()
            with contextlib.suppress(CofferError):
                await self.load()
            # Entries applied while no ring existed were shipped by nobody: the ring
            # begins after them, so a secondary behind them syncs instead of resuming
            # past a gap.
            start = max(applied, self._observed)
            live = Live(WalRing(start, self.ring_capacity, self.ring_max_bytes))
            self._live = live
            live.tasks.append(asyncio.create_task(self._feed(live), name="replication-feed"))
            await self._start_listener()
            for kind in Kind:
                if self.states[kind].mode == "secondary":
                    live.tasks.append(
                        asyncio.create_task(
                            run_secondary(self, kind, live.client), name="replication"
                        )
                    )

    async def stop_active(self) -> None:
        async with self._active_lock:
            await self._stop_active()

    async def _stop_active(self) -> None:
        live, self._live = self._live, None
        if live is None:
            return
        for task in live.tasks:
            task.cancel()
        await asyncio.gather(*live.tasks, return_exceptions=True)
        for listening in live.listening.values():
            with contextlib.suppress(Exception):
                await listening.close()

    async def _start_listener(self) -> None:
        """One listener per primary kind (each kind has its own CA and address)."""
        live = self._live
        if live is None or self.transport is None:
            return
        for state in self.states.values():
            if state.mode != "primary" or state.kind in live.listening:
                continue
            address = state.primary_cluster_addr
            host = address.rpartition(":")[0].strip("[]")
            try:
                live.listening[state.kind] = await self.transport.listen(
                    address,
                    self.server_tls(state.kind, host),
                    lambda link: serve_link(self, live, link),
                )
            except OSError:
                log.exception("replication listener failed", extra={"event": "replication.listen"})

    def observe(self, changes: AppliedChanges) -> None:
        """An entry applied to this cluster's storage (``node.core.replicated``)."""
        # ``map`` over the keys in C: this runs for every applied entry (issue 16).
        if changes.reset or any(map(str.startswith, changes.keys, repeat(_STATE_PREFIX))):
            self._reload_soon()  # the active node changed a role: standbys follow
        self._observed = max(self._observed, changes.index)
        live = self._live
        if live is None:
            return
        if not self._is_primary():
            # Nothing to ship: no read of the values, no WAL, no trip through the
            # feed task (issue 16: ~2 % of every write on the active node). A
            # secondary behind this index syncs, as after a reset.
            live.ring.skip(changes.index)
            return
        live.feed.put_nowait((changes.index, tuple(changes.keys), changes.reset))

    def _reload_soon(self) -> None:
        async def reload() -> None:
            try:
                await self.load()
            except SealedError:
                return
            except StorageError:
                # The active node made this cluster a secondary: the state is under
                # the primary's keys now. A standby seals too, to be unsealed with them.
                if self._live is None and self.seal_self is not None:
                    log.warning(
                        "this cluster took another's keys (replication secondary): sealing",
                        extra={"event": "replication.sealing"},
                    )
                    await self.seal_self()
            except CofferError:
                return

        task = asyncio.create_task(reload(), name="replication-reload")
        self._reloads.add(task)
        task.add_done_callback(self._reloads.discard)

    async def _feed(self, live: Live) -> None:
        while True:
            index, keys, reset = await live.feed.get()
            if reset:
                live.ring.reset(index)
                continue
            ops: list[tuple[str, bytes | None]] = []
            for key in keys:
                entry = await self.physical.get(key)
                ops.append((key, entry.value if entry is not None else None))
            live.ring.append(Wal(index, tuple(ops)))

    def live(self) -> Live | None:
        return self._live

    # -- status ---------------------------------------------------------------------------

    async def merkle_root(self, kind: Kind) -> str:
        """The root over what this cluster holds for ``kind`` (unfiltered, no tables);
        a primary and its DR secondary hold the same data when their roots are equal.
        Computed over every key, at most once a second per kind (status is polled)."""
        cached = self._roots.get(kind)
        if cached is not None and time.monotonic() - cached[0] < _ROOT_TTL:
            return cached[1]
        try:
            if self.states[kind].mode == "primary":
                hashed, _ = await view_of(self, kind, None)
            else:
                hashed = await my_view(self, kind)
        except CofferError:
            return ""
        found = merkle.root(merkle.buckets(hashed))
        self._roots[kind] = (time.monotonic(), found)
        return found

    async def status(self, kind: Kind, merkle_root: bool = True) -> dict[str, Any]:
        state = self.states[kind]
        live = self._live
        if state.mode == "disabled":
            return {"mode": "disabled"}
        if state.mode == "primary":
            links = [link for link in (live.links.values() if live else []) if link.kind is kind]
            return {
                "mode": "primary",
                "state": "running",
                "cluster_id": state.cluster_id,
                "primary_cluster_addr": state.primary_cluster_addr,
                "known_secondaries": sorted(
                    k for k, v in state.secondaries.items() if not v.get("revoked")
                ),
                "secondaries": [
                    {
                        "node_id": link.secondary_id,
                        "connection_status": link.connection_status,
                        "last_heartbeat": _rfc3339(link.last_heartbeat),
                        "acked_wal": link.acked,
                        "state": link.state,
                    }
                    for link in sorted(links, key=lambda x: x.secondary_id)
                ],
                "last_wal": live.ring.last if live else 0,
                "merkle_root": await self.merkle_root(kind) if merkle_root else "",
                "corrupted_merkle_tree": False,
            }
        bundle = state.bundle
        client = live.client if live else ClientStatus()
        return {
            "mode": "secondary",
            "state": client.state,
            "connection_state": client.connection_state,
            "cluster_id": state.cluster_id,
            "secondary_id": bundle.secondary_id if bundle else "",
            "last_remote_wal": client.last_remote_wal,
            "last_heartbeat": _rfc3339(client.last_heartbeat),
            "merkle_root": await self.merkle_root(kind) if merkle_root else "",
            "known_primary_cluster_addrs": [bundle.primary_cluster_addr] if bundle else [],
            "primaries": [
                {
                    "api_address": bundle.primary_api_addr,
                    "cluster_address": bundle.primary_cluster_addr,
                    "connection_status": client.connection_state,
                    "last_heartbeat": _rfc3339(client.last_heartbeat),
                }
            ]
            if bundle
            else [],
            "sync_progress": client.sync_progress,
            "sync_total_keys": client.sync_total_keys,
        }


def _rfc3339(moment: float) -> str:
    if not moment:
        return ""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(moment))


def _check_addr(address: str) -> None:
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InvalidRequestError(f"address {address!r} must be HOST:PORT")


def activation_token(jti: str, addr: str) -> str:
    body = jsoncodec.dumps({"addr": addr, "jti": jti})
    return ACTIVATION_PREFIX + base64.urlsafe_b64encode(body).decode().rstrip("=")


def parse_activation_token(token: str) -> tuple[str, str]:
    """(wrapping token, primary API address or "") of an activation or plain token."""
    token = token.strip()
    if not token:
        raise InvalidRequestError("token is required")
    if not token.startswith(ACTIVATION_PREFIX):
        return token, ""
    body = token[len(ACTIVATION_PREFIX) :]
    try:
        raw = jsoncodec.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        return str(raw["jti"]), str(raw["addr"])
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidRequestError("the activation token is malformed") from exc
