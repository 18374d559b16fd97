"""How much a peer's requests may weigh while they are answered, counted in bytes.

``REQUESTS_IN_FLIGHT`` bounds how many requests a connection answers at once; this bounds
what they hold. A request keeps its parsed message until it is answered, and parsed JSON
takes up to some 25 times the room of its text (``[{}, {}, ...]`` is a dict per three
bytes), so 4,096 requests of 4 MiB each, sent to a tool that waits, would hold hundreds
of gigabytes. A transport records each message's size on its envelope
(``Envelope.size``), and the endpoint holds that much of its budget until the request is
answered. A budget may be shared: the HTTP app gives one to every connection it serves,
sessions and 2026-07-28 requests alike, so that the server as a whole holds a bounded
weight of requests however many sessions a client opens.

A shared budget is also one that a single caller could fill, with a few large requests
to a tool that waits, so that everyone else is refused. When the transport knows who
sent a request (``Envelope.holder``: the HTTP app's authenticated principal), that
holder may hold only its ``share`` of the budget. Callers the transport cannot tell
apart (no authentication: one address may be a whole office, or a load balancer) share
the budget as one.
"""

from __future__ import annotations

REQUEST_BYTES_IN_FLIGHT = 16 * 1024 * 1024
"""The bytes of requests answered at once, by default: four of the HTTP server's largest
bodies (about 600 MiB held, were they all ``[{}, {}, ...]``), or some hundred thousand
ordinary calls."""


class RequestBytes:
    """A budget of request bytes, held by the requests being answered, with an optional
    ``share`` that no one holder may exceed."""

    __slots__ = ("_held_by", "held", "limit", "share")

    def __init__(self, limit: int = REQUEST_BYTES_IN_FLIGHT, *, share: int | None = None) -> None:
        for name, value in (("budget", limit), ("share", share)):
            if value is not None and value < 1:
                raise ValueError(f"a {name} of request bytes must be at least 1, not {value}")
        self.limit = limit
        self.share = share
        self.held = 0
        """The sizes of the requests being answered, added up."""
        self._held_by: dict[str, int] = {}
        """What each holder holds, for those holding anything (only with a ``share``)."""

    def admits(self, size: int, holder: str | None = None) -> bool:
        """Whether a request of ``size`` bytes may be answered now. One always may while
        nothing is held (by its holder, and in all): a request too big on its own is for
        the transport to refuse."""
        if self.held + size > self.limit and self.held != 0:
            return False
        return self.holder_admits(size, holder)

    def holder_admits(self, size: int, holder: str | None) -> bool:
        """Whether ``holder``'s share leaves room for ``size`` more bytes."""
        if holder is None or self.share is None:
            return True
        mine = self._held_by.get(holder, 0)
        return mine + size <= self.share or mine == 0

    def held_by(self, holder: str) -> int:
        """The bytes ``holder``'s requests being answered hold (0 without a ``share``)."""
        return self._held_by.get(holder, 0)

    def take(self, size: int, holder: str | None = None) -> None:
        """Hold ``size`` bytes for a request that is being answered from now on."""
        self.held += size
        if holder is not None and self.share is not None:
            self._held_by[holder] = self._held_by.get(holder, 0) + size

    def give_back(self, size: int, holder: str | None = None) -> None:
        """Release what ``take`` held, once the request is answered. A holder that holds
        nothing more is forgotten, so many callers over a long life leave nothing."""
        self.held -= size
        if holder is not None and self.share is not None:
            left = self._held_by.pop(holder, 0) - size
            if left > 0:
                self._held_by[holder] = left
