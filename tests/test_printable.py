"""``clean``: a peer's text as the person's terminal shows it, every character that
would be obeyed or hidden written out instead."""

from __future__ import annotations

import unicodedata

import pytest

from answerback.interact import clean


@pytest.mark.parametrize(
    ("sent", "shown"),
    [
        ("\x1b]0;PWNED\x07", "\\x1b]0;PWNED\\x07"),
        ("a\rb\x85c\x9b2J", "a\\x0db\\x85c\\x9b2J"),
        ("pay\u202epal", "pay\\u202epal"),
        ("pay\u200bpal\u200dx\u200cy", "pay\\u200bpal\\u200dx\\u200cy"),
        ("word\u2060joiner\u2064\ufeff", "word\\u2060joiner\\u2064\\ufeff"),
        ("soft\u00adhyphen", "soft\\xadhyphen"),
        ("tag\U000e0041\U000e007f", "tag\\U000e0041\\U000e007f"),
        ("lone\ud800", "lone\\ud800"),
        ("one\u2028two\u2029three", "one\ntwo\nthree"),
        ("tab\tand\nnewline kept, é 漢字 🙂 too", "tab\tand\nnewline kept, é 漢字 🙂 too"),
    ],
    ids=[
        "escape",
        "c0-c1",
        "bidi",
        "zero-width",
        "invisible-format",
        "soft-hyphen",
        "tags",
        "surrogate",
        "separators",
        "kept",
    ],
)
def test_what_a_terminal_would_obey_or_hide_is_written_out(sent: str, shown: str) -> None:
    assert clean(sent) == shown


def test_text_that_must_stay_on_one_line_has_every_line_break_written_out() -> None:
    assert clean("a\nb\u2028c\u2029d\te", newlines=False) == "a\\x0ab\\u2028c\\u2029d\te"


def test_no_invisible_format_character_is_left_as_it_is() -> None:
    """Every Cf character this Python knows (not only the ones named above)."""
    left = [
        f"U+{code:04X}"
        for code in range(0x110000)
        if unicodedata.category(chr(code)) == "Cf" and clean(chr(code)) == chr(code)
    ]
    assert left == []
