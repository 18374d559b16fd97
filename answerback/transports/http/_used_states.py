"""Which single-use ``requestState`` has been used: the record that refuses a replay.

Sealing stops a client from altering 2026-07-28 state, not from sending the same state
twice; a server whose rounds must not run twice on one answer (a payment confirmed
once) marks the state single-use, and the first retry that carries it claims it here.
A later one, on this replica or another, finds it claimed and is refused. Entries live
only until the state would have expired anyway, so the record stays small.
"""

from __future__ import annotations

import heapq
import time
from typing import Protocol


class UsedStates(Protocol):
    """Claims single-use state ids, each at most once until it expires."""

    async def claim(self, state_id: str, expires_at: float) -> bool:
        """``True`` the first time ``state_id`` is claimed; ``False`` after that, until
        ``expires_at`` (seconds since the epoch), when the state is dead anyway."""
        ...


class InMemoryUsedStates:
    """The record inside one process (the default): enough for one replica."""

    def __init__(self) -> None:
        self._used: dict[str, float] = {}
        self._expiries: list[tuple[float, str]] = []

    async def claim(self, state_id: str, expires_at: float) -> bool:
        """``True`` the first time; expired claims are forgotten as new ones arrive."""
        now = time.time()
        while self._expiries and self._expiries[0][0] < now:
            _, expired = heapq.heappop(self._expiries)
            del self._used[expired]
        if state_id in self._used:
            return False
        self._used[state_id] = expires_at
        heapq.heappush(self._expiries, (expires_at, state_id))
        return True
