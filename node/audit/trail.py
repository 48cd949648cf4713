"""What the pipeline tells the audit broker about one request, in order.

The pipeline notes where the request goes (``at``) and who sends it
(``caller``) as it learns them, logs the request once it is authorised and
before the backend runs (``log_request``: fail closed, nothing has been done
yet), and ends with ``responded`` or ``failed``. A request refused before
it was logged (a bad token, an ACL denial, no route) is logged then, with
its error, followed by its response entry, as the reference records denials.
A request a standby hands to the active node ends with ``forwarded``.
With no device enabled the pipeline gets ``NULL_TRAIL``, which does nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from node.audit.broker import AuditBroker, AuditFailedError
from node.audit.entry import AuditInput
from node.logical.request import Operation, Request
from node.logical.response import Response
from node.tokens.entry import TokenEntry
from sdk.errors import CofferError

if TYPE_CHECKING:
    from node.namespaces.model import Namespace
    from node.routing.mounts import MountEntry

__all__ = ["NULL_TRAIL", "AuditTrail", "Trail"]


class Trail(Protocol):
    def at(self, namespace: Namespace, path: str, mount: MountEntry) -> None: ...

    def caller(self, token: TokenEntry | None) -> None: ...

    async def log_request(self, operation: Operation) -> None: ...

    async def responded(self, response: Response) -> None: ...

    async def failed(self, error: Exception) -> None: ...

    async def forwarded(self, reason: Exception) -> None: ...


class _NullTrail:
    def at(self, namespace: Namespace, path: str, mount: MountEntry) -> None:
        pass

    def caller(self, token: TokenEntry | None) -> None:
        pass

    async def log_request(self, operation: Operation) -> None:
        pass

    async def responded(self, response: Response) -> None:
        pass

    async def failed(self, error: Exception) -> None:
        pass

    async def forwarded(self, reason: Exception) -> None:
        pass


NULL_TRAIL: Trail = _NullTrail()


def error_text(error: Exception) -> str:
    """The error as the client sees it; anything unexpected is an internal error."""
    if isinstance(error, CofferError) and error.messages:
        return "; ".join(error.messages)
    return "internal error"


class AuditTrail:
    def __init__(
        self,
        broker: AuditBroker,
        request: Request,
        identity_policies: Callable[[TokenEntry], Awaitable[list[str]]],
    ) -> None:
        self._broker = broker
        self._identity_policies = identity_policies
        self._input = AuditInput(request=request, path=request.path)
        self._logged = False
        self._refused = False

    def at(self, namespace: Namespace, path: str, mount: MountEntry) -> None:
        self._input = replace(
            self._input,
            namespace_id=namespace.id,
            namespace_path=namespace.path,
            path=path,
            mount_point=mount.route_path[len(mount.namespace_path) :],
            mount_type=mount.type,
            mount_accessor=mount.accessor,
        )

    def caller(self, token: TokenEntry | None) -> None:
        self._input = replace(self._input, token=token)

    async def log_request(self, operation: Operation, error: str = "") -> None:
        token = self._input.token
        policies = await self._identity_policies(token) if token and token.entity_id else []
        self._input = replace(self._input, operation=operation.value, identity_policies=policies)
        try:
            await self._broker.log_request(self._input, error)
        except AuditFailedError:
            self._refused = True
            raise
        self._logged = True

    async def responded(self, response: Response) -> None:
        if not self._logged:
            await self.log_request(self._input.request.operation)
        await self._broker.log_response(self._input, response)

    async def failed(self, error: Exception) -> None:
        if self._refused:
            return  # nothing could record the request; there is nothing to add
        text = error_text(error)
        if not self._logged:
            await self.log_request(self._input.request.operation, text)
        await self._broker.log_response(self._input, None, text)

    async def forwarded(self, reason: Exception) -> None:
        """This node hands the request to the active node, which answers (and
        audits) it: the response entry here keeps why and says ``forwarded``."""
        self._input = replace(self._input, forwarded=True)
        await self.failed(reason)
