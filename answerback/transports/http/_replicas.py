"""The replica liveness seam: which server processes are alive.

When the process that owns a call dies (``kill -9``, a crashed pod) nobody is left to
answer it, and its client would wait for ever. Each process therefore beats every
``heartbeat_seconds``, and counts as dead after missing ``MISSED_BEATS`` beats in a row
(one late beat on a busy machine must not kill a live replica's calls); any other
process serving the call's stream then ends the call with an error, declares the
process stopped, and late answers to its questions are refused from then on. A process
that only missed beats (its event loop blocked) and beats again is alive again.
"""

from __future__ import annotations

from typing import Protocol

MISSED_BEATS = 3
"""A replica silent for this many heartbeats counts as dead."""


class ReplicaLiveness(Protocol):
    """This process's heartbeat, and whether another process still beats."""

    @property
    def heartbeat_seconds(self) -> float:
        """The time between two beats of a live process."""
        ...

    async def beat(self, replica_id: str) -> bool:
        """Say this process is alive (called every ``heartbeat_seconds``); ``False`` if
        its last beat no longer stood (the first beat, a lapse, a declared stop, or a
        shared state that lost its data), so what it keeps there may be gone."""
        ...

    async def is_alive(self, replica_id: str) -> bool:
        """Whether ``replica_id`` has beaten within the last ``MISSED_BEATS`` heartbeats."""
        ...

    async def stop(self, replica_id: str) -> None:
        """This process is shutting down cleanly: it stops beating now."""
        ...

    async def declare_stopped(self, replica_id: str) -> None:
        """``replica_id`` missed its beats and a call of its was ended for it: refuse
        answers to its questions until it beats again (a beat already back wins)."""
        ...


class InMemoryReplicas:
    """One process, alive while it runs: the default."""

    def __init__(self, replica_id: str, heartbeat_seconds: float = 1.0) -> None:
        self._alive = {replica_id}
        self._heartbeat_seconds = heartbeat_seconds

    @property
    def heartbeat_seconds(self) -> float:
        return self._heartbeat_seconds

    async def beat(self, replica_id: str) -> bool:
        kept = replica_id in self._alive
        self._alive.add(replica_id)
        return kept

    async def is_alive(self, replica_id: str) -> bool:
        return replica_id in self._alive

    async def stop(self, replica_id: str) -> None:
        self._alive.discard(replica_id)

    async def declare_stopped(self, replica_id: str) -> None:
        self._alive.discard(replica_id)
