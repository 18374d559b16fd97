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
"""

from __future__ import annotations

REQUEST_BYTES_IN_FLIGHT = 16 * 1024 * 1024
"""The bytes of requests answered at once, by default: four of the HTTP server's largest
bodies (about 600 MiB held, were they all ``[{}, {}, ...]``), or some hundred thousand
ordinary calls."""


class RequestBytes:
    """A budget of request bytes, held by the requests being answered."""

    __slots__ = ("held", "limit")

    def __init__(self, limit: int = REQUEST_BYTES_IN_FLIGHT) -> None:
        if limit < 1:
            raise ValueError(f"a budget of request bytes must be at least 1, not {limit}")
        self.limit = limit
        self.held = 0
        """The sizes of the requests being answered, added up."""

    def admits(self, size: int) -> bool:
        """Whether a request of ``size`` bytes may be answered now. One always may while
        nothing is held: a request too big on its own is for the transport to refuse."""
        return self.held + size <= self.limit or self.held == 0
