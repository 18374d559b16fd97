"""A server's regular expression, run on text with a deadline, as ECMA-262 means it.

JSON Schema's ``pattern`` and ``patternProperties`` are the server's own regular
expressions. Python's ``re`` cannot be stopped: ``^(a+)+$`` takes minutes on thirty
characters, freezing the client. So every pattern a peer chose (in a form, or in a tool's
output schema) runs here, with the ``regex`` engine and a deadline (``PATTERN_SECONDS``);
and all the checks of one form, answer or result share a budget (``PatternBudget``), since
many values each just under the deadline freeze the client as surely as one past it.

Those patterns are ECMA-262's, not Python's: each is first translated
(``answerback.forms._ecma_regex``), once per pattern, cached with its compiled form. That
is not free either (about half a millisecond for an ordinary pattern, in the ``regex``
engine's own Python parser, and a few for one that repeats a part thousands of times), and
a peer can send a new pattern in every field: so compiling a pattern not yet cached draws
on the same budget.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from contextvars import ContextVar
from functools import lru_cache
from typing import TYPE_CHECKING, Generic, TypeVar

from answerback.forms._ecma_regex import NOT_ECMA, PatternError, translate

if TYPE_CHECKING:
    import regex

PATTERN_SECONDS = 0.05
"""How long checking one value against a server's ``pattern`` may take. A pattern
meant for real answers takes microseconds; one that backtracks is stopped here, and the
value is refused as not checkable (``PatternTooSlow``) rather than the client frozen."""

PATTERN_BUDGET_SECONDS = 0.25
"""The pattern time one piece of work may spend, and ``PATTERN_SECONDS_PER_CHECK`` more
for each check it makes and ``PATTERN_SECONDS_PER_COMPILE`` for each pattern it compiles
(``PatternBudget``): reading one form (its patterns compiled, its defaults checked),
checking one answer, checking one tool result against its output schema; a 2026-07-28
round shares one among all its forms and answers.
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

PATTERN_SECONDS_PER_COMPILE = 400e-6
"""What each pattern compiled (one not already cached) adds to its work's budget: about
what an ordinary pattern takes to translate and compile the first time (0.25 to 1 ms,
0.45 on average, for a dozen email, date, phone, URL and UUID patterns; mostly in the
``regex`` engine's own parser, written in Python). So honest new patterns hardly draw on
the budget, and a form of 256 of them is read on a machine twice as slow; while ones
that repeat a part thousands of times (3 to 5 ms each) use it up after fifty to ninety.
Only the first ``PATTERN_COMPILES_ALLOWED`` compiles add to it (see there)."""

PATTERN_COMPILES_ALLOWED = 256
"""How many compiles of one piece of work add ``PATTERN_SECONDS_PER_COMPILE``: as many
as a form has fields at most (``MAX_FIELDS``; imported, it would make a cycle). The
simplest patterns compile in less than that allowance, so without a bound new patterns
sent without end (an output schema of thousands) would never use the budget up; past
it, each compile draws on the budget whole."""

