"""A server's regular expression, run on text with a deadline.

JSON Schema's ``pattern`` and ``patternProperties`` are the server's own regular
expressions. Python's ``re`` cannot be stopped: ``^(a+)+$`` takes minutes on thirty
characters, freezing the client. So every pattern a peer chose (in a form, or in a tool's
output schema) runs here, with the ``regex`` engine and a deadline (``PATTERN_SECONDS``).
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

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
    ``PatternTooSlow`` past ``PATTERN_SECONDS``, and ``regex.error`` for a pattern that
    does not compile."""
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
    """``pattern`` compiled once (``regex`` is imported on the first pattern)."""
    import regex

    return regex.compile(pattern)
