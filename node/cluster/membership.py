""" "Am I still a member?": the signed question a leaderless node asks its peers.

pysyncobj drops a removed node without telling it, and the remaining nodes
refuse its Raft connections, so the node only sees a missing leader. It then
asks the other nodes' APIs (addresses from the registry). Question and
answer are HMACs under the forwarding key, so only cluster members can ask,
and a client cannot trick a node into sealing itself.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from node.cluster.secrets import sign, verify
from node.outbound import OutboundError
from sdk.errors import PermissionDeniedError

if TYPE_CHECKING:
    from node.cluster.cluster import Cluster

__all__ = ["MEMBER_PATH", "answer_membership", "ask_peers"]

log = logging.getLogger("coffer.cluster")

MEMBER_PATH = "/v1/sys/storage/raft/bootstrap/member"


def answer_membership(cluster: Cluster, node_id: str, signature: str) -> dict[str, Any]:
    key = cluster.forward_key
    if key is None or not verify(key, signature, "member?", node_id):
        raise PermissionDeniedError()
    member = cluster.member_answer(node_id)
    return {"member": member, "signature": sign(key, "member!", node_id, str(member).lower())}


async def ask_peers(cluster: Cluster) -> bool:
    """True when a peer that knows the configuration says this node is not in it."""
    key = cluster.forward_key
    http = cluster.outgoing_http()
    node_id = cluster.settings.node_id
    if key is None or http is None:
        return False
    removed = False
    for record in await cluster.registry.all():
        if record.node_id == node_id or not record.api_addr:
            continue
        body = {"node_id": node_id, "signature": sign(key, "member?", node_id)}
        try:
            reply = await http.request(
                "PUT", record.api_addr.rstrip("/") + MEMBER_PATH, json=body, timeout=2.0
            )
            doc = json.loads(reply.body) if reply.status == 200 else None
        except (OutboundError, ValueError) as exc:
            log.info(
                "membership question failed", extra={"peer": record.node_id, "error": str(exc)}
            )
            continue
        data = doc.get("data") if isinstance(doc, dict) else None
        if not isinstance(data, dict) or not isinstance(data.get("member"), bool):
            log.info("no membership answer", extra={"peer": record.node_id, "status": reply.status})
            continue
        member: bool = data["member"]
        if not verify(key, str(data.get("signature", "")), "member!", node_id, str(member).lower()):
            continue
        if member:
            return False
        removed = True
    return removed
