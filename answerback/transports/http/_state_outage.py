"""One replica's view of whether its shared state (Redis) answers, for the operator's log.

While Redis is down every part of a replica fails on it: each refused request, each
heartbeat, the inbox. Logged as they come, that is one line per request plus a few a
second, in several phrasings of one cause, and nothing when it ends. Here an outage is
logged once, with what to do, the requests refused meanwhile are counted, and its end
is logged with how long it lasted and how many were refused.

What the replica could not store meanwhile beside a request (an event of a stream, the
record of a question or of a call's end, the forgetting of a stream's events) is counted
too, by kind, into the end's line: logged one by one, an outage under load wrote a line
per event. Outside a known outage each is logged as it happens.

The end is logged only once what failed works again. A request that used the state
without error ends any outage. A heartbeat ends one only if Redis was unreachable or
full, which its own commands meet too; Redis refusing a command (an ACL without it, a
key of the wrong type) may spare the heartbeat and fail every request, and a heartbeat
ending that would say "answers again" between each two refusals.

Health checks do not read it, on purpose: every replica shares one Redis, so an outage
would fail every replica's check at once, and the load balancer would then refuse the
2026-07-28 calls too, which need no shared state unless they are single-use.
"""

from __future__ import annotations

import logging

import anyio

from answerback.transports.http._state import StateFull, StateRefused, StateUnavailable

logger = logging.getLogger("answerback.http")

_BACK_AGAIN: dict[type[StateUnavailable], str] = {
    StateUnavailable: "answers",
    StateFull: "has room",
    StateRefused: "serves requests",
}
"""What the end of each kind of outage says the shared state does again."""


class StateOutage:
    """Whether the shared state failed last time this replica used it, since when, why,
    and how many requests were refused meanwhile."""

    def __init__(self) -> None:
        self.since: float | None = None
        """When the outage began (the event loop's clock), or ``None`` while none is."""
        self.cause: type[StateUnavailable] = StateUnavailable
        """What kind of failure the outage is: unreachable (``StateUnavailable``),
        full (``StateFull``) or refusing a command (``StateRefused``)."""
        self.refused = 0
        self.unsaved: dict[str, int] = {}
        """What could not be stored meanwhile, by kind (``"events not stored"``...)."""

    def failed(self, error: StateUnavailable) -> None:
        """The shared state failed on some use (a request, a heartbeat, the inbox): the
        first failure of an outage is logged, with what to do, and so is a change of
        kind (unreachable, full, refusing a command)."""
        cause = type(error) if isinstance(error, StateFull | StateRefused) else StateUnavailable
        if self.since is not None and cause is self.cause:
            return
        if self.since is None:
            self.since = anyio.current_time()
        self.cause = cause
        if isinstance(error, StateFull):
            logger.warning(
                "the shared server state is full: %s. Requests that store anything get "
                "503 until it has room; the end of this is logged.",
                error,
            )
        elif isinstance(error, StateRefused):
            logger.warning(
                "Redis refused: %s (Redis at %s). Requests that need that command get 503 "
                "until Redis allows it: check the ACL of the user in the url, and that no "
                "other program writes under answerback's keys. The end of this is logged.",
                error.reply,
                error.where,
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

    def counts(self, unsaved: str) -> bool:
        """Something of kind ``unsaved`` (such as ``"events not stored"``) could not be
        stored: ``True`` if an outage is under way, and it is counted into the end's
        line; ``False`` if none is known, and the caller logs it itself."""
        if self.since is None:
            return False
        self.unsaved[unsaved] = self.unsaved.get(unsaved, 0) + 1
        return True

    def beat(self) -> None:
        """A heartbeat reached the shared state: the end of an outage the heartbeat
        would have met too (unreachable, full), not of Redis refusing a command."""
        if self.since is not None and self.cause is not StateRefused:
            self.reached()

    def reached(self) -> None:
        """The shared state answered a request (or, through ``beat``, a heartbeat): the
        end of an outage, if one was under way, is logged with how long it lasted and
        how many requests it refused. Callers on a request's path test ``since`` first:
        while no outage is under way, that one read is all a request pays."""
        if self.since is None:
            return
        lasted = anyio.current_time() - self.since
        unsaved = "".join(f", {what}: {count}" for what, count in self.unsaved.items())
        logger.warning(
            "the shared server state %s again after %.1f s (requests refused meanwhile: %d%s)",
            _BACK_AGAIN[self.cause],
            lasted,
            self.refused,
            unsaved,
        )
        self.since = None
        self.cause = StateUnavailable
        self.refused = 0
        self.unsaved = {}
