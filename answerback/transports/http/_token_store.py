"""Where the OAuth client keeps what it must not ask for twice.

Tokens (per protected resource) and client registrations (per authorization server)
outlive one connection: a person who logged in yesterday should not log in again today,
and a dynamically registered client should not register anew on every start. The client
talks to storage only through ``TokenStore``, a small async key/value protocol over
JSON-able records, so a program picks memory (the default), a file, the system keyring,
or its own database without the OAuth code knowing which.

A store may also offer ``lock_record(key)`` (``LockingTokenStore``): programs sharing it
then refresh a token one at a time, which a rotating refresh token (each works once) needs.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncGenerator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol, runtime_checkable

import anyio
import anyio.lowlevel


@runtime_checkable
class TokenStore(Protocol):
    """JSON-able records by key.

    The client keeps tokens per resource and registrations per issuer in it.
    """

    async def get(self, key: str) -> dict[str, Any] | None:
        """The record stored under ``key``, or ``None`` when there is none."""
        ...

    async def set(self, key: str, value: dict[str, Any]) -> None:
        """Store ``value`` under ``key``, replacing what was there."""
        ...

    async def delete(self, key: str) -> None:
        """Forget ``key``; forgetting a key that is not there is not an error."""
        ...


@runtime_checkable
class LockingTokenStore(TokenStore, Protocol):
    """A ``TokenStore`` that can also hold one key exclusively for a while.

    The OAuth client refreshes a token inside ``lock_record(key)``: it reads the record
    again, spends the refresh token and saves the new tokens before anyone else sharing
    the store may do the same. Without it, two programs refreshing at the same instant
    spend one refresh token twice, and a server that rotates them refuses the second.
    The name is one no store has by accident: a store's own ``self.lock =
    asyncio.Lock()`` must not be taken for this.
    """

    def lock_record(self, key: str) -> AbstractAsyncContextManager[None]:
        """Until the block ends, no other holder of ``key``'s lock (task, store object
        or program sharing the records) gets past its own ``lock_record(key)``. ``get``,
        ``set`` and ``delete`` must keep working inside the block."""
        ...


class KeyLocks:
    """One ``anyio.Lock`` per key, for the tasks of one process sharing one object.

    A lock is made per event loop library (anyio's lock belongs to the library it was
    first used with), so one object serves an asyncio program and a trio one alike.
    """

    def __init__(self) -> None:
        self._locks: dict[str, tuple[object, anyio.Lock]] = {}

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncGenerator[None]:
        """Hold ``key`` until the block ends, waiting for the task holding it first."""
        library: object = type(anyio.lowlevel.current_token().native_token)
        held = self._locks.get(key)
        if held is None or held[0] != library:
            held = self._locks[key] = (library, anyio.Lock())
        async with held[1]:
            yield


class InMemoryTokenStore:
    """Records kept for the life of this object: nothing survives the process.

    Values are copied in and out, so a caller that edits a record it got back does not
    change what is stored (a file or keyring store behaves the same way by nature).
    """

    def __init__(self) -> None:
        self._records: dict[str, dict[str, Any]] = {}
        self._key_locks = KeyLocks()

    async def get(self, key: str) -> dict[str, Any] | None:
        """A copy of the record stored under ``key``, or ``None``."""
        record = self._records.get(key)
        return None if record is None else copy.deepcopy(record)

    async def set(self, key: str, value: dict[str, Any]) -> None:
        """Store a copy of ``value`` under ``key``."""
        self._records[key] = copy.deepcopy(value)

    async def delete(self, key: str) -> None:
        """Forget ``key`` (nothing happens if it is not there)."""
        self._records.pop(key, None)

    def lock_record(self, key: str) -> AbstractAsyncContextManager[None]:
        """Hold ``key`` until the block ends, among the tasks sharing this object (the
        only ones that can see its records)."""
        return self._key_locks.hold(key)
