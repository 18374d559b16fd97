"""The screens in windows too short or too narrow for all they show (the probe's 40x12
and 20x8): what the person must see to answer stays in sight, or the screen says what
it cut, or that the window is too small, and keys do not act on what is out of sight.

The harness (keys from a pipe, the screen read as a terminal would show it) is
``test_terminal_screens``'s; the terminal here has a size of its own, which a test may
change as a person resizes a window.
"""

from __future__ import annotations

import re
from collections.abc import Generator
from contextlib import contextmanager
from typing import Any

import pytest
from prompt_toolkit.application import Application, create_app_session
from prompt_toolkit.data_structures import Size
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from test_terminal_screens import (
    CTRL_C,
    CTRL_S,
    ESC,
    SHIFT_TAB,
    TAB,
    Driven,
    anyio_backend,
    keys_taken_once_drawn,
    running,
    snapshot,
)

from answerback.forms import parse_form
from answerback.interact.terminal import FormScreen, SamplingScreen, UrlCard
from answerback.types import CreateMessageRequestParams, SamplingMessage, TextContent
from answerback.urls import judge_url

pytestmark = pytest.mark.anyio

__all__ = ["anyio_backend", "keys_taken_once_drawn"]  # the fixtures the tests below take

FIRST_FIELD_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {
            "type": "string",
            "title": "Naive cafe name",
            "description": "Your name, with accents",
            "minLength": 2,
        },
        "email": {"type": "string", "title": "Email", "format": "email"},
        "day": {"type": "string", "title": "Day", "format": "date"},
    },
    "required": ["name", "email"],
}


class Resizable(DummyOutput):
    """A pretend terminal's output, of a size the test sets."""

    def __init__(self, columns: int, rows: int) -> None:
        self.size = Size(rows=rows, columns=columns)

    def get_size(self) -> Size:
        return self.size


@contextmanager
def window(columns: int, rows: int) -> Generator[Resizable]:
    """A pretend terminal ``columns`` x ``rows`` for the applications made inside."""
    output = Resizable(columns, rows)
    with create_pipe_input() as pipe, create_app_session(input=pipe, output=output):
        yield output


def seen(app: Application[Any]) -> str:
    """What the window shows now: the screen drawn in as many rows as it has."""
    size = app.output.get_size()
    return snapshot(app, size.columns, size.rows)


async def shows(driven: Driven, text: str) -> str:
    await driven.until(lambda: text in seen(driven.app))
    return seen(driven.app)


async def test_the_focused_fields_title_stays_above_its_input_in_a_short_window() -> None:
    """At 40x12 the first field's title and its "*" were scrolled out of sight as the
    form opened, and again after Shift-Tab back to it: only its description and ">"
    were left."""
    with window(40, 12):
        screen = FormScreen(parse_form(FIRST_FIELD_FORM), title="Form", message="Hi", server="s")
        async with running(screen.application, screen.run) as driven:
            expected = ["Naive cafe name *  (text, at least 2", "  characters)"]
            expected += ["  Your name, with accents", "  >"]
            rows = (await shows(driven, "Ctrl-S accept")).splitlines()
            at = rows.index(expected[0]) if expected[0] in rows else -1
            assert rows[at : at + 4] == expected, rows
            await driven.alone(TAB)
            await shows(driven, "Email *")
            await driven.alone(SHIFT_TAB)
            rows = (await shows(driven, "  Your name")).splitlines()
            at = rows.index(expected[0]) if expected[0] in rows else -1
            assert rows[at : at + 4] == expected, rows
            assert "<  Accept  >  < Decline  >  <  Cancel  >" in rows, rows
            driven.pipe.send_text(CTRL_C)


