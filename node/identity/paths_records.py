"""The by-id (and by-name) read, write, delete and list paths one identity record kind shares."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Generic, TypeVar

from node.framework import Field, FieldData, Path
from node.identity.records import Record
from node.identity.scope import Scope
from node.identity.state import IdentityState
from node.logical.request import Operation, Request
from node.logical.response import Response
from sdk.errors import UnsupportedPathError

__all__ = ["RecordPaths"]

R = TypeVar("R", bound=Record)


class RecordPaths(ABC, Generic[R]):
    """``<kind>``, ``<kind>/id/*`` and, for named kinds, ``<kind>/name/*``.

    Subclasses say how to reach, show, write and delete their records; a
    missing record reads as a 404 and lists of none as a 404, as in the reference.
    """

    kind: ClassVar[str]  # the path prefix: "entity", "group-alias", ...
    noun: ClassVar[str]  # "an entity", "a group alias", ...
    fields: ClassVar[Mapping[str, Field]]
    write_summary: ClassVar[str]
    list_summary: ClassVar[str]
    named: ClassVar[bool] = False  # whether records are also reachable by name

    def __init__(self, scope: Scope) -> None:
        self._scope = scope

    def paths(self) -> list[Path]:
        one = {
            Operation.READ: self._read,
            Operation.UPDATE: self._write,
            Operation.DELETE: self._delete,
        }
        by_id = f"Read, update or delete {self.noun} by id."
        paths = [
            Path(self.kind, {Operation.UPDATE: self._write}, self.fields, self.write_summary),
            Path(f"{self.kind}/id/?", {Operation.LIST: self._list_ids}, summary=self.list_summary),
        ]
        if self.named:
            paths.append(
                Path(
                    f"{self.kind}/name/?",
                    {Operation.LIST: self._list_names},
                    summary=f"List {self.kind} names.",
                )
            )
        paths.append(Path(rf"{self.kind}/id/(?P<id>[^/]+)", one, self.fields, by_id))
        if self.named:
            by_name = f"Read, create or update, or delete {self.noun} by name."
            paths.append(Path(rf"{self.kind}/name/(?P<name>.+)", one, self.fields, by_name))
        return paths

    # -- what a kind provides --------------------------------------------------

    @abstractmethod
    def _get(self, state: IdentityState, record_id: str) -> R | None: ...

    def _get_by_name(self, state: IdentityState, name: str) -> R | None:
        return None

    @abstractmethod
    def _records(self, state: IdentityState) -> Iterable[R]: ...

    @abstractmethod
    async def _view(self, state: IdentityState, record: R) -> dict[str, Any]: ...

    @abstractmethod
    async def _info(self, state: IdentityState, record: R) -> dict[str, Any]: ...

    @abstractmethod
    async def _write(self, request: Request, data: FieldData) -> Response | None: ...

    @abstractmethod
    async def _remove(self, record: R) -> None: ...

    # -- shared handlers -------------------------------------------------------

    def _find(self, state: IdentityState, data: FieldData) -> R | None:
        if not self.named or data.given("id"):
            return self._get(state, data.get("id"))
        return self._get_by_name(state, data.get("name") or "")

    async def _read(self, request: Request, data: FieldData) -> Response:
        state = await self._scope.store.state()
        record = self._find(state, data)
        if record is None:
            raise UnsupportedPathError()
        return Response(data=await self._view(state, record))

    async def _delete(self, request: Request, data: FieldData) -> None:
        record = self._find(await self._scope.store.state(), data)
        if record is not None:
            await self._remove(record)

    async def _list_ids(self, request: Request, data: FieldData) -> Response:
        return await self._list(by_name=False)

    async def _list_names(self, request: Request, data: FieldData) -> Response:
        return await self._list(by_name=True)

    async def _list(self, *, by_name: bool) -> Response:
        state = await self._scope.store.state()
        found = sorted(self._records(state), key=lambda r: r.name if by_name else r.id)
        if not found:
            raise UnsupportedPathError()
        # Keyed by id for both listings, as the reference does.
        info = {r.id: await self._info(state, r) for r in found}
        return Response(
            data={"keys": [r.name if by_name else r.id for r in found], "key_info": info}
        )
