"""``coffer status``: seal and HA state, with Vault's exit codes.

Exit 0 when unsealed, 2 when sealed, 1 on any error, so scripts can poll
``coffer status`` the way they poll ``vault status``. The seal-status
rendering is shared with ``operator unseal``.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cli.errors import EXIT_ERROR, EXIT_OK, CliError
from cli.flags import add_command
from cli.http import ApiError, Json, TransportError
from cli.output import print_json, table

if TYPE_CHECKING:
    from cli.context import Context
    from cli.flags import Subparsers

__all__ = ["EXIT_SEALED", "fetch_leader", "print_seal_status", "register", "seal_status_rows"]

EXIT_SEALED = 2
_ZERO_TIME = "0001-01-01T00:00:00Z"  # Go's zero time.Time, "never active"


def seal_status_rows(
    seal: Mapping[str, Any], leader: Mapping[str, Any] | None
) -> list[tuple[str, object]]:
    """The rows of ``vault status``, in Vault's order."""
    sealed = bool(seal.get("sealed"))
    threshold = seal.get("t", 0)
    rows: list[tuple[str, object]] = [("Seal Type", seal.get("type", ""))]
    recovery = bool(seal.get("recovery_seal"))
    if recovery:
        rows.append(("Recovery Seal Type", seal.get("recovery_seal_type", "")))
    rows.append(("Initialized", bool(seal.get("initialized"))))
    rows.append(("Sealed", sealed))
    rows.append(("Total Recovery Shares" if recovery else "Total Shares", seal.get("n", 0)))
    rows.append(("Threshold", threshold))
    if sealed:
        rows.append(("Unseal Progress", f"{seal.get('progress', 0)}/{threshold}"))
        rows.append(("Unseal Nonce", seal.get("nonce", "")))
    if seal.get("migration"):
        rows.append(("Seal Migration in Progress", True))
    rows.append(("Version", seal.get("version", "")))
    rows.append(("Build Date", seal.get("build_date", "")))
    rows.append(("Storage Type", seal.get("storage_type", "")))
    if seal.get("cluster_name") and seal.get("cluster_id"):
        rows.append(("Cluster Name", seal["cluster_name"]))
        rows.append(("Cluster ID", seal["cluster_id"]))
    if leader is not None:
        rows.extend(_ha_rows(leader, sealed))
    return rows


def _ha_rows(leader: Mapping[str, Any], sealed: bool) -> list[tuple[str, object]]:
    enabled = bool(leader.get("ha_enabled"))
    rows: list[tuple[str, object]] = [("HA Enabled", enabled)]
    if not enabled or sealed:
        return rows
    is_self = bool(leader.get("is_self"))
    rows.append(("HA Cluster", leader.get("leader_cluster_address", "")))
    rows.append(("HA Mode", "active" if is_self else "standby"))
    active_time = leader.get("active_time", "")
    if is_self and active_time and active_time != _ZERO_TIME:
        rows.append(("Active Since", active_time))
    if not is_self:
        rows.append(("Active Node Address", leader.get("leader_address") or "<none>"))
    for key, label in (
        ("raft_committed_index", "Raft Committed Index"),
        ("raft_applied_index", "Raft Applied Index"),
    ):
        if leader.get(key):
            rows.append((label, leader[key]))
    return rows


def fetch_leader(ctx: Context) -> Json | None:
    """``sys/leader``, or ``None`` if the server will not say (HA rows are optional)."""
    try:
        _, leader = ctx.client.request("GET", "/v1/sys/leader")
    except (ApiError, TransportError):
        return None
    return leader


def print_seal_status(ctx: Context, seal: Json) -> None:
    """Print a seal status (plus HA state) as a table or, with ``-format=json``, JSON."""
    leader = fetch_leader(ctx)
    if ctx.json:
        merged = dict(seal)
        for key, value in (leader or {}).items():
            merged.setdefault(key, value)
        print_json(merged, ctx.out)
    else:
        ctx.print(table(seal_status_rows(seal, leader)))


def run(args: argparse.Namespace, ctx: Context) -> int:
    try:
        seal = ctx.call("checking seal status", "GET", "/v1/sys/seal-status")
        if seal is None:
            raise CliError("Error checking seal status: empty response from server")
        print_seal_status(ctx, seal)
    except CliError as exc:
        # Vault's `status` keeps exit 2 for "sealed"; every failure is 1.
        raise CliError(exc.message, EXIT_ERROR) from None
    return EXIT_SEALED if seal.get("sealed") else EXIT_OK


def register(subparsers: Subparsers, parents: list[argparse.ArgumentParser]) -> None:
    parser = add_command(
        subparsers,
        "status",
        "print the seal and HA status",
        parents=parents,
        description=(
            "Print the seal and HA status of the server.\n\n"
            "Exit codes: 0 unsealed, 2 sealed, 1 error."
        ),
    )
    parser.set_defaults(handler=run)
