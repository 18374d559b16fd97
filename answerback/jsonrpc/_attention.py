"""``Attention``: a person busy answering, which stops request timers on many connections.

A request's timeout measures the peer's silence. While a person answers a question the
peer asked, the endpoint already holds that request's timer (the peer waits on us, not
we on it). A host connected to several servers has one person for all of them: while
they answer server B, or while server A's question waits behind B's, a call to A must
not time out either, since A may be waiting for that very person. Every endpoint given
the same ``Attention`` holds its request timers while it is held, and restarts them in
full once it is let go.
"""

from __future__ import annotations

import math
import time
from collections.abc import Generator
from contextlib import contextmanager


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