async def test_a_window_too_small_for_the_form_says_so_and_takes_only_its_answers() -> None:
    """At 20x8 the form was its header's edge, a description, ">" and two keys: no
    button, no Esc. It says how big the window must be, and what is typed there
    reaches no field it cannot show; Esc still cancels."""
    with window(20, 8):
        screen = FormScreen(parse_form(FIRST_FIELD_FORM), title="Form", message="Hi", server="s")
        answers: list[object] = []

        async def run() -> None:
            answers.append(await screen.run())

        async with running(screen.application, run) as driven:
            shown = await shows(driven, "Esc cancel")
            said = " ".join(shown.split())
            assert re.match(
                r"This window is too small for this form: make it at least \d+ rows tall "
                r"\(it has 8\)\. Ctrl-D decline Esc cancel",
                said,
            ), shown
            for key in ("x", CTRL_S, TAB, "y"):
                await driven.alone(key)
            assert screen.application.is_running
            assert screen.inputs[0].read()[0] is None  # nothing typed into the field
            await driven.alone(ESC)
        assert answers == ["cancel"]


async def test_a_form_narrower_than_its_buttons_row_shows_them_one_under_another() -> None:
    """Under 40 columns the buttons' row was drawn as "Window too small..."."""
    with window(30, 40):
        screen = FormScreen(parse_form(FIRST_FIELD_FORM), title="Form", message="", server="s")
        async with running(screen.application, screen.run) as driven:
            rows = (await shows(driven, "Ctrl-S accept")).splitlines()
            at = rows.index("<  Accept  >") if "<  Accept  >" in rows else -1
            assert rows[at : at + 3] == ["<  Accept  >", "< Decline  >", "<  Cancel  >"], rows
            driven.pipe.send_text(CTRL_C)


CTRL_R = "\x12"
HIGH_RISK = "https://accounts.google.com.evil-login.net/path"
OUT_OF_SIGHT = "The link and its verdict do not fit: make the window taller to open it."


async def test_a_link_card_cut_above_its_verdict_says_so_and_does_not_open() -> None:
    """At 40x12 the card lost its reasons, its message and its bottom edge without a
    word, and at 20x8 "o" still acted with no link on screen. Cut, the card says how
    much more there is; while the verdict is out of sight the key line says why "o"
    does not act, and it does not; in a taller window it does."""
    with window(40, 11) as output:
        card = UrlCard(judge_url(HIGH_RISK), message="Sign in", server="s")
        async with running(card.application, card.run) as driven:
            shown = await shows(driven, "c/Esc cancel")
            said = " ".join(shown.split())
            assert re.search(r"│ … \d+ more lines: a taller window │ │ shows them │ ╰─", said), (
                shown
            )
            assert OUT_OF_SIGHT in said, shown
            await driven.alone("o")
            assert not card.confirming
            assert card.application.is_running
            output.size = Size(rows=30, columns=40)
            driven.app.invalidate()
            shown = await shows(driven, "o open in browser")
            assert "more lines" not in shown
            assert OUT_OF_SIGHT not in " ".join(shown.split())
            await driven.alone("o")
            assert card.confirming  # the second key of a high-risk link, as in any window
            driven.pipe.send_text("c")


async def test_a_link_card_cut_in_its_message_says_ctrl_r_and_opens() -> None:
    """With the link and its verdict in sight, only the server's words are cut: the
    card says so, Ctrl-R shows them, and "o" opens as ever."""
    message = "\n".join(f"line {n}" for n in range(8))
    with window(40, 14):
        card = UrlCard(judge_url("https://example.com/a"), message=message, server="s")
        answers: list[object] = []

        async def run() -> None:
            answers.append(await card.run())

        async with running(card.application, run) as driven:
            shown = await shows(driven, "o open in browser")
            said = " ".join(shown.split())
            assert re.search(r"│ … \d+ more lines: Ctrl-R shows them │ │ whole │ ╰─", said), shown
            assert "Site: example.com" in shown, shown
            await driven.alone(CTRL_R)
            await shows(driven, "line 7")
            await driven.alone("q")
            await shows(driven, "o open in browser")
            await driven.alone("o")
        assert answers == ["open"]


