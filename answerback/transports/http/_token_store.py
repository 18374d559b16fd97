"""Where the OAuth client keeps what it must not ask for twice.

Tokens (per protected resource) and client registrations (per authorization server)
outlive one connection: a person who logged in yesterday should not log in again today,
and a dynamically registered client should not register anew on every start. The client
talks to storage only through ``TokenStore``, a small async key/value protocol over
JSON-able records, so a program picks memory (the default), a file, the system keyring,
or its own database without the OAuth code knowing which.
"""

from __future__ import annotations

import copy
from typing import Any, Protocol, runtime_checkable


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


class InMemoryTokenStore:
    """Records kept for the life of this object: nothing survives the process.

    Values are copied in and out, so a caller that edits a record it got back does not
    change what is stored (a file or keyring store behaves the same way by nature).
    """

    def __init__(self) -> None:
        self._records: dict[str, dict[str, Any]] = {}

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
