"""The client token, checked before the body is read and before the path is routed.

Without a live token a request reaches only the paths its mount declares
unauthenticated (logins, and the sealed-safe ``sys`` endpoints served by
``api/routes_sys.py``): anything else is ``403`` at once, whether or not the
mount or namespace exists (so a ``404`` cannot tell a caller what is mounted),
and its body is never read. A request with a live token may send a body up to
the listener's ``max_request_size``; every other body is held to
:data:`UNAUTHENTICATED_BODY_LIMIT`, so what an unauthenticated caller can make
the node parse is small (docs/security.md, "Event-loop stalls"). The pipeline
checks the token again, in full (bound CIDRs, namespace reach, ACL).
"""

from __future__ import annotations

from aiohttp import web

from api.keys import CORE, REQUEST_ID
from api.translate import BODY_LIMIT, client_request, client_token, header
from node.logical.request import Operation
from sdk.errors import CofferError, PermissionDeniedError

__all__ = ["authenticate_early"]

#: Where the client token may be the wrapping token itself; the pipeline decides
#: (a spent wrapping token is a 400 there, not a 403).
_UNWRAP_PATHS = frozenset({"sys/wrapping/unwrap", "sys/wrapping/rewrap"})


async def authenticate_early(request: web.Request, path: str, operation: Operation) -> None:
    """Raise ``403`` for a request no unauthenticated caller may make; else note how
    large a body it may send. A refusal is audited (without the unread body)."""
    try:
        await _authenticate_early(request, path, operation)
    except PermissionDeniedError as denied:
        refused = client_request(request, operation, path, request.get(REQUEST_ID, ""))
        await request.app[CORE].audit.log_refused(refused, denied)
        raise


async def _authenticate_early(request: web.Request, path: str, operation: Operation) -> None:
    core = request.app[CORE]
    if core.sealed:
        return  # the pipeline answers 503; nothing is routed while sealed
    token = client_token(request)
    if token and await core.tokens.lookup(token) is not None:
        request[BODY_LIMIT] = request.client_max_size
        return
    if operation is Operation.HELP:
        raise PermissionDeniedError()
    try:
        namespace, relative = core.namespaces.resolve(header(request, "Namespace"), path)
    except CofferError:
        raise PermissionDeniedError() from None
    if token and relative in _UNWRAP_PATHS:
        return
    route = core.router.match(namespace.path + relative)
    if route is None or route.mount.namespace_id != namespace.id:
        raise PermissionDeniedError()
    if not route.backend.is_unauthenticated(route.relative_path):
        raise PermissionDeniedError()
