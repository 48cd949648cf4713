"""Audit devices: a record of every request and response, secrets HMACed.

See ``DESIGN.md`` in this package; the operator's guide is ``docs/audit.md``.
"""

from node.audit.broker import AuditBroker, AuditFailedError
from node.audit.table import AUDIT_TABLE_KEY, AuditTable
from node.audit.trail import Trail

__all__ = ["AUDIT_TABLE_KEY", "AuditBroker", "AuditFailedError", "AuditTable", "Trail"]
