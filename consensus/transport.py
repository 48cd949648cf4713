"""pysyncobj's TCP transport with our three changes, via its public
``transportClass`` hook.

* **Acknowledgements wait for fsync.** A follower's ``next_node_idx`` replies
  (its "I hold up to here") are held back and only sent by
  :meth:`flush_acks`, which first syncs the journal (and sends one reply per
  run of successes, :func:`coalesce_acks`). The leader counts a
  follower towards a majority only from these replies, so with this and the
  leader syncing before each tick (see :mod:`consensus.node`) an entry is on
  disk on a majority before any client sees it committed.
* **Follower appends are reconciled** (:mod:`consensus.follower`) before the
  library sees them, and the reply is corrected where the rewrite needs it.
* **Idle links stay alive.** Followers never talk to each other, so their
  link goes silent past ``connectionTimeout`` and the first RequestVote after
  a leader dies trips the timeout and is lost (pysyncobj.md section 3); every
  node pings its connected peers, and the library ignores the message type.

* **Outgoing connections leave from the cluster address**, so a firewall
  rule on a node's address isolates it in both directions.
* **A peer is the node its certificate names.** With mutual TLS, a
  connection to or from a member's address is dropped unless the peer's
  certificate names (common name) the node id the cluster knows at that
  address (``identity_of``), so a certificate issued to one node cannot take
  another member's place.

* **No read-only peers inside TLS.** pysyncobj lets a connection that names
  itself ``readonly`` follow the whole log. Without TLS only a holder of the
  transport password gets that far; with TLS (and so without Fernet) a
  certificate from the cluster CA would suffice, e.g. a removed member's,
  which stays valid until it expires. Coffer never runs read-only members,
  so such a connection is closed.

The syncobj_admin utility protocol is refused: membership goes through
``RaftBackend`` so node ids are replicated with addresses.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from cryptography import x509
from cryptography.x509.oid import NameOID

from consensus._vendor.pysyncobj.transport import TCPTransport
from consensus.follower import reconcile
from consensus.journal import DurableJournal

__all__ = ["PING", "CofferTransport", "certificate_common_name", "coalesce_acks"]

log = logging.getLogger(__name__)

PING = "coffer_ping"


def _plain_success(message: dict[str, Any]) -> bool:
    return bool(message.get("success")) and not message.get("reset")


def coalesce_acks(deferred: list[tuple[Any, dict[str, Any]]]) -> list[tuple[Any, dict[str, Any]]]:
    """Fold each run of plain successful acks to one node into its highest one.

    The leader only ever raises a follower's match index on a plain success
    (and ignores a lower one), so the highest of a run says everything the run
    did; a failure or a ``reset`` reply keeps its place. One encrypted message
    per node per flush instead of one per AppendEntries.
    """
    out: list[tuple[Any, dict[str, Any]]] = []
    last_at: dict[Any, int] = {}  # node -> position in ``out`` of its latest reply
    for node, message in deferred:
        at = last_at.get(node)
        if at is not None and _plain_success(message) and _plain_success(out[at][1]):
            if message["next_node_idx"] >= out[at][1]["next_node_idx"]:
                out[at] = (node, message)
            continue
        last_at[node] = len(out)
        out.append((node, message))
    return out


def certificate_common_name(der: bytes) -> str | None:
    """The common name of a DER certificate (a node certificate's node id)."""
    try:
        names = x509.load_der_x509_certificate(der).subject.get_attributes_for_oid(
            NameOID.COMMON_NAME
        )
    except ValueError:
        return None
    value = names[0].value if names else None
    return value if isinstance(value, str) else None


class CofferTransport(TCPTransport):  # type: ignore[misc]  # pysyncobj is untyped
    def __init__(
        self,
        syncObj: Any,
        selfNode: Any,
        otherNodes: Any,
        *,
        journal: DurableJournal,
        defer_acks: bool,
        identity_of: Callable[[str], str | None] | None = None,
    ) -> None:
        self._journal = journal
        self._identity_of = identity_of
        self._defer_acks = defer_acks
        self._deferred: list[tuple[Any, dict[str, Any]]] = []
        self._reply_fix: tuple[Any, int] | None = None
        self.refused_appends = 0
        super().__init__(syncObj, selfNode, otherNodes)

    # -- who a peer is --------------------------------------------------------------

    def _peerAllowed(self, conn: Any, node: Any) -> bool:
        expected = self._identity_of(str(node.id)) if self._identity_of else None
        der = conn.peerCertificate()
        if expected is None or der is None:
            return True  # an address whose node id is not known yet, or no TLS
        named = certificate_common_name(der)
        if named == expected:
            return True
        log.warning(
            "refusing a raft peer at %s: its certificate names %r, not %r",
            node.id,
            named,
            expected,
        )
        return False

    # -- incoming ------------------------------------------------------------------

    def _onMessageReceived(self, node: Any, message: Any) -> None:
        if not isinstance(message, dict):
            return
        kind = message.get("type")
        if kind == PING:
            return
        if kind != "append_entries":
            super()._onMessageReceived(node, message)
            return
        sync_obj = self._syncObj
        result = reconcile(
            message,
            self._journal,
            current_term=sync_obj.raftCurrentTerm,
            protected_index=max(sync_obj.raftCommitIndex, sync_obj.raftLastApplied),
        )
        if result.message is None:
            self.refused_appends += 1
            log.critical(
                "refusing an append from %s that would delete committed entry %s",
                node,
                result.truncates_from,
            )
            return
        if result.reply_next_index is not None:
            self._reply_fix = (node, result.reply_next_index)
        try:
            super()._onMessageReceived(node, result.message)
        finally:
            self._reply_fix = None

    def _onIncomingMessageReceived(self, conn: Any, message: Any) -> None:
        if message == "readonly" and self._syncObj.encryptor is None:
            log.warning("refused a read-only raft peer (none are used inside TLS)")
            self._unknownConnections.discard(conn)
            conn.disconnect()
            return
        super()._onIncomingMessageReceived(conn, message)

    def _onUtilityMessage(self, conn: Any, message: Any) -> bool:
        log.warning("refused a syncobj_admin command on the raft port")
        conn.disconnect()
        return True

    # -- outgoing --------------------------------------------------------------------

    def send(self, node: Any, message: Any) -> bool:
        if isinstance(message, dict) and message.get("type") == "next_node_idx":
            fix = self._reply_fix
            if fix is not None and fix[0] == node and message.get("success"):
                message = dict(message, next_node_idx=fix[1])
                self._reply_fix = None
            if self._defer_acks:
                self._deferred.append((node, message))
                return True
        return bool(super().send(node, message))

    def flush_acks(self) -> None:
        """Sync the journal, then release the held-back acknowledgements."""
        if not self._deferred:
            return
        self._journal.sync()
        deferred, self._deferred = self._deferred, []
        for node, message in coalesce_acks(deferred):
            super().send(node, message)

    def ping_peers(self) -> None:
        sync_obj = self._syncObj
        for node in sync_obj.otherNodes:
            if sync_obj.isNodeConnected(node):
                super().send(node, {"type": PING})