async def test_the_reply_editor_does_not_push_the_request_away_without_a_word() -> None:
    """At 40x12, after "a", the reply's rows pushed all the request but its token cap
    off the screen, with nothing saying so. The card keeps its edges and says how much
    more there is, and Ctrl-R shows all of it, the token cap too."""
    params = CreateMessageRequestParams(
        messages=[SamplingMessage(role="user", content=TextContent(text="Say hello"))],
        system_prompt="Be brief.",
        max_tokens=40,
    )
    with window(40, 12):
        screen = SamplingScreen(params, server="probe")
        async with running(screen.application, screen.run) as driven:
            await shows(driven, "a approve")
            await driven.alone("a")
            shown = await shows(driven, "Ctrl-S send reply")
            said = " ".join(shown.split())
            assert re.search(r"│ … \d+ more lines: Ctrl-R shows them │ │ whole │ ╰─", said), shown
            assert "Your reply (sent as the model's answer):" in shown, shown
            await driven.alone(CTRL_R)
            shown = await shows(driven, "Say hello")
            assert "│ Token cap: 40" in shown, shown
            await driven.alone("q")  # back to the reply
            await shows(driven, "Ctrl-S send reply")
            driven.pipe.send_text(ESC)


SAMPLING_OUT_OF_SIGHT = (
    "The request's model, token cap and tools do not fit: make the window taller to approve."
)


def _costly_request() -> CreateMessageRequestParams:
    """A request with many facts to weigh: the models wanted, the cap, the tools."""
    return CreateMessageRequestParams.model_validate(
        {
            "messages": [{"role": "user", "content": {"type": "text", "text": "Say hello"}}],
            "maxTokens": 90000,
            "modelPreferences": {
                "hints": [{"name": "opus"}],
                "costPriority": 0.1,
                "intelligencePriority": 1,
            },
            "temperature": 1.5,
            "stopSequences": ["END"],
            "tools": [
                {"name": "delete_files", "inputSchema": {"type": "object"}},
                {"name": "send_money", "inputSchema": {"type": "object"}},
            ],
        }
    )


async def test_a_sampling_card_cut_above_its_facts_says_so_and_does_not_approve() -> None:
    """In a short window the card showed its title and a note while "a" approved a
    request whose token cap and tools were out of sight. While they are, the key line
    says why "a" does not act, and it does not; in a taller window it does."""
    with window(40, 9) as output:
        screen = SamplingScreen(_costly_request(), server="s")
        async with running(screen.application, screen.run) as driven:
            shown = await shows(driven, "d/Esc deny")
            said = " ".join(shown.split())
            assert SAMPLING_OUT_OF_SIGHT in said, shown
            assert "a approve" not in shown
            assert re.search(r"more lines: Ctrl-R shows them", said), shown
            await driven.alone("a")
            assert screen.stage == "request"
            output.size = Size(rows=40, columns=40)
            driven.app.invalidate()
            shown = await shows(driven, "a approve")
            assert "send_money" in shown, shown
            assert SAMPLING_OUT_OF_SIGHT not in " ".join(shown.split())
            await driven.alone("a")
            assert screen.stage == "reply"
            driven.pipe.send_text(ESC)


async def test_a_link_card_too_small_while_confirming_lists_the_keys_that_act() -> None:
    """Shrunk while a high-risk link waited for its "y", the card listed "d decline",
    which does nothing then. It lists "n" and cancel, and "n" goes back."""
    with window(40, 30) as output:
        card = UrlCard(judge_url(HIGH_RISK), message="Sign in", server="s")
        async with running(card.application, card.run) as driven:
            await shows(driven, "o open in browser")
            await driven.alone("o")
            assert card.confirming
            output.size = Size(rows=5, columns=40)
            driven.app.invalidate()
            shown = await shows(driven, "too small")
            said = " ".join(shown.split())
            assert "n go back c/Esc cancel" in said, shown
            assert "decline" not in said, shown
            await driven.alone("d")
            assert card.application.is_running
            await driven.alone("n")
            assert not card.confirming
            driven.pipe.send_text("c")