BUDGET_WORDS = (
    f"{PATTERN_BUDGET_SECONDS:g} s, {PATTERN_SECONDS_PER_CHECK * 1e6:g} µs a value and "
    f"{PATTERN_SECONDS_PER_COMPILE * 1e6:g} µs a new pattern"
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
    """The time the pattern checks and compiles of one piece of work may take
    (``pattern_budget``): ``seconds``, plus ``per_check`` for each check begun and
    ``per_compile`` for each pattern compiled (the first ``PATTERN_COMPILES_ALLOWED``),
    so a large result of plain values is never refused, and what counts is the time
    patterns take beyond plain ones.

    ``clock`` measures what each check or compile costs: the thread's CPU time, so a
    machine busy with other programs does not use the budget up (tests give a fake one);
    it is read twice for each. Each check runs with the smaller of ``PATTERN_SECONDS``
    and what is left; a compile cannot be stopped, so it is only not begun once nothing
    is left.
    """

    def __init__(
        self,
        seconds: float = PATTERN_BUDGET_SECONDS,
        clock: Callable[[], float] = time.thread_time,
        per_check: float = PATTERN_SECONDS_PER_CHECK,
        per_compile: float = PATTERN_SECONDS_PER_COMPILE,
    ) -> None:
        self.seconds = seconds
        self.per_check = per_check
        self.per_compile = per_compile
        self.spent = 0.0
        self.checks = 0
        self.compiles = 0
        self._clock = clock

    @property
    def allowed(self) -> float:
        """What the checks and compiles begun so far may take together."""
        compiles = min(self.compiles, PATTERN_COMPILES_ALLOWED)
        return self.seconds + self.per_check * self.checks + self.per_compile * compiles

    @property
    def spent_up(self) -> bool:
        """Whether nothing is left: every further check raises ``PatternBudgetSpent``."""
        return self.spent >= self.allowed

    def search(self, pattern: str, text: str) -> bool:
        """Whether ``pattern`` matches anywhere in ``text``; ``PatternTooSlow`` past
        ``PATTERN_SECONDS``, ``PatternBudgetSpent`` once the budget is used up (at once,
        without searching, when nothing is left)."""
        compiled = kept_pattern(pattern)
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

    def compile(self, pattern: str) -> regex.Pattern[str]:
        """``pattern`` translated and compiled, at the budget's cost; ``PatternBudgetSpent``
        at once, without compiling, when nothing is left."""
        import regex  # before the clock starts: the process's first pattern pays no import

        if self.spent_up:
            raise self._spent()
        self.compiles += 1
        start = self._clock()
        try:
            translated = translate(pattern)
            try:
                return regex.compile(translated, regex.VERSION1)
            except regex.error as exc:
                raise PatternError(NOT_ECMA + str(exc)) from None
        finally:
            self.spent += self._clock() - start

    def _spent(self) -> PatternBudgetSpent:
        return PatternBudgetSpent(
            "could not be checked: the server's patterns are too slow to check (together "
            f"they took more than the {self.seconds:g} s, {self.per_check * 1e6:g} µs a "
            f"value and {self.per_compile * 1e6:g} µs a new pattern, that one form, answer "
            "or result may spend on them); a pattern that does not backtrack checks a value "
            "in microseconds"
        )


_OPEN_BUDGET: ContextVar[PatternBudget | None] = ContextVar("pattern_budget", default=None)

ValueT = TypeVar("ValueT")
GivenT = TypeVar("GivenT")


def pattern_budget(
    seconds: float = PATTERN_BUDGET_SECONDS,
    clock: Callable[[], float] = time.thread_time,
    per_check: float = PATTERN_SECONDS_PER_CHECK,
    per_compile: float = PATTERN_SECONDS_PER_COMPILE,
) -> AbstractContextManager[PatternBudget]:
    """One piece of work whose pattern checks share one budget: every ``pattern_search``
    inside it draws on it. Inside another one, the outer budget is shared instead (work
    that checks other work, such as a caller's budget around ``parse_form``), so nesting
    never grants more time."""
    outer = _OPEN_BUDGET.get()
    if outer is not None:
        return nullcontext(outer)
    budget = PatternBudget(seconds, clock, per_check, per_compile)
    return _Set(_OPEN_BUDGET, budget, budget)


def drawing_on(budget: PatternBudget | None) -> AbstractContextManager[None]:
    """Make ``budget`` the open one for the code inside, whatever is open around it
    (``None``: none, so each piece of work opens its own). For work done in parts with
    other code run between them, such as a 2026-07-28 round's forms and answers with the
    host's callbacks between: its budget is open only while its own parts run, so what
    those callbacks check (another server's tool result) never draws on it."""
    return _Set(_OPEN_BUDGET, budget, None)


_KEPT: ContextVar[dict[str, regex.Pattern[str]] | None] = ContextVar("kept_patterns", default=None)


SCHEMA_PATTERNS_KEPT = 1024
"""Most compiled patterns one ``keeping`` holds; past it, the shared cache serves. A
schema is a peer's: unbounded, every validator a client keeps could hold thousands
(about 10 kB each), hundreds of MB in all."""


def keeping(patterns: dict[str, regex.Pattern[str]]) -> AbstractContextManager[None]:
    """Look patterns up in ``patterns`` first for the code inside, and add there those
    compiled, up to ``SCHEMA_PATTERNS_KEPT``: one output schema's own, kept with it. A
    schema of more distinct patterns than the shared cache holds (``_PATTERNS_KEPT``)
    otherwise had them all compiled again for every result it checked (a check runs
    them in one order, and the least recently used go first), each charged to that
    result's budget."""
    return _Set(_KEPT, patterns, None)


class _Set(Generic[ValueT, GivenT]):
    """``variable`` set to ``value`` for the code inside, which is given ``given``. A
    class rather than a generator: these open around every form read and answer checked,
    twice or three times per question, and a generator's context manager cost four times
    as much."""

    __slots__ = ("_given", "_token", "_value", "_variable")

    def __init__(self, variable: ContextVar[ValueT], value: ValueT, given: GivenT) -> None:
        self._variable = variable
        self._value = value
        self._given = given

    def __enter__(self) -> GivenT:
        self._token = self._variable.set(self._value)
        return self._given

    def __exit__(self, *exc_info: object) -> None:
        self._variable.reset(self._token)


def kept_pattern(pattern: str) -> regex.Pattern[str]:
    """``compiled_pattern``, through the patterns kept by the open ``keeping``."""
    kept = _KEPT.get()
    if kept is None:
        return compiled_pattern(pattern)
    compiled = kept.get(pattern)
    if compiled is None:
        compiled = compiled_pattern(pattern)
        if len(kept) < SCHEMA_PATTERNS_KEPT:
            kept[pattern] = compiled
    return compiled


def pattern_search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches anywhere in ``text`` (as JSON Schema says), drawing on
    the open ``pattern_budget`` (outside one, the value alone is bounded). Raises
    ``PatternTooSlow`` past ``PATTERN_SECONDS``, ``PatternBudgetSpent`` past the budget,
    and ``PatternError`` for a pattern that cannot be run."""
    return (_OPEN_BUDGET.get() or PatternBudget()).search(pattern, text)


@lru_cache(maxsize=_PATTERNS_KEPT)
def compiled_pattern(pattern: str) -> regex.Pattern[str]:
    """``pattern`` (ECMA-262) translated and compiled once, drawing on the open
    ``pattern_budget`` (outside one, a compile is not refused). The cache runs this only
    for a pattern it does not hold, so a cached pattern costs nothing; and it keeps no
    exception, so a pattern refused for the budget's sake is compiled afresh next time.
    Raises ``PatternError`` for a pattern that cannot be run, ``PatternBudgetSpent`` past
    the budget."""
    return (_OPEN_BUDGET.get() or PatternBudget()).compile(pattern)
