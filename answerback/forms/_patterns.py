"""A server's regular expression, run on text with a deadline, as ECMA-262 means it.

JSON Schema's ``pattern`` and ``patternProperties`` are the server's own regular
expressions. Python's ``re`` cannot be stopped: ``^(a+)+$`` takes minutes on thirty
characters, freezing the client. So every pattern a peer chose (in a form, or in a tool's
output schema) runs here, with the ``regex`` engine and a deadline (``PATTERN_SECONDS``);
and all the checks of one form, answer or result share a budget (``PatternBudget``), since
many values each just under the deadline freeze the client as surely as one past it.

Those patterns are ECMA-262's, not Python's: each is first translated
(``answerback.forms._ecma_regex``), once per pattern, cached with its compiled form.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import TYPE_CHECKING

from answerback.forms._ecma_regex import NOT_ECMA, PatternError, translate

if TYPE_CHECKING:
    import regex

PATTERN_SECONDS = 0.05
"""How long checking one value against a server's ``pattern`` may take. A pattern
meant for real answers takes microseconds; one that backtracks is stopped here, and the
value is refused as not checkable (``PatternTooSlow``) rather than the client frozen."""

PATTERN_BUDGET_SECONDS = 0.25
"""The pattern time one piece of work may spend, and ``PATTERN_SECONDS_PER_CHECK`` more
for each check it makes (``PatternBudget``): reading one form (its defaults checked),
checking one answer, checking one tool result against its output schema.
``PATTERN_SECONDS`` alone does not bound that work: a pattern that backtracks for 30 ms
and then matches never reaches it, and 256 such defaults (or 2,000 such strings in a
result) froze the event loop for half a minute and more. A quarter of a second is a
hundred times a whole real form's patterns, and still only a pause to a person."""

PATTERN_SECONDS_PER_CHECK = 50e-6
"""What each pattern check adds to its work's budget: six times what a pattern that does
not backtrack takes on a value (about 8 µs, the two clock reads included; jsonschema's
whole check of a patterned value takes about 30 µs). So a result of any size whose
patterns do not backtrack is checked whole, and patterns can make checking it at most a
few times slower than checking it without them; while a pattern that backtracks for
30 ms a value still uses the budget up in nine values, one of 6 ms in about forty."""

BUDGET_WORDS = (
    f"{PATTERN_BUDGET_SECONDS:g} s, and {PATTERN_SECONDS_PER_CHECK * 1e6:g} µs for each value"
)
"""The default budget as messages state it."""

_PATTERNS_KEPT = 256


class PatternTooSlow(Exception):
    """A value could not be checked against a server's ``pattern`` within
    ``PATTERN_SECONDS``: the pattern backtracks (``^(a+)+$``), and only a shorter or
    different value might be checked in time."""


class PatternBudgetSpent(PatternTooSlow):
    """The pattern checks of one piece of work took more than ``PATTERN_BUDGET_SECONDS``
    together: the server's patterns are too slow to check, whatever the values. The rest
    is not checked; the form, answer or result is refused as a whole."""


class PatternBudget:
    """The time the pattern checks of one piece of work may take (``pattern_budget``):
    ``seconds`` plus ``per_check`` for each check begun, so a large result of plain
    values is never refused, and what counts is the time a pattern takes beyond a plain
    one's.

    ``clock`` measures what each check costs: the thread's CPU time, so a machine busy
    with other programs does not use the budget up (tests give a fake one); it is read
    twice a check. Each check runs with the smaller of ``PATTERN_SECONDS`` and what is
    left.
    """

    def __init__(
        self,
        seconds: float = PATTERN_BUDGET_SECONDS,
        clock: Callable[[], float] = time.thread_time,
        per_check: float = PATTERN_SECONDS_PER_CHECK,
    ) -> None:
        self.seconds = seconds
        self.per_check = per_check
        self.spent = 0.0
        self.checks = 0
        self._clock = clock

    @property
    def allowed(self) -> float:
        """What the checks begun so far may take together."""
        return self.seconds + self.per_check * self.checks

    @property
    def spent_up(self) -> bool:
        """Whether nothing is left: every further check raises ``PatternBudgetSpent``."""
        return self.spent >= self.allowed

    def search(self, pattern: str, text: str) -> bool:
        """Whether ``pattern`` matches anywhere in ``text``; ``PatternTooSlow`` past
        ``PATTERN_SECONDS``, ``PatternBudgetSpent`` once the budget is used up (at once,
        without searching, when nothing is left)."""
        compiled = compiled_pattern(pattern)
        if self.spent_up:  # before this check's allowance, which would reopen it
            raise self._spent()
        self.checks += 1
        deadline = min(PATTERN_SECONDS, self.allowed - self.spent)
        start = self._clock()
        try:
            return compiled.search(text, timeout=deadline) is not None
        except TimeoutError:
            if deadline < PATTERN_SECONDS:
                # The deadline is wall-clock time and the budget counts CPU time, so a
                # thread kept waiting can time out with CPU time left; either way the
                # budget is gone, and checking must stop here.
                self.spent = max(self.spent, self.allowed)
                raise self._spent() from None
            raise PatternTooSlow(
                f"could not be checked against the pattern {pattern} within "
                f"{PATTERN_SECONDS:g} s: the server's pattern backtracks too much to check "
                f"{len(text):,} characters"
            ) from None
        finally:
            self.spent += self._clock() - start

    def _spent(self) -> PatternBudgetSpent:
        return PatternBudgetSpent(
            "could not be checked: the server's patterns are too slow to check (together "
            f"they took more than the {self.seconds:g} s, and {self.per_check * 1e6:g} µs "
            "for each value, that one form, answer or result may spend on them); a "
            "pattern that does not backtrack checks a value in microseconds"
        )


_OPEN_BUDGET: ContextVar[PatternBudget | None] = ContextVar("pattern_budget", default=None)


@contextmanager
def pattern_budget(
    seconds: float = PATTERN_BUDGET_SECONDS,
    clock: Callable[[], float] = time.thread_time,
    per_check: float = PATTERN_SECONDS_PER_CHECK,
) -> Generator[PatternBudget]:
    """One piece of work whose pattern checks share one budget: every ``pattern_search``
    inside it draws on it. Inside another one, the outer budget is shared instead (work
    that checks other work, such as a caller's budget around ``parse_form``), so nesting
    never grants more time."""
    outer = _OPEN_BUDGET.get()
    if outer is not None:
        yield outer
        return
    budget = PatternBudget(seconds, clock, per_check)
    token = _OPEN_BUDGET.set(budget)
    try:
        yield budget
    finally:
        _OPEN_BUDGET.reset(token)


def pattern_search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches anywhere in ``text`` (as JSON Schema says), drawing on
    the open ``pattern_budget`` (outside one, the value alone is bounded). Raises
    ``PatternTooSlow`` past ``PATTERN_SECONDS``, ``PatternBudgetSpent`` past the budget,
    and ``PatternError`` for a pattern that cannot be run."""
    return (_OPEN_BUDGET.get() or PatternBudget()).search(pattern, text)


@lru_cache(maxsize=_PATTERNS_KEPT)
def compiled_pattern(pattern: str) -> regex.Pattern[str]:
    """``pattern`` (ECMA-262) translated and compiled once (``regex`` is imported on the
    first pattern). Raises ``PatternError`` for a pattern that cannot be run."""
    import regex

    translated = translate(pattern)
    try:
        return regex.compile(translated, regex.VERSION1)
    except regex.error as exc:
        raise PatternError(NOT_ECMA + str(exc)) from None
