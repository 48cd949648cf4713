"""The request pipeline, in one place and in order.

sealed check → namespace (header + path) → route to mount → help → token →
namespace reach → existence check (create or update) → ACL (and sudo) → audit
the request (``node.audit``: refused if no device records it) → use count →
backend → login completion → last-use revocation → response wrapping → audit
the response (or the error, denials included).

On a standby the whole request runs read-only (``node.barrier.readonly``): a
write it tries is refused by storage, nothing is applied here, and the
request goes to the active node whole (``PleaseForwardError``, which the HTTP
edge turns into a forward), as Vault answers ``ErrReadOnly``.
"""

from __future__ import annotations

import ipaddress
import re
import time
from typing import TYPE_CHECKING

from node.barrier.readonly import read_only
from node.cluster.errors import PleaseForwardError
from node.core.wrapping import INVALID_WRAPPING_TOKEN
from node.logical.request import Operation, Request, RequestAuth
from node.logical.response import Response
from node.tokens.entry import TokenEntry
from sdk.errors import (
    CofferError,
    InvalidRequestError,
    PermissionDeniedError,
    SealedError,
    UnsupportedPathError,
)

if TYPE_CHECKING:
    from node.audit import Trail
    from node.core.core import Core
    from node.namespaces.model import Namespace
    from node.routing.router import RouteMatch

__all__ = ["Pipeline", "request_auth"]

#: Paths where the client token may itself be the wrapping token to act on.
_UNWRAP_PATHS = frozenset({"sys/wrapping/unwrap", "sys/wrapping/rewrap"})


def request_auth(entry: TokenEntry) -> RequestAuth:
    return RequestAuth(
        token_key=entry.key,
        accessor=entry.accessor,
        policies=tuple(entry.policies),
        display_name=entry.display_name,
        entity_id=entry.entity_id,
        cubbyhole_id=entry.cubbyhole_id,
        token_type=entry.type,
        num_uses=entry.num_uses,
        namespace_id=entry.namespace_id,
    )


def _token_gone(request: Request, relative: str) -> CofferError:
    """The error for an unknown, expired or used-up client token.

    Unwrapping with the wrapping token as the client token answers as the
    reference does: a spent or expired wrapping token is an invalid wrapping
    token (400), not a permission problem. ``relative`` is the namespace-relative path.
    """
    if (
        request.client_token
        and relative in _UNWRAP_PATHS
        and not str(request.data.get("token") or "").strip()
    ):
        return InvalidRequestError(INVALID_WRAPPING_TOKEN)
    return PermissionDeniedError()


def _routed(
    request: Request,
    route: RouteMatch,
    namespace: Namespace,
    operation: Operation,
    auth: RequestAuth | None,
    has_sudo: bool,
) -> Request:
    """The request the backend gets: mount-relative path, resolved namespace, caller."""
    return request.routed(
        operation=operation,
        path=route.relative_path,
        namespace=namespace.path,
        namespace_id=namespace.id,
        mount_point=route.mount.route_path,
        mount_accessor=route.mount.accessor,
        auth=auth,
        has_sudo=has_sudo,
    )


def _address_in(address: str, cidrs: list[str]) -> bool:
    """Whether the client address is inside one of a token's bound CIDR blocks."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False  # unknown (e.g. a unix socket): a bound token cannot be used
    return any(ip in ipaddress.ip_network(cidr, strict=False) for cidr in cidrs)


_MOUNT_CHANGE = re.compile(r"^sys/(?P<table>mounts|auth)/(?P<path>.+?)(?P<tune>/tune)?$")


def _local_mount(core: Core, request: Request) -> bool:
    """Enabling a ``local`` mount, or changing one that is local: on a performance
    secondary such a mount is the secondary's own."""
    found = _MOUNT_CHANGE.match(request.path)
    if found is None:
        return False
    if request.data.get("local") is True:
        return True
    try:
        namespace, _ = core.namespaces.resolve(request.namespace, "")
    except CofferError:
        return False
    prefix = "auth/" if found["table"] == "auth" else ""
    route = core.router.match(f"{namespace.path}{prefix}{found['path'].strip('/')}/")
    return route is not None and route.mount.local and route.relative_path == ""


