"""Make pysyncobj's follower append like Raft: truncate only on a conflict.

pysyncobj 0.3.17 handles an AppendEntries whose ``prevLogIdx`` matches by
deleting *every* entry after it and appending the message's entries
(``SyncObj.__onMessageReceived``). Raft deletes only from the first entry
whose term conflicts. The difference matters because the leader rewinds
``nextIndex`` on every success acknowledgement and caps each message, so
followers routinely receive messages that overlap what they already hold
(the library logs "truncating already-applied log entries" for it):

* a follower deletes entries it has already acknowledged; until the leader
  re-sends them its log is shorter than what the leader counted towards a
  majority, so a crash in that window can lose a committed write;
* it deletes entries at or below its own commit index, and clamps that index
  down, while its state machine has already applied them.

No entry is ever rewritten with different content by a correct leader, so
this does not corrupt state by itself; it is a durability hole. We close it
by rewriting each AppendEntries before pysyncobj sees it (:func:`reconcile`):
entries the follower already holds with the same term are skipped, so the
library only ever deletes from a real conflict, and a conflict at or below
the commit index is refused outright (it would mean a Raft safety violation).
When the follower holds entries beyond everything the message covers, the
library must not delete them either, so the message is rewritten to end at
the follower's last entry; because those extra entries are not verified
against the leader's log, the reply is corrected to the verified index and
the commit index the library may adopt is capped at it (Raft's
``min(leaderCommit, index of last new entry)``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["LogView", "Reconciled", "reconcile"]


class LogView(Protocol):
    def first_index(self) -> int: ...

    def last_index(self) -> int: ...

    def term_at(self, index: int) -> int | None: ...


@dataclass(frozen=True, slots=True)
class Reconciled:
    """The message to hand to pysyncobj (``None``: drop it) and the reply fix."""

    message: dict[str, Any] | None
    reply_next_index: int | None = None
    truncates_from: int | None = None


def _passthrough(message: dict[str, Any]) -> Reconciled:
    return Reconciled(message)


def reconcile(
    message: dict[str, Any], log: LogView, *, current_term: int, protected_index: int
) -> Reconciled:
    """Rewrite one ``append_entries`` message for a follower (pure function).

    ``protected_index`` is the highest index known committed or applied here;
    nothing at or below it may be deleted.
    """
    if (
        message.get("type") != "append_entries"
        or "prevLogIdx" not in message  # a snapshot chunk
        or message.get("transmission") is not None  # a chunked entry (never ours)
        or message.get("term", -1) < current_term  # ignored by pysyncobj anyway
    ):
        return _passthrough(message)
    prev_index, prev_term = message["prevLogIdx"], message["prevLogTerm"]
    entries = list(message.get("entries") or [])
    if (
        not isinstance(prev_index, int)
        or prev_index < log.first_index()
        or log.term_at(prev_index) != prev_term
    ):
        return _passthrough(message)  # pysyncobj answers "no match" without touching the log
    last = log.last_index()
    matched = prev_index
    rest: list[Any] = []
    for position, entry in enumerate(entries):
        index, term = entry[1], entry[2]
        if index != matched + 1:
            return _passthrough(message)  # not contiguous: not from a pysyncobj leader
        if index > last:
            rest = entries[position:]
            break
        if log.term_at(index) != term:
            if index <= protected_index:
                return Reconciled(None, truncates_from=index)  # refuse: committed entry
            rest = entries[position:]
            break
        matched = index
    commit = message.get("commit_index", 0)
    if rest:
        # pysyncobj deletes after `matched` only if something conflicts there.
        verified = rest[-1][1]
        truncates = rest[0][1] if rest[0][1] <= last else None
        rewritten = dict(
            message, prevLogIdx=matched, prevLogTerm=log.term_at(matched), entries=rest
        )
        rewritten["commit_index"] = min(commit, verified)
        return Reconciled(rewritten, None, truncates)
    # Everything in the message is already here: present it as a heartbeat at
    # our last entry so pysyncobj deletes nothing. Entries beyond the message
    # match the leader if the last one is of the leader's term (Log Matching);
    # otherwise they are unverified and the reply may only claim `matched`.
    verified = last if log.term_at(last) == message["term"] else matched
    rewritten = dict(
        message,
        prevLogIdx=last,
        prevLogTerm=log.term_at(last),
        entries=[],
        commit_index=min(commit, verified),
    )
    return Reconciled(rewritten, None if verified == last else verified + 1)
