"""A server's regular expression, run on text with a deadline, as ECMA-262 means it.

JSON Schema's ``pattern`` and ``patternProperties`` are the server's own regular
expressions. Python's ``re`` cannot be stopped: ``^(a+)+$`` takes minutes on thirty
characters, freezing the client. So every pattern a peer chose (in a form, or in a tool's
output schema) runs here, with the ``regex`` engine and a deadline (``PATTERN_SECONDS``).

Those patterns are ECMA-262's, not Python's: each is first translated
(``answerback.forms._ecma_regex``), once per pattern, cached with its compiled form.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from answerback.forms._ecma_regex import NOT_ECMA, PatternError, translate

if TYPE_CHECKING:
    import regex

PATTERN_SECONDS = 0.05
"""How long checking one value against a server's ``pattern`` may take. A pattern
meant for real answers takes microseconds; one that backtracks is stopped here, and the
value is refused as not checkable (``PatternTooSlow``) rather than the client frozen."""

_PATTERNS_KEPT = 256


class PatternTooSlow(Exception):
    """A value could not be checked against a server's ``pattern`` within
    ``PATTERN_SECONDS``: the pattern backtracks (``^(a+)+$``), and only a shorter or
    different value might be checked in time."""


def pattern_search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches anywhere in ``text`` (as JSON Schema says). Raises
    ``PatternTooSlow`` past ``PATTERN_SECONDS``, and ``PatternError`` for a pattern that
    cannot be run."""
    try:
        return compiled_pattern(pattern).search(text, timeout=PATTERN_SECONDS) is not None
    except TimeoutError:
        raise PatternTooSlow(
            f"could not be checked against the pattern {pattern} within "
            f"{PATTERN_SECONDS:g} s: the server's pattern backtracks too much to check "
            f"{len(text):,} characters"
        ) from None


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
