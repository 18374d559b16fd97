"""``clean``: a peer's text as the person's terminal shows it, every character that
would be obeyed or hidden written out instead."""

from __future__ import annotations

import unicodedata

import pytest

from answerback.cli._render import result_text
from answerback.interact import clean
from answerback.types import CallToolResult, TextContent


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


@pytest.mark.parametrize(
    "text",
    [
        "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",  # Persian "I want"
        "\u0915\u094d\u200d\u0937",  # Devanagari: ka, virama, joiner, ssa
        "\U0001f469\u200d\U0001f4bb",  # woman, joiner, laptop: one emoji
        "\u2764\ufe0f\u200d\U0001f525",  # heart (emoji style), joiner, fire
    ],
    ids=["persian-zwnj", "devanagari-zwj", "emoji-zwj", "emoji-after-selector"],
)
def test_a_joiner_that_spells_a_word_or_emoji_is_kept(text: str) -> None:
    assert clean(text) == text


@pytest.mark.parametrize(
    ("sent", "shown"),
    [
        ("de\u200dlete", "de\\u200dlete"),  # would pass for "delete"
        ("caf\u00e9\u200c\u00e9", "caf\u00e9\\u200c\u00e9"),  # Latin, not ASCII
        ("\u043f\u200d\u0440", "\u043f\\u200d\u0440"),  # Cyrillic
        ("\u200d\u0645", "\\u200d\u0645"),  # at the start
        ("\u0645\u200c", "\u0645\\u200c"),  # at the end
        ("\u0645\u200c\u200c\u0645", "\u0645\\u200c\\u200c\u0645"),  # doubled
        ("\u0645\u200c \u0645", "\u0645\\u200c \u0645"),  # before a space
        ("\u202e\u200d\u0645", "\\u202e\\u200d\u0645"),  # after a written-out one
    ],
    ids=["ascii", "latin", "cyrillic", "start", "end", "doubled", "space", "after-bidi"],
)
def test_a_joiner_that_joins_nothing_is_written_out(sent: str, shown: str) -> None:
    assert clean(sent) == shown


def test_text_that_must_stay_on_one_line_has_every_line_break_written_out() -> None:
    assert clean("a\nb\u2028c\u2029d\te", newlines=False) == "a\\x0ab\\u2028c\\u2029d\te"
    assert clean("a\r\nb", newlines=False) == "a\\x0d\\x0ab"


def test_a_crlf_line_end_is_a_line_end_and_a_lone_carriage_return_is_written_out() -> None:
    """A server on Windows ends its lines with CRLF: each line showed ``\\x0d`` at its
    end. A carriage return on its own would still draw over its line."""
    assert clean("line1\r\nline2\r\n") == "line1\nline2\n"
    assert clean("line2\rover\r\n") == "line2\\x0dover\n"
    result = CallToolResult(content=[TextContent(text="one\r\ntwo\rthree")])
    assert result_text(result) == "one\ntwo\\x0dthree"


def test_no_invisible_format_character_is_left_as_it_is() -> None:
    """Every Cf character this Python knows (not only the ones named above)."""
    left = [
        f"U+{code:04X}"
        for code in range(0x110000)
        if unicodedata.category(chr(code)) == "Cf" and clean(chr(code)) == chr(code)
    ]
    assert left == []