class Pipeline:
    def __init__(self, core: Core) -> None:
        self._core = core
        #: The last entry's ``RequestAuth``: entries are frozen and shared while their
        #: stored bytes are unchanged, so the same object gives an equal value.
        self._last_auth: tuple[TokenEntry, RequestAuth] | None = None

    def _request_auth(self, entry: TokenEntry) -> RequestAuth:
        last = self._last_auth
        if last is not None and last[0] is entry:
            return last[1]
        auth = request_auth(entry)
        self._last_auth = (entry, auth)
        return auth

    async def handle(self, request: Request) -> Response:
        # Audit: the request is logged once authorised (``_handle``), its
        # response or error here; with devices enabled and none recording, refused.
        trail = self._core.audit.trail(request)
        try:
            response = await self._handle_here(request, trail)
        except PleaseForwardError as reason:
            await trail.forwarded(reason)
            raise
        except Exception as error:
            await trail.failed(error)
            raise
        await trail.responded(response)
        return response

    async def _handle_here(self, request: Request, trail: Trail) -> Response:
        if not self._core.is_standby:
            if self._core.replication.is_perf_secondary:
                return await self._handle_on_perf_secondary(request, trail)
            return await self._handle(request, trail)
        with read_only() as scope:
            try:
                response = await self._handle(request, trail)
            except Exception:
                # Whatever the refusal became on its way up (or if it was
                # swallowed, below): the request wrote, the active node answers.
                if scope.refused:
                    raise PleaseForwardError() from None
                raise
        if scope.refused:
            raise PleaseForwardError()
        return response

    async def _handle_on_perf_secondary(self, request: Request, trail: Trail) -> Response:
        """Local data (tokens, local mounts) is written here; a request that writes
        replicated data goes, authorised here, to the primary's active node
        (``node.replication``), which answers once the write has come back.
        Logins stay local: their tokens are this cluster's own (their entity is made
        on the primary, ``LoginCompleter``)."""
        replication = self._core.replication
        try:
            _, relative = self._core.namespaces.resolve(request.namespace, request.path)
        except CofferError:
            relative = request.path  # _handle answers it
        if relative.startswith(("auth/", "sys/replication/")) or _local_mount(self._core, request):
            return await self._handle(request, trail)
        with read_only(allowed=replication.writable_here) as scope:
            try:
                response = await self._handle(request, trail)
            except Exception:
                if not scope.refused:
                    raise
            else:
                if not scope.refused:
                    return response
        return await replication.forward(request)

    async def handle_forwarded(self, request: Request) -> Response:
        """A request a performance secondary authorised (token, ACL) and forwarded over
        its mutual-TLS link: routed and run here, without a token of this cluster."""
        core = self._core
        if core.sealed:
            raise SealedError()
        namespace, relative = core.namespaces.resolve(request.namespace, request.path)
        route = core.router.match(namespace.path + relative)
        if route is None or route.mount.namespace_id != namespace.id:
            raise UnsupportedPathError(f"no handler for route {relative!r}; route entry not found")
        operation = request.operation
        if operation is Operation.UPDATE:
            probe = _routed(request, route, namespace, operation, None, True)
            if not await route.backend.exists(probe):
                operation = Operation.CREATE
        routed = _routed(request, route, namespace, operation, None, True)
        return await route.backend.handle(routed) or Response()

    async def _handle(self, request: Request, trail: Trail) -> Response:
        core = self._core
        if core.sealed:
            raise SealedError()
        namespace, relative = core.namespaces.resolve(request.namespace, request.path)
        # The absolute path is what ACLs and wrapping see; the backend gets the
        # mount-relative one in the routed request.
        absolute = namespace.path + relative
        route = core.router.match(absolute)
        if route is None or route.mount.namespace_id != namespace.id:
            raise UnsupportedPathError(f"no handler for route {relative!r}; route entry not found")
        trail.at(namespace, relative, route.mount)
        backend = route.backend
        operation = request.operation
        if operation is Operation.HELP:
            await self._authenticate(request, namespace.id, relative)
            return backend.help(_routed(request, route, namespace, operation, None, False))

        unauthenticated = backend.is_unauthenticated(route.relative_path)
        entry: TokenEntry | None = None
        if not unauthenticated:
            entry = await self._authenticate(request, namespace.id, relative)
        elif request.client_token:
            entry = await core.tokens.lookup(request.client_token)
        trail.caller(entry)
        auth = self._request_auth(entry) if entry is not None else None
        probe: Request | None = None
        if operation is Operation.UPDATE:
            probe = _routed(request, route, namespace, operation, auth, False)
            if not await backend.exists(probe):
                operation = Operation.CREATE
        has_sudo = False
        if not unauthenticated:
            assert entry is not None
            has_sudo = await self._authorize(
                entry, operation, absolute, request, backend.needs_sudo(route.relative_path)
            )
        # Authorised, and nothing done yet (not even a token use): fail closed here.
        await trail.log_request(operation)
        if not unauthenticated:
            assert entry is not None
            try:
                entry = await core.tokens.use(entry)
            except PermissionDeniedError:
                raise _token_gone(request, relative) from None
        # Built once with its final fields (routing used to derive it field by field);
        # the existence probe is that request already when its fields came out equal
        # (an update of an existing key by a caller without sudo): frozen, so shared.
        if probe is not None and probe.operation is operation and not has_sudo:
            routed = probe
        else:
            routed = _routed(request, route, namespace, operation, auth, has_sudo)

        started = time.perf_counter()
        try:
            response = await backend.handle(routed) or Response()
            if response.login is not None:
                response = await core.logins.complete(response, routed, route.mount)
        finally:
            try:
                if entry is not None and entry.num_uses == -1:
                    await core.tokens.revoke_tree(entry)
            finally:
                core.metrics.observe_operation(operation.value, time.perf_counter() - started)
        if request.wrap_ttl and not response.is_empty and response.status is None:
            response = await core.wrapping.wrap(response, request.wrap_ttl, absolute)
        return response

    async def _authenticate(self, request: Request, namespace_id: str, relative: str) -> TokenEntry:
        """The client token's entry, if it may act in the resolved namespace from here."""
        token = await self._core.tokens.lookup(request.client_token)
        if token is None:
            raise _token_gone(request, relative)
        if token.bound_cidrs and not _address_in(request.remote_addr, token.bound_cidrs):
            raise PermissionDeniedError()
        # A token acts in its own namespace and below, never in a sibling or ancestor.
        home = self._core.namespaces.by_id(token.namespace_id)
        target = self._core.namespaces.by_id(namespace_id)
        if home is None or target is None or not home.contains(target):
            raise PermissionDeniedError()
        identity = self._core.identity
        if (
            token.entity_id
            and identity is not None
            and await identity.is_disabled(token.entity_id, token.namespace_id)
        ):
            raise PermissionDeniedError()
        return token

    async def _authorize(
        self,
        entry: TokenEntry,
        operation: Operation,
        absolute: str,
        request: Request,
        needs_sudo: bool,
    ) -> bool:
        """Whether the token's policies allow the operation; raises if they do not.

        Returns whether they grant ``sudo`` on the path.
        """
        acl = await self._core.access.acl_for(entry)
        decision = acl.allow(operation.value, absolute, request.data, request.wrap_ttl)
        if not decision.allowed or (needs_sudo and not decision.sudo):
            raise PermissionDeniedError()
        return decision.sudo
