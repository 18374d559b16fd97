"""``Attention``: a person busy answering, which stops request timers on many connections.

A request's timeout measures the peer's silence. While a person answers a question the
peer asked, the endpoint already holds that request's timer (the peer waits on us, not
we on it). A host connected to several servers has one person for all of them: while
they answer server B, or while server A's question waits behind B's, a call to A must
not time out either, since A may be waiting for that very person. Every endpoint given
the same ``Attention`` holds its request timers while it is held, and restarts them in
full once it is let go.

A person can also be needed in the middle of sending a request: an OAuth login in the
browser runs inside the HTTP request that met the 401. ``SharesAttention`` is what such
a step offers, so that the connection's timers stand still while the person logs in.
"""

from __future__ import annotations

import math
import time
from collections.abc import Generator
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol, runtime_checkable


class Attention:
    """Whether a person is busy answering; shared by the endpoints it should pause."""

    __slots__ = ("_holders", "released_at")

    def __init__(self) -> None:
        self._holders = 0
        self.released_at = -math.inf
        """When the person was last let go (``time.monotonic()``); timers restart there."""

    @property
    def held(self) -> bool:
        """Whether anyone holds the person now (timers stand still)."""
        return self._holders > 0

    @contextmanager
    def holding(self) -> Generator[None]:
        """Hold the person for the block: from when a question is asked (queued or
        shown) until it is answered or withdrawn. Holds nest and overlap."""
        self._holders += 1
        try:
            yield
        finally:
            self._holders -= 1
            if not self._holders:
                self.released_at = time.monotonic()


@runtime_checkable
class SharesAttention(Protocol):
    """A step on a connection's path that may wait for a person mid-request (``OAuth``,
    while someone logs in); ``Client`` hands it its endpoint's attention."""

    def sharing_attention(self, attention: Attention) -> AbstractContextManager[None]:
        """Until the block ends, hold ``attention`` whenever waiting for the person."""
        ...
