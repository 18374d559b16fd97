"""The pure-code rows: what a client does with every question before a person sees it.

Each operation is timed in this process, with no I/O: reading a received form and checking
an answer against it (``answerback.forms``), and judging a link for URL-mode elicitation
(``answerback.urls``). The official SDK has neither, so these rows have no other side.
"""

from __future__ import annotations

import itertools
from typing import Any, Literal

from answerback.forms import parse_form
from answerback.urls import RiskLevel, judge_url
from benchmarks.measure import Call

Operation = Literal["form", "url"]

FORM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Full name", "minLength": 2, "maxLength": 80},
        "email": {"type": "string", "title": "Email", "format": "email"},
        "website": {"type": "string", "title": "Website", "format": "uri"},
        "arrival": {"type": "string", "title": "Arrival", "format": "date"},
        "guests": {"type": "integer", "title": "Guests", "minimum": 1, "maximum": 8, "default": 2},
        "budget": {"type": "number", "title": "Budget per night", "minimum": 0},
        "newsletter": {"type": "boolean", "title": "Newsletter", "default": False},
        "room": {
            "type": "string",
            "title": "Room",
            "oneOf": [
                {"const": "std", "title": "Standard"},
                {"const": "sea", "title": "Sea view"},
                {"const": "suite", "title": "Suite"},
            ],
        },
        "extras": {
            "type": "array",
            "title": "Extras",
            "items": {"type": "string", "enum": ["breakfast", "parking", "spa", "late checkout"]},
            "minItems": 0,
            "maxItems": 3,
        },
        "note": {"type": "string", "title": "Anything else?", "maxLength": 500},
    },
    "required": ["name", "email", "arrival", "guests", "room"],
}
"""A realistic 10-field booking form: every kind of field, with formats and bounds."""

FORM_ANSWER: dict[str, Any] = {
    "name": "Ada Lovelace",
    "email": "ada@example.com",
    "website": "https://example.com/ada",
    "arrival": "2026-08-14",
    "guests": 2,
    "budget": 180.5,
    "newsletter": True,
    "room": "sea",
    "extras": ["breakfast", "spa"],
    "note": "A quiet room, please.",
}

URLS: tuple[tuple[str, RiskLevel], ...] = (
    ("https://example.com/auth", RiskLevel.OK),
    ("https://münchen.de/", RiskLevel.OK),
    ("https://xn--mnchen-3ya.de/", RiskLevel.OK),
    ("https://\u0430\u0440\u0440\u04cf\u0435.com/", RiskLevel.HIGH_RISK),  # Cyrillic "apple"
    ("https://google.com@evil.com/", RiskLevel.BLOCK),
    ("javascript:alert(1)", RiskLevel.BLOCK),
    ("http://2130706433/", RiskLevel.HIGH_RISK),
    ("https://accounts.google.com.evil-login.net/", RiskLevel.HIGH_RISK),
)
"""The issue's examples: ordinary, international, lookalike, userinfo, script, numeric
host and a brand in the subdomains, each with the level it must get."""


def operation(name: Operation) -> Call:
    """One timed unit of ``name``, checked once here so a broken one fails the row."""
    if name == "form":
        return _check_form()
    return _judge_next_url()


def _check_form() -> Call:
    async def check() -> None:
        parse_form(FORM_SCHEMA).check(FORM_ANSWER)

    if parse_form(FORM_SCHEMA).check(FORM_ANSWER) != FORM_ANSWER:
        raise RuntimeError("the benchmark's form answer no longer passes its own check")
    return check


def _judge_next_url() -> Call:
    for url, level in URLS:
        found = judge_url(url).level
        if found != level:
            raise RuntimeError(f"judge_url({url!r}) is {found!r}, the benchmark expects {level!r}")
    urls = itertools.cycle([url for url, _ in URLS])

    async def judge() -> None:
        judge_url(next(urls))

    return judge
