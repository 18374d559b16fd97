"""One replica's view of whether its shared state (Redis) answers, for the operator's log.

While Redis is down every part of a replica fails on it: each refused request, each
heartbeat, the inbox. Logged as they come, that is one line per request plus a few a
second, in several phrasings of one cause, and nothing when it ends. Here an outage is
logged once, with what to do, the requests refused meanwhile are counted, and its end
is logged with how long it lasted and how many were refused.

What the replica could not store meanwhile beside a request (an event of a stream, the
record of a question or of a call's end, the forgetting of a stream's events) is counted
too, by kind, into the end's line: logged one by one, an outage under load wrote a line
per event. Such a failure is as good a sign of an outage as a refused request: the
first one begins it (logged, with its error), so none is logged on its own. A replica
that stops during an outage logs the counts then, as no end line will.

The end is logged only once what failed works again. A request that used the state
without error ends an outage that a request met, or that was Redis out of reach; one
that only what is stored beside requests met (Redis full, or refusing a command) ends
when the kind it kept from being stored is stored again, or, full, at a heartbeat. A
heartbeat ends one only if Redis was unreachable or full, which its own commands meet
too; Redis refusing a command (an ACL without it, a key of the wrong type) may spare the
heartbeat and fail every request, and a heartbeat ending that would say "answers again"
between each two refusals.

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
_STILL: dict[type[StateUnavailable], str] = {
    StateUnavailable: "is still unavailable",
    StateFull: "is still full",
    StateRefused: "still refuses a command",
}
"""What a replica stopping during each kind of outage says of the shared state."""

# The kinds of what a replica could not store beside a request, as its log names them.
EVENTS_NOT_STORED = "events not stored"
STREAMS_NOT_FORGOTTEN = "streams not forgotten"
QUESTIONS_NOT_RECORDED = "questions not recorded"
CALLS_NOT_CLOSED = "calls not closed"


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

    def count_unsaved(self, unsaved: str, error: StateUnavailable) -> None:
        """Something of kind ``unsaved`` (such as ``"events not stored"``) could not be
        stored for ``error``: counted into the end's line, the outage beginning with it
        if none was known."""
        self.failed(error)
        self.unsaved[unsaved] = self.unsaved.get(unsaved, 0) + 1

    def saved(self, kind: str) -> None:
        """Something of ``kind`` was stored: the end of an outage in which that kind
        could not be, whatever its cause (the command refused works again)."""
        if self.since is not None and kind in self.unsaved:
            self._end()

    def beat(self) -> None:
        """A heartbeat reached the shared state: the end of an outage the heartbeat
        would have met too (unreachable, full), not of Redis refusing a command."""
        if self.since is not None and self.cause is not StateRefused:
            self._end()

    def reached(self) -> None:
        """The shared state answered a request: the end of an outage, if one was under
        way, that a request met (one was refused) or that was Redis out of reach. Redis
        full, or refusing a command, that only what is stored beside requests met (an
        event, say) is another matter: a request may use only commands Redis still runs
        (a full Redis still runs those that store nothing new), so its success says
        nothing of it, and would log an end between each two failures; ``saved`` or
        the heartbeat ends it then. Callers on a request's path test ``since`` first:
        while no outage is under way, that one read is all a request pays."""
        if self.since is not None and (self.cause is StateUnavailable or self.refused):
            self._end()

    def _end(self) -> None:
        """Log the outage's end, with how long it lasted and what it cost."""
        assert self.since is not None
        lasted = anyio.current_time() - self.since
        unsaved = "".join(f", {what}: {count}" for what, count in self.unsaved.items())
        logger.warning(
            "the shared server state %s again after %.1f s (requests refused meanwhile: %d%s)",
            _BACK_AGAIN[self.cause],
            lasted,
            self.refused,
            unsaved,
        )
        self._forget()

    def stopping(self) -> None:
        """The replica stops (its lifespan ends): an outage still under way has no end
        to log, so what it cost is logged now rather than lost."""
        if self.since is None:
            return
        lasted = anyio.current_time() - self.since
        unsaved = "".join(f", {what}: {count}" for what, count in self.unsaved.items())
        logger.warning(
            "this server stops while the shared server state %s, for %.1f s now "
            "(requests refused meanwhile: %d%s)",
            _STILL[self.cause],
            lasted,
            self.refused,
            unsaved,
        )
        self._forget()

    def _forget(self) -> None:
        self.since = None
        self.cause = StateUnavailable
        self.refused = 0
        self.unsaved = {}
