"""One replica's view of whether its shared state (Redis) answers, for the operator's log.

While Redis is down every part of a replica fails on it: each refused request, each
heartbeat, the inbox. Logged as they come, that is one line per request plus a few a
second, in several phrasings of one cause, and nothing when it ends. Here an outage is
logged once, with what to do, the requests refused meanwhile are counted, and its end
is logged with how long it lasted and how many were refused.

Health checks do not read it, on purpose: every replica shares one Redis, so an outage
would fail every replica's check at once, and the load balancer would then refuse the
2026-07-28 calls too, which need no shared state unless they are single-use.
"""

from __future__ import annotations

import logging

import anyio

from answerback.transports.http._state import StateFull, StateUnavailable

logger = logging.getLogger("answerback.http")


class StateOutage:
    """Whether the shared state failed last time this replica used it, since when, and
    how many requests were refused meanwhile."""

    def __init__(self) -> None:
        self.since: float | None = None
        """When the outage began (the event loop's clock), or ``None`` while none is."""
        self.full = False
        """Whether Redis refuses for want of memory, rather than not answering."""
        self.refused = 0

    def failed(self, error: StateUnavailable) -> None:
        """The shared state failed on some use (a request, a heartbeat, the inbox): the
        first failure of an outage is logged, with what to do, and so is a change from
        unreachable to full or back."""
        full = isinstance(error, StateFull)
        if self.since is not None and full == self.full:
            return
        if self.since is None:
            self.since = anyio.current_time()
        self.full = full
        if full:
            logger.warning(
                "the shared server state is full: %s. Requests that store anything get "
                "503 until it has room; the end of this is logged.",
                error,
            )
        else:
            logger.warning(
                "the shared server state is unavailable: %s. Requests that need it get "
                "503 until it answers again: check that Redis is up at that address and "
                "that this server process can reach it. The end of this is logged.",
                error,
            )

    def refuse(self, error: StateUnavailable) -> None:
        """A request was refused (503) for ``error``: counted, not logged each."""
        self.failed(error)
        self.refused += 1

    def reached(self) -> None:
        """The shared state answered: the end of an outage, if one was under way, is
        logged with how long it lasted and how many requests it refused."""
        if self.since is None:
            return
        lasted = anyio.current_time() - self.since
        logger.warning(
            "the shared server state %s again after %.1f s (requests refused meanwhile: %d)",
            "has room" if self.full else "answers",
            lasted,
            self.refused,
        )
        self.since = None
        self.full = False
        self.refused = 0
