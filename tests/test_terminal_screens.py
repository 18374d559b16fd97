"""The terminal screens, driven the way a person drives them: keys in, screen out.

Each prompt_toolkit application reads keys from a pipe (``create_pipe_input``) and draws
on a ``DummyOutput`` (80 columns); what it shows is read by drawing its layout onto a
screen buffer, the same text a terminal would show. The tests wait for the screen to
show what they expect (on the application's ``after_render`` event), never for time.
Presenter tests go through the real ``Broker`` and an in-process server, as a host does.

prompt_toolkit runs only on asyncio, so this module pins the asyncio backend, except
for ``LinePresenter``, which runs on both.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import re
import webbrowser
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Generator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio
import pytest
from prompt_toolkit.application import Application, create_app_session, get_app_session
from prompt_toolkit.data_structures import Size
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.layout.mouse_handlers import MouseHandlers
from prompt_toolkit.layout.screen import Screen, WritePosition
from prompt_toolkit.output import DummyOutput
from pydantic import BaseModel
from rich.console import Console
from support import PATIENCE_SECONDS, ReportingEventLoop, load_module

from answerback import Client, MCPError
from answerback.forms import AnswerError, FieldError, Form, parse_form
from answerback.interact import Broker, Presenter
from answerback.interact.terminal import (
    REJECTED,
    TYPED_BY_PERSON,
    FormScreen,
    LinePresenter,
    SamplingScreen,
    ServerKeys,
    TerminalPresenter,
    UrlCard,
    _screen,
    ask_form,
)
from answerback.server import Context, MCPServer
from answerback.types import (
    USER_REJECTED,
    CallToolResult,
    CreateMessageRequestParams,
    CreateMessageResult,
    ImageContent,
    ModelHint,
    ModelPreferences,
    SamplingMessage,
    TextContent,
    Tool,
    ToolUseContent,
)
from answerback.urls import RiskLevel, judge_url

pytestmark = pytest.mark.anyio

T = TypeVar("T")

ASYNCIO: tuple[str, dict[str, Any]] = ("asyncio", {"loop_factory": ReportingEventLoop})
TRIO: tuple[str, dict[str, Any]] = ("trio", {})
BOTH = [pytest.param(ASYNCIO, id="asyncio"), pytest.param(TRIO, id="trio")]
DOCS = Path(__file__).parent.parent / "docs" / "terminal.md"

CTRL_S, CTRL_D, CTRL_C, CTRL_X, CTRL_Q, ESC = "\x13", "\x04", "\x03", "\x18", "\x11", "\x1b"
TAB, SHIFT_TAB, DOWN, UP, ENTER = "\t", "\x1b[Z", "\x1b[B", "\x1b[A", "\r"

BOOKING: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "description": "Who the table is for"},
        "email": {"type": "string", "title": "Email", "format": "email"},
        "guests": {"type": "integer", "title": "Guests", "minimum": 1, "maximum": 12, "default": 2},
        "seating": {
            "type": "string",
            "title": "Seating",
            "oneOf": [
                {"const": "inside", "title": "Inside"},
                {"const": "terrace", "title": "Terrace"},
            ],
        },
        "extras": {
            "type": "array",
            "title": "Extras",
            "items": {"type": "string", "enum": ["high chair", "cake", "flowers"]},
            "maxItems": 2,
        },
        "reminder": {"type": "boolean", "title": "Send a reminder", "default": True},
    },
    "required": ["name", "email", "seating"],
}


@pytest.fixture(scope="module")
def anyio_backend() -> tuple[str, dict[str, Any]]:
    """prompt_toolkit needs asyncio: the screens' tests run there only."""
    return ASYNCIO


@pytest.fixture(autouse=True)
def keys_taken_once_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    """Screens take keys as soon as they are drawn here (a person's screen waits a
    moment first, ``KeyGuard``): these tests type into a screen once it shows, and the
    guard's own tests set its clock. Keys sent apart count as typed alone whatever the
    time between them; the tests of that gap set it and a clock."""
    monkeypatch.setattr(_screen, "SETTLE_SECONDS", 0.0)
    monkeypatch.setattr(_screen, "TYPED_GAP_SECONDS", 0.0)


def snapshot(app: Application[Any], width: int | None = None, height: int | None = None) -> str:
    """The text ``app`` shows now, as an ``width``-column terminal (by default, its own)
    would show it, in ``height`` rows (by default, as many as it asks for)."""
    width = width or app.output.get_size().columns
    # Controls keep what they drew for each render: a new count draws what is there now
    # (else a list drawn before the last keys showed beside an error line drawn after).
    app.render_counter += 1
    container = app.layout.container
    height = height or container.preferred_height(width, 200).preferred
    screen = Screen()
    container.write_to_screen(
        screen, MouseHandlers(), WritePosition(0, 0, width, height), "", False, None
    )
    screen.draw_all_floats()
    rows = [
        "".join(screen.data_buffer[y][x].char for x in range(width)).rstrip() for y in range(height)
    ]
    return "\n".join(rows).rstrip()


class Driven:
    """A running screen: type keys into it, wait until it shows something."""

    def __init__(self, app: Application[Any], pipe: PipeInput) -> None:
        self.app = app
        self.pipe = pipe
        self._rendered = anyio.Event()
        self.keys = 0
        """How many keys the screen has handled."""
        self._handled = anyio.Event()
        app.after_render += self._on_render
        app.key_processor.after_key_press += self._on_key

    def _on_key(self, _processor: object) -> None:
        self.keys += 1
        self._handled.set()

    async def alone(self, key: str) -> None:
        """Type ``key`` on its own, as a person does, and wait until it is handled
        (it may close the screen)."""
        handled = self.keys + 1
        self.pipe.send_text(key)
        with anyio.fail_after(PATIENCE_SECONDS):
            while self.keys < handled:
                self._handled = anyio.Event()
                await self._handled.wait()

    def _on_render(self, _app: Application[Any]) -> None:
        self._rendered.set()

    @property
    def text(self) -> str:
        return snapshot(self.app)

    async def until(self, done: Callable[[], bool]) -> None:
        with anyio.fail_after(PATIENCE_SECONDS):
            while not (self.app.is_running and done()):
                self._rendered = anyio.Event()
                await self._rendered.wait()

    async def shows(self, text: str) -> str:
        await self.until(lambda: text in self.text)
        return self.text

    async def type(self, keys: str, *, then: str) -> str:
        """Type ``keys``, and wait until the screen shows ``then``."""
        self.pipe.send_text(keys)
        return await self.shows(then)


class SizedOutput(DummyOutput):
    """A pretend terminal's output, ``columns`` wide and 40 rows tall."""

    def __init__(self, columns: int) -> None:
        self.columns = columns

    def get_size(self) -> Size:
        return Size(rows=40, columns=self.columns)


@contextmanager
def terminal(columns: int = 80) -> Generator[PipeInput]:
    """A pretend terminal for the applications made inside: keys from a pipe, 80x40
    (or ``columns`` wide)."""
    output = SizedOutput(columns)
    with create_pipe_input() as pipe, create_app_session(input=pipe, output=output):
        yield pipe


@asynccontextmanager
async def running(
    app: Application[T], run: Callable[[], Coroutine[Any, Any, object]]
) -> AsyncGenerator[Driven]:
    """Run a screen in the background while the test drives it; it must have ended
    (answered or withdrawn) when the block is left."""
    pipe = get_app_session().input
    assert isinstance(pipe, PipeInput)
    driven = Driven(app, pipe)
    with anyio.fail_after(PATIENCE_SECONDS):
        async with anyio.create_task_group() as group:
            group.start_soon(run)
            await driven.until(lambda: True)
            yield driven


async def outcome(app: Application[T], keys: str, run: Callable[[], Awaitable[T]]) -> T:
    """What a screen answers when ``keys`` are typed into it from the start."""
    found: list[T] = []

    async def answer() -> None:
        found.append(await run())

    async with running(app, answer) as screen:
        screen.pipe.send_text(keys)
    assert not app.is_running
    return found[0]


def booking() -> Form:
    return parse_form(BOOKING)


# -- forms --------------------------------------------------------------------------


async def test_a_form_shows_every_field_with_its_default_and_marks_what_is_required() -> None:
    with terminal():
        screen = FormScreen(booking(), title="Form", message="Book a table", server="library")
        async with running(screen.application, screen.run) as driven:
            shown = await driven.shows("Guests")
            assert "Form — from library" in shown
            assert "Book a table" in shown
            assert "Name *  (text)" in shown
            assert "Who the table is for" in shown
            assert "Email *  (email address, like name@example.com)" in shown
            assert "Guests  (whole number, 1 to 12)\n  > 2" in shown
            assert "( ) Inside" in shown
            assert "( ) Terrace" in shown
            assert "[ ] high chair" in shown
            assert "Extras  (pick at most 2)" in shown
            assert "[x] yes" in shown
            assert "Ctrl-S accept  Ctrl-D decline  Esc cancel" in shown
            assert "* required" in shown
            driven.pipe.send_text(ESC)


async def test_a_wrong_value_is_shown_at_its_field_and_never_sent_until_it_is_right() -> None:
    with terminal():
        screen = FormScreen(booking(), title="Form", message="Book a table", server="library")
        answers: list[object] = []

        async def run() -> None:
            answers.append(await screen.run())

        async with running(screen.application, run) as driven:
            shown = await driven.type("Ada" + TAB + "ada@example", then="✗")
            assert "  > ada@example\n  ✗ is not a valid email address" in shown
            shown = await driven.type(CTRL_S, then="Not sent")
            assert "Not sent: fix Email, Seating" in shown
            assert "Seating *  (pick one)\n  ( ) Inside\n  ( ) Terrace\n  ✗ is required" in shown
            assert answers == []
            assert driven.app.is_running
            # Accept put the focus on the first wrong field: finish the address there.
            shown = await driven.type(".com", then="Not sent: fix Seating")
            assert "✗ is not a valid email" not in shown
            await driven.type(TAB + TAB + DOWN + " ", then="(•) Terrace")
            await driven.until(lambda: "Not sent" not in driven.text)
            driven.pipe.send_text(CTRL_S)
    assert answers == [
        {
            "name": "Ada",
            "email": "ada@example.com",
            "guests": 2,
            "seating": "terrace",
            "reminder": True,
        }
    ]


HIDDEN_DEFAULT: dict[str, Any] = {
    "type": "object",
    "properties": {"payee": {"type": "string", "title": "Payee", "default": "Bob\u202elaC"}},
}


async def test_a_default_is_shown_and_sent_with_its_hidden_characters_written_out() -> None:
    """A bidi override in a server's default is never obeyed by the terminal nor sent
    back unseen: the person sees, and accepts, the written-out text."""
    with terminal():
        screen = FormScreen(parse_form(HIDDEN_DEFAULT), title="Form", message="Pay", server="x")
        answers: list[object] = []

        async def run() -> None:
            answers.append(await screen.run())

        async with running(screen.application, run) as driven:
            shown = await driven.shows("Payee")
            assert "  > Bob\\u202elaC" in shown
            assert "\u202e" not in shown
            driven.pipe.send_text(CTRL_S)
    assert answers == [{"payee": "Bob\\u202elaC"}]


@pytest.mark.parametrize("anyio_backend", BOTH)
async def test_line_mode_shows_and_sends_a_default_with_its_hidden_characters_written_out() -> None:
    out = io.StringIO()
    presenter = LinePresenter(input=lines("", ""), output=out)
    answer = await presenter.ask_form(parse_form(HIDDEN_DEFAULT), message="Pay")
    assert answer == {"payee": "Bob\\u202elaC"}
    assert "Payee (text; -: unanswered) [Bob\\u202elaC]" in out.getvalue()
    assert "\u202e" not in out.getvalue()


async def test_the_buttons_follow_the_fields_in_a_tall_terminal_and_a_long_form_scrolls() -> None:
    with terminal():
        screen = FormScreen(booking(), title="Form", message="Book", server="library")
        async with running(screen.application, screen.run) as driven:
            tall = snapshot(driven.app, height=80).splitlines()
            assert tall[tall.index("  [x] yes") + 3] == "<  Accept  >  < Decline  >  <  Cancel  >"
            driven.pipe.send_text(TAB * 5)
            await driven.until(lambda: driven.app.layout.has_focus(screen.inputs[-1].container))
            short = snapshot(driven.app, height=12)
            assert "  [x] yes" in short  # the focused field is in view
            assert "Name *" not in short
            assert short.endswith("Esc cancel   * required")
            driven.pipe.send_text(CTRL_C)


async def test_choices_are_picked_with_space_in_radio_and_checkbox_lists() -> None:
    keys = (
        "Ada" + TAB + "ada@example.com" + TAB + TAB  # to Seating
        + " "  # Inside
        + TAB + " " + DOWN + DOWN + " "  # Extras: high chair and flowers
        + TAB + " "  # reminder off
        + CTRL_S
    )  # fmt: skip
    with terminal():
        screen = FormScreen(booking(), title="Form", message="Book", server="library")
        answer = await outcome(screen.application, keys, screen.run)
    assert answer == {
        "name": "Ada",
        "email": "ada@example.com",
        "guests": 2,
        "seating": "inside",
        "extras": ["high chair", "flowers"],
        "reminder": False,
    }


async def test_a_multi_select_over_its_limit_is_refused_at_the_field() -> None:
    with terminal():
        screen = FormScreen(booking(), title="Form", message="Book", server="library")
        async with running(screen.application, screen.run) as driven:
            keys = TAB * 4 + " " + DOWN + " " + DOWN + " "
            shown = await driven.type(keys, then="must pick at most 2 choices")
            assert "[x] high chair\n  [x] cake\n  [x] flowers\n  ✗ must pick at most 2" in shown
            driven.pipe.send_text(CTRL_C)


@pytest.mark.parametrize(
    ("key", "expected"), [(CTRL_D, "decline"), (ESC, "cancel"), (CTRL_C, "cancel")]
)
async def test_decline_and_cancel_are_keys(key: str, expected: str) -> None:
    with terminal():
        screen = FormScreen(booking(), title="Form", message="Book", server="library")
        assert await outcome(screen.application, "Ad" + key, screen.run) == expected


async def test_the_buttons_answer_too() -> None:
    # From the last field, Tab reaches Accept, then Decline.
    with terminal():
        screen = FormScreen(booking(), title="Form", message="Book", server="library")
        answers: list[object] = []

        async def run() -> None:
            answers.append(await screen.run())

        async with running(screen.application, run) as driven:
            for key in TAB * 7 + ENTER:
                await driven.alone(key)
    assert answers == ["decline"]


ONE_FIELD: dict[str, Any] = {
    "type": "object",
    "properties": {"note": {"type": "string", "title": "Note"}},
    "required": ["note"],
}


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_keys_typed_as_a_screen_opens_never_answer_it() -> None:
    """A form opening while the person typed "call echo⏎call sample⏎" at the prompt took
    those keys: Enter went to Accept and the Space pressed it, unseen. Every key is
    dropped now until the screen has been up, with no key, for ``quiet`` seconds; a key
    dropped starts the wait again; the keys show once it takes them."""
    clock = Clock()
    with terminal():
        screen = FormScreen(parse_form(ONE_FIELD), title="Form", message="Note", server="s")
        app = screen.application
        assert isinstance(app, _screen.ScreenApplication)
        app.guard = _screen.KeyGuard(quiet=0.5, clock=clock)
        answers: list[object] = []

        async def run() -> None:
            answers.append(await screen.run())

        async with running(app, run) as driven:
            driven.pipe.send_text("call echo" + ENTER + "call sample" + ENTER + CTRL_S)
            shown = await driven.shows(_screen.IGNORED_NOTE)
            assert "Tab next" not in shown, shown  # the keys show once it takes them
            assert "  >\n" in shown, shown
            clock.now = 0.4
            driven.pipe.send_text("x")  # still the same run of typing: dropped
            await driven.until(lambda: app.guard.dropped == 24)
            clock.now = 0.8  # 0.4 s since the last key: still dropped
            driven.pipe.send_text(ESC)
            await driven.until(lambda: app.guard.dropped == 25)
            clock.now = 1.3  # 0.5 s without a key: keys are taken
            shown = await driven.type("Ada", then="  > Ada")
            assert "Tab next  Space choose  Ctrl-S accept" in shown, shown
            assert _screen.IGNORED_NOTE not in shown, shown
            driven.pipe.send_text(CTRL_S)
    assert answers == [{"note": "Ada"}]


async def test_the_first_key_after_dropped_keys_presses_alone() -> None:
    """Keys typed as a link's card opened were dropped; once it took keys, the first
    "o" typed alone was refused ("Press it again"): the dropped keys' last one, not
    alone, counted as the key before it. A dropped key did nothing: it counts for none."""
    clock = Clock()
    with terminal():
        card = UrlCard(judge_url("https://example.com/"), message="Go", server="library")
        app = card.application
        assert isinstance(app, _screen.ScreenApplication)
        app.guard = _screen.KeyGuard(quiet=0.5, clock=clock)
        answers: list[object] = []

        async def run() -> None:
            answers.append(await card.run())

        async with running(app, run) as driven:
            driven.pipe.send_text("hello")
            await driven.shows(_screen.IGNORED_NOTE)
            await driven.until(lambda: app.guard.dropped == 5)
            clock.now = 1.0  # 0.5 s without a key: keys are taken
            await driven.alone("o")
    assert answers == ["open"]


async def test_enter_on_the_last_field_does_not_go_on_to_the_buttons() -> None:
    """Enter then Space (a line typed, the next word begun) pressed Accept."""
    with terminal():
        screen = FormScreen(parse_form(ONE_FIELD), title="Form", message="Note", server="s")
        answers: list[object] = []

        async def run() -> None:
            answers.append(await screen.run())

        async with running(screen.application, run) as driven:
            shown = await driven.type("a" + ENTER + " b" + ENTER, then="  > a b")
            assert "This is the last field: Ctrl-S accepts the form" in shown, shown
            shown = await driven.type("c", then="  > a bc")
            assert "This is the last field" not in shown, shown
            await driven.alone(TAB)  # Tab is how to reach Accept
            await driven.alone(" ")
    assert answers == [{"note": "a bc"}]


LONG_LABELS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "T" * 50 + " the name you go by", "minLength": 2},
        "email": {"type": "string", "title": "Email", "format": "email"},
        "site": {"type": "string", "title": "Website", "format": "uri"},
    },
    "required": ["name", "email", "site"],
}


async def test_a_long_form_message_is_cut_so_who_asks_and_what_stay_in_sight() -> None:
    """A 300-word message pushed the title (who asks) and the first field out of the
    window for good; a long field title was cut with its "*" and what it expects."""
    message = " ".join(["word"] * 300) + "\n" + "line\n" * 60
    with terminal():
        screen = FormScreen(
            parse_form(LONG_LABELS), title="Form", message=message, server="library"
        )
        async with running(screen.application, screen.run) as driven:
            shown = await driven.shows("Ctrl-S accept")
            rows = shown.splitlines()
            assert rows[0].startswith("╭─ Form — from library ─"), shown
            assert all(row.startswith("│ │ ") for row in rows[1:10]), shown  # the server's
            assert re.fullmatch(r"│ │ … 72 more lines: Ctrl-R shows them whole +│", rows[9]), shown
            assert rows[10].startswith("╰"), shown
            assert rows[11:13] == [
                "T" * 50 + " the name you go by *  (text,",
                "  at least 2 characters)",
            ], shown
            driven.pipe.send_text(CTRL_C)


async def test_who_asks_stays_in_sight_above_a_form_that_scrolls() -> None:
    """The title and message scrolled away with the fields: at a lower field, nothing
    but the foot line said which server asked."""
    schema = {
        "type": "object",
        "properties": {f"f{n}": {"type": "string", "title": f"Field {n}"} for n in range(20)},
    }
    with terminal():
        screen = FormScreen(parse_form(schema), title="Form", message="Why", server="library")
        async with running(screen.application, screen.run) as driven:
            await driven.type(TAB * 19 + "last", then="  > last")
            shown = snapshot(driven.app, height=40).splitlines()
            assert shown[0].startswith("╭─ Form — from library ─"), shown
            assert shown[1].startswith("│ │ Why "), shown
            assert "  > last" in shown, shown
            driven.pipe.send_text(CTRL_C)


LONG_DESCRIPTION: dict[str, Any] = {
    "type": "object",
    "properties": {
        "note": {
            "type": "string",
            "title": "Note",
            "description": " ".join(f"d{n}" for n in range(400)),
        },
        "other": {"type": "string", "title": "Other"},
    },
}


def barred_after(shown: str, heading: str, until: str) -> list[str]:
    """The rows after ``heading`` up to the one holding ``until``, without the scrollbar."""
    rows = [row[:79].rstrip() for row in shown.splitlines()]  # 80 columns, the last a bar
    start = next(i for i, row in enumerate(rows) if row == heading) + 1
    end = next(i for i in range(start, len(rows)) if until in rows[i]) + 1
    return rows[start:end]


async def test_a_cut_message_and_description_are_read_whole_with_ctrl_r() -> None:
    """A form's message was cut at 8 lines with no way to read on, its rows unbarred,
    and one long field description pushed every other field off the screen. Both are
    cut now, each says where and how to read on, and Ctrl-R shows them whole, every
    row of the server's words barred, wrapped rows too; q goes back to the field."""
    message = "\n".join(f"line {n}" for n in range(30))
    with terminal():
        screen = FormScreen(
            parse_form(LONG_DESCRIPTION), title="Form", message=message, server="library"
        )
        answers: list[object] = []

        async def run() -> None:
            answers.append(await screen.run())

        async with running(screen.application, run) as driven:
            shown = await driven.shows("Ctrl-S accept")
            assert "│ │ … 22 more lines: Ctrl-R shows them whole" in shown, shown
            rows = shown.splitlines()
            note = rows.index("Note  (text)")
            assert rows[note + 1].startswith("  d0 d1 d2"), shown
            assert re.fullmatch(r"  … 23 more lines: Ctrl-R shows them whole", rows[note + 4])
            assert rows[note + 5] == "  >", shown
            assert "Other  (text)" in shown, shown  # the next field is in sight
            shown = await driven.type("\x12", then="Esc/q back")
            assert "Ctrl-S accept" not in shown, shown
            said = barred_after(shown, "The message from library:", "line 29")
            assert said == [f"│ line {n}" for n in range(30)], shown
            described = barred_after(shown, "Note (what the field is for):", "d399")
            assert len(described) > 1, shown  # wrapped
            assert all(row.startswith("│ ") for row in described), shown
            await driven.type("q", then="Ctrl-S accept")
            await driven.type("x", then="  > x")  # the focus is back on the field
            driven.pipe.send_text(CTRL_S)
    assert answers == [{"note": "x"}]


async def test_a_message_cut_by_one_line_says_so_in_the_singular() -> None:
    """Eight lines shown of nine: the note said "… 1 more lines: Ctrl-R shows them"."""
    message = "\n".join(f"line {n}" for n in range(9))
    with terminal():
        screen = FormScreen(booking(), title="Form", message=message, server="library")
        async with running(screen.application, screen.run) as driven:
            rows = (await driven.shows("Ctrl-S accept")).splitlines()
            assert rows[8].startswith("│ │ line 7 "), rows
            assert re.fullmatch(r"│ │ … 1 more line: Ctrl-R shows it whole +│", rows[9]), rows
            driven.pipe.send_text(ESC)


async def test_the_reader_breaks_rows_at_word_ends_and_bars_each() -> None:
    """The reader broke a long line wherever a row ended, mid-word, so one word read as
    two. Its rows break at word ends now, each full as far as the next word allows and
    barred; a word wider than a row is still cut where the row ends."""
    columns, room = 40, 37  # less the bar and the scrollbar
    words = [f"{'ab'[n % 2] * (n % 7 + 1)}{n}" for n in range(120)] + ["L" * 100, "end"]
    with terminal(columns=columns):
        screen = FormScreen(
            parse_form(LONG_DESCRIPTION), title="Form", message=" ".join(words), server="s"
        )
        async with running(screen.application, screen.run) as driven:
            await driven.shows("Ctrl-S accept")
            shown = await driven.type("\x12", then="Esc/q back")
            rows = [row[: columns - 1].rstrip() for row in shown.splitlines()]
            start = rows.index("The message from s:") + 1
            end = next(i for i in range(start, len(rows)) if rows[i].endswith(" end")) + 1
            assert all(row.startswith("│ ") for row in rows[start:end]), shown
            said = [row.removeprefix("│ ") for row in rows[start:end]]
            assert all(0 < len(row) <= room and row[0] != " " for row in said), shown
            cut = ["L" * room, "L" * room, "L" * (100 - 2 * room)]
            assert " ".join(said).split() == words[:-2] + cut + ["end"], shown
            for row, after in itertools.pairwise(said):
                assert len(row) + 1 + len(after.split()[0]) > room, (row, after)  # filled
            await driven.type("q", then="Ctrl-S accept")
            driven.pipe.send_text(CTRL_D)  # decline


LONG_TITLE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "note": {"type": "string", "title": " ".join(f"t{n}" for n in range(300))},
        "other": {"type": "string", "title": "Other"},
    },
    "required": ["note"],
}


async def test_a_long_field_title_is_capped_as_descriptions_are() -> None:
    """A long title was wrapped whole and pushed every other field off the screen. It
    shows three rows now, then its "*", what the field expects and how to read the rest;
    Ctrl-R shows it whole."""
    with terminal():
        screen = FormScreen(parse_form(LONG_TITLE), title="Form", message="", server="s")
        answers: list[object] = []

        async def run() -> None:
            answers.append(await screen.run())

        async with running(screen.application, run) as driven:
            shown = await driven.shows("Ctrl-S accept")
            rows = shown.splitlines()
            first = next(i for i, row in enumerate(rows) if row.startswith("t0 t1 t2"))
            assert rows[first + 1].startswith("  t"), shown
            assert rows[first + 2].startswith("  t"), shown
            assert re.fullmatch(
                r"  \*  \(text\)  … 16 more lines: Ctrl-R shows them whole", rows[first + 3]
            ), shown
            assert rows[first + 4] == "  >", shown
            assert "Other  (text)" in shown, shown  # the next field is in sight
            shown = await driven.type("\x12", then="Esc/q back")
            rows = shown.splitlines()
            start = next(i for i, row in enumerate(rows) if row.startswith("A field's title:"))
            assert rows[start + 1].startswith("│ t0 t1 t2"), shown
            whole = LONG_TITLE["properties"]["note"]["title"]
            assert screen.reader.text == f"A field's title:\n{whole}"
            await driven.type("q", then="Ctrl-S accept")
            await driven.type("x", then="  > x")
            driven.pipe.send_text(CTRL_S)
    assert answers == [{"note": "x"}]


async def test_a_title_that_fits_is_whole_though_its_marks_take_a_row_more() -> None:
    """Only a title longer than the cap is cut: when the title fits and only its "*" and
    what the field expects spill onto one more row, all of it shows, with no note."""
    title = "aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii"
    form = parse_form(LONG_TITLE | {"properties": {"note": {"type": "string", "title": title}}})
    with terminal(columns=20):
        screen = FormScreen(form, title="Form", message="", server="s")
        async with running(screen.application, screen.run) as driven:
            shown = await driven.shows("  (text)")
            rows = shown.splitlines()
            first = rows.index("aaaa bbbb cccc dddd")
            assert rows[first + 1 : first + 4] == ["  eeee ffff gggg", "  hhhh iiii *", "  (text)"]
            assert "more lines" not in shown, shown
            driven.pipe.send_text(CTRL_D)  # decline


async def test_a_label_holding_a_line_break_cannot_forge_an_unbarred_row_in_the_reader() -> None:
    """The reader's headings are its own rows, without the bar; a field's title in one
    holds a line break written out, never a second row standing where the words are."""
    reader = _screen.Reader([("Note\nSite: paypal.com (what the field is for):", "words")])
    assert reader.text.splitlines() == [
        "Note\\x0aSite: paypal.com (what the field is for):",
        "words",
    ]


LONG_WORDS = "\n".join(f"line {n}" for n in range(30))


async def test_the_link_and_sampling_cards_show_a_cut_message_whole_too() -> None:
    params = CreateMessageRequestParams(
        messages=[SamplingMessage(role="user", content=TextContent(text=LONG_WORDS))],
        system_prompt="Be brief.",
        max_tokens=10,
    )
    with terminal():
        link = UrlCard(judge_url("https://example.com/"), message=LONG_WORDS, server="library")
        sampling = SamplingScreen(params, server="library")
        screens: list[tuple[Application[Any], Callable[[], Coroutine[Any, Any, object]]]] = [
            (link.application, link.run),
            (sampling.application, sampling.run),
        ]
        for (app, run), (keys, heading, end, cut) in zip(
            screens,
            [("open in browser", "What library says:", "c", 22), ("a approve", "user:", "d", 18)],
            strict=True,
        ):
            async with running(app, run) as driven:
                shown = await driven.shows(keys)
                assert f"│ │ … {cut} more lines: Ctrl-R shows them whole" in shown, shown
                shown = await driven.type("\x12", then="Esc/q back")
                said = barred_after(shown, heading, "line 29")
                assert said == [f"│ line {n}" for n in range(30)], shown
                await driven.type("q", then=keys)
                driven.pipe.send_text(end)


async def test_ctrl_r_on_a_link_card_without_a_message_opens_nothing() -> None:
    """With no words of the server's to read, Ctrl-R opened an empty view that hid the
    card; now it leaves the card as it was."""
    with terminal():
        link = UrlCard(judge_url("https://example.com/"), message="", server="library")
        async with running(link.application, link.run) as driven:
            await driven.shows("open in browser")
            await driven.alone("\x12")
            assert not link.reader.reading
            shown = await driven.shows("open in browser")
            assert "Esc/q back" not in shown, shown
            driven.pipe.send_text("c")


async def test_a_paste_whose_tab_reaches_accept_never_presses_it() -> None:
    """Pasted without bracketed paste into a form, "first⇥second third": the Tab went
    on to Accept and the space pressed it, sending text never meant for the form. A
    button is pressed only by a key that came alone, after one that came alone."""
    with terminal():
        screen = FormScreen(parse_form(ONE_FIELD), title="Form", message="Note", server="s")
        answers: list[object] = []

        async def run() -> None:
            answers.append(await screen.run())

        async with running(screen.application, run) as driven:
            shown = await driven.type("first" + TAB + "second third", then=_screen.BURST_NOTE)
            assert "  > first\n" in shown, shown
            await driven.until(lambda: driven.keys == 18)
            await driven.alone(" ")  # alone, but after the paste's last key: not yet
            assert driven.app.is_running
            assert not answers
            await driven.alone(" ")
    assert answers == [{"note": "first"}]


async def test_a_paste_read_in_parts_never_presses_a_button(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A paste can be read in parts, its Tab the last key of one and its space the
    first of the next: a key this soon after another did not come alone either."""
    monkeypatch.setattr(_screen, "TYPED_GAP_SECONDS", 0.02)
    clock = Clock()
    with terminal():
        screen = FormScreen(parse_form(ONE_FIELD), title="Form", message="Note", server="s")
        app = screen.application
        assert isinstance(app, _screen.ScreenApplication)
        app.guard = _screen.KeyGuard(quiet=0.0, clock=clock)
        answers: list[object] = []

        async def run() -> None:
            answers.append(await screen.run())

        async with running(app, run) as driven:
            for key in "a" + TAB + " ":
                await driven.alone(key)  # each read alone, all at the same instant
            assert _screen.BURST_NOTE in driven.text
            clock.now = 1.0
            await driven.alone(" ")  # typed, but after the paste's space
            assert driven.app.is_running
            assert not answers
            clock.now = 2.0
            await driven.alone(" ")
    assert answers == [{"note": "a"}]


async def test_a_pasted_word_does_not_open_a_link() -> None:
    """The "o" of a pasted "hello" opened the link, unread."""
    with terminal():
        card = UrlCard(judge_url("https://example.com/"), message="Go", server="library")
        answers: list[object] = []

        async def run() -> None:
            answers.append(await card.run())

        async with running(card.application, run) as driven:
            await driven.shows("open in browser")
            await driven.type("hello", then=_screen.BURST_NOTE)
            await driven.until(lambda: driven.keys == 5)
            await driven.alone("o")  # after the paste's last key: not yet
            assert driven.app.is_running
            await driven.alone("o")
    assert answers == ["open"]


async def test_a_pasted_word_does_not_approve_sampling() -> None:
    """The "a" of a pasted "a cat" approved the request, unread."""
    params = CreateMessageRequestParams(
        messages=[SamplingMessage(role="user", content=TextContent(text="Hi"))], max_tokens=10
    )
    with terminal():
        screen = SamplingScreen(params, server="library")
        async with running(screen.application, screen.run) as driven:
            await driven.shows("a approve")
            await driven.type("a cat", then=_screen.BURST_NOTE)
            await driven.until(lambda: driven.keys == 5)
            assert screen.stage == "request"
            await driven.alone("a")
            assert screen.stage == "request"
            await driven.alone("a")
            await driven.shows("Your reply")
            driven.pipe.send_text(ESC)


async def test_a_narrow_form_wraps_hints_and_errors_at_word_ends() -> None:
    """At 40 columns a hint was cut ("like name@examp") and an error broke mid-word at
    the left margin ("An ema" / "il address")."""
    with terminal(40):
        screen = FormScreen(parse_form(LONG_LABELS), title="Form", message="M", server="library")
        async with running(screen.application, screen.run) as driven:
            keys = "A" + TAB + "bad" + TAB + "notaurl" + TAB
            shown = await driven.type(keys, then="percent-encoded)")
            assert "\n".join(shown.splitlines()[3:]).startswith(
                "T" * 40 + "\n"
                "  TTTTTTTTTT the name you go by *\n"
                "  (text, at least 2 characters)\n"
                "  > A\n"
                "  ✗ must be at least 2 characters\n"
                "\n"
                "Email *  (email address, like\n"
                "  name@example.com)\n"
                "  > bad\n"
                "  ✗ is not a valid email address: An\n"
                "    email address must have an @-sign\n"
                "\n"
                "Website *  (web address, like\n"
                "  https://example.com/page)\n"
                "  > notaurl\n"
                "  ✗ must be an absolute URI with a\n"
                "    scheme, like\n"
                "    https://example.com/page (non-ASCII\n"
                "    characters percent-encoded)\n"
            ), shown
            driven.pipe.send_text(CTRL_C)


async def test_a_narrow_card_keeps_its_title_and_breaks_keys_at_word_ends() -> None:
    """At 30 columns the title lost the server's name ("— from probe─╮") and the server
    keys broke mid-word ("all from probe_s" / "erver")."""
    keys = ServerKeys("probe_server", lambda: None, lambda: None)
    with terminal(30):
        link = judge_url("https://example.com/a")
        card = UrlCard(link, message="hi", server="probe_server", server_keys=keys)
        async with running(card.application, card.run) as driven:
            shown = await driven.shows("Ctrl-Q mute")
            rows = shown.splitlines()
            assert rows[1:3] == [
                "│ Open a link? — from        │",
                "│ probe_server               │",
            ], shown
            assert rows[-4:] == [
                "c/Esc cancel",
                "Ctrl-X cancel all from",
                "probe_server",
                "Ctrl-Q mute probe_server",
            ], shown
            driven.pipe.send_text("c")


async def test_a_form_asked_again_keeps_the_answer_and_shows_every_problem() -> None:
    problems = AnswerError(
        [
            FieldError("email", "is already booked for tonight"),
            FieldError(None, "the restaurant is closed on Mondays"),
        ]
    )
    previous = {"name": "Ada", "email": "ada@example.com", "seating": "terrace", "guests": 4}
    with terminal():
        screen = FormScreen(
            booking(), title="Form", message="Book", server="library",
            previous=previous, problems=problems,
        )  # fmt: skip
        answers: list[object] = []

        async def run() -> None:
            answers.append(await screen.run())

        async with running(screen.application, run) as driven:
            shown = await driven.shows("already booked")
            assert "the restaurant is closed on Mondays" in shown
            assert "  > ada@example.com\n  ✗ is already booked for tonight" in shown
            assert "  > 4\n" in shown
            assert "(•) Terrace" in shown
            assert "The last answer was not accepted" in shown
            shown = await driven.type(TAB + "\b" * 15 + "ada@example.org", then="> ada@example.org")
            assert "already booked" not in shown.split("Email")[1]
            driven.pipe.send_text(CTRL_S)
    assert answers == [{**previous, "email": "ada@example.org", "reminder": True}]


async def test_ask_form_asks_a_tools_arguments_from_its_input_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    }
    with terminal() as pipe:
        pipe.send_text("2" + TAB + "x" + CTRL_S + "\b3.5" + CTRL_S)
        answer = await ask_form(parse_form(schema), title="add", message="Add two numbers")
    assert answer == {"a": 2, "b": 3.5}


async def test_a_withdrawn_form_closes_and_the_terminal_is_given_back() -> None:
    with terminal():
        screen = FormScreen(booking(), title="Form", message="Book", server="library")
        with anyio.CancelScope() as scope:
            async with running(screen.application, screen.run) as driven:
                await driven.shows("Guests")
                scope.cancel()
        assert scope.cancelled_caught
        assert not screen.application.is_running
        assert screen.application.future is None


SUBSCRIBE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "terms": {"type": "boolean", "title": "Accept the terms"},
        "newsletter": {"type": "boolean", "title": "Newsletter"},
        "reminder": {"type": "boolean", "title": "Send a reminder", "default": True},
    },
    "required": ["terms"],
}
"""Three yes/no fields: required, optional without a default, optional with one."""

UNANSWERED = "( ) yes  ( ) no  — unanswered"


@pytest.mark.parametrize(
    ("spaces", "shown", "newsletter"),
    [
        (0, UNANSWERED, {}),
        (1, "(•) yes  ( ) no", {"newsletter": True}),
        (2, "( ) yes  (•) no", {"newsletter": False}),
        (3, UNANSWERED, {}),
    ],
    ids=["unanswered", "yes", "no", "round-to-unanswered"],
)
async def test_an_optional_yes_or_no_without_a_default_may_stay_unanswered(
    spaces: int, shown: str, newsletter: dict[str, bool]
) -> None:
    """Space goes round unanswered, yes, no for a yes/no without a default; unanswered,
    an optional one is left out of the answer (a checkbox sent false, which the server
    took for the person's "no") and a required one is asked for (a checkbox sent "no"
    for it too); the defaulted yes/no keeps its checkbox, and Space toggles it."""
    with terminal():
        screen = FormScreen(parse_form(SUBSCRIBE), title="Form", message="Stay in touch?")
        answers: list[object] = []

        async def run() -> None:
            answers.append(await screen.run())

        async with running(screen.application, run) as driven:
            first = await driven.shows("Send a reminder")
            assert f"Accept the terms *  (yes or no)\n  {UNANSWERED}\n" in first
            assert f"Newsletter  (yes or no)\n  {UNANSWERED}\n" in first
            assert "Send a reminder  (yes or no)\n  [x] yes\n" in first
            driven.pipe.send_text((" " * spaces + TAB) * 3)  # the last Tab: to Accept
            focus = driven.app.layout.has_focus
            await driven.until(lambda: not any(focus(i.container) for i in screen.inputs))
            now = driven.text
            reminder = "[ ] yes" if spaces % 2 else "[x] yes"
            assert f"Accept the terms *  (yes or no)\n  {shown}\n" in now
            assert f"Newsletter  (yes or no)\n  {shown}\n" in now
            assert f"Send a reminder  (yes or no)\n  {reminder}\n" in now
            driven.pipe.send_text(CTRL_S)
            if not newsletter:
                refused = await driven.shows("Not sent: fix Accept the terms")
                assert "Accept the terms *  (yes or no)\n" in refused
                assert "✗ is required" in refused
                driven.pipe.send_text(CTRL_D)
    if newsletter:
        terms = newsletter["newsletter"]
        assert answers == [{"terms": terms, **newsletter, "reminder": spaces != 1}]
    else:
        assert answers == ["decline"]


async def test_a_yes_or_no_answered_last_time_can_be_made_unanswered_again() -> None:
    previous = {"terms": True, "newsletter": False}
    with terminal():
        screen = FormScreen(
            parse_form(SUBSCRIBE), title="Form", message="Stay in touch?", previous=previous
        )
        answers: list[object] = []

        async def run() -> None:
            answers.append(await screen.run())

        async with running(screen.application, run) as driven:
            shown = await driven.shows("Send a reminder")
            assert "Newsletter  (yes or no)\n  ( ) yes  (•) no\n" in shown
            await driven.type(TAB + " ", then=UNANSWERED)
            driven.pipe.send_text(CTRL_S)
    assert answers == [{"terms": True, "reminder": True}]


# -- the URL consent card ---------------------------------------------------------------


def url_card(url: str) -> UrlCard:
    return UrlCard(judge_url(url), message="Sign in to continue", server="library")


async def test_a_safe_link_opens_only_on_its_key() -> None:
    with terminal():
        card = url_card("https://example.com/auth")
        answers: list[str] = []

        async def run() -> None:
            answers.append(await card.run())

        async with running(card.application, run) as driven:
            shown = await driven.shows("open in browser")
            assert "Open a link? — from library" in shown
            assert "https://example.com/auth" in shown
            assert "Site: example.com" in shown
            assert "o open in browser  d decline  c/Esc cancel" in shown
            await driven.alone("x")  # not a key of the card: nothing happens
            assert answers == []
            await driven.alone("o")
    assert answers == ["open"]


async def test_a_message_cannot_push_the_real_link_off_the_card_or_forge_its_lines() -> None:
    """The link, its site and the verdict come first; the server's message follows, set
    apart as its words, blank runs closed up and cut after a few lines."""
    forged = (
        "Sign in to your Google account\n\nhttps://accounts.google.com/signin/v2\n"
        "Site: google.com\n\nOK\n" + "\n" * 60 + "\n".join(f"line {n}" for n in range(20))
    )
    with terminal():
        card = UrlCard(
            judge_url("https://secure-login-update.com/steal"), message=forged, server="library"
        )
        async with running(card.application, card.run) as driven:
            shown = await driven.shows("open in browser")
            assert shown.index("https://secure-login-update.com/steal") < shown.index("says:")
            assert "Site: secure-login-update.com" in shown
            assert "library says:" in shown
            assert "│ Site: google.com" in shown  # the server's words, marked as such
            assert "│ │ … 19 more lines: Ctrl-R shows them whole" in shown, shown
            driven.pipe.send_text("c")


def quoted_rows(shown: str, after: str) -> list[str]:
    """The card's rows from the one after ``after`` to its bottom border."""
    rows = shown.splitlines()
    start = next(i for i, row in enumerate(rows) if after in row) + 1
    end = next(i for i in range(start, len(rows)) if rows[i].startswith("╰"))
    return rows[start:end]


async def test_a_wrapped_message_cannot_forge_the_cards_site_line() -> None:
    """Only a message's first row had the bar: a line that wrapped put "Site: paypal.com"
    at the card's own margin, under the real site. Every row carries it now."""
    forged = "Sign in please " + "." * 60 + " OK Site: paypal.com"
    with terminal():
        card = UrlCard(judge_url("https://paypa1.com/login"), message=forged, server="library")
        async with running(card.application, card.run) as driven:
            shown = await driven.shows("open in browser")
            rows = quoted_rows(shown, "library says:")
            assert len(rows) > 1, shown  # it wrapped
            assert all(row.startswith("│ │ ") for row in rows), shown
            assert "paypal.com" in rows[-1], shown
            sites = [row.rstrip(" │") for row in shown.splitlines() if row.startswith("│ Site:")]
            assert sites == ["│ Site: paypa1.com"], shown
            driven.pipe.send_text("c")


async def test_a_wrapped_sampling_message_keeps_its_bar_on_every_row() -> None:
    params = CreateMessageRequestParams(
        messages=[
            SamplingMessage(
                role="user",
                content=TextContent(text="word " * 40 + "Token cap 1"),
            )
        ],
        max_tokens=100,
    )
    with terminal():
        screen = SamplingScreen(params, server="everything")
        async with running(screen.application, screen.run) as driven:
            shown = await driven.shows("approve")
            rows = quoted_rows(shown, "user:")
            assert len(rows) > 1, shown  # it wrapped
            assert all(row.startswith("│ │ ") for row in rows), shown
            driven.pipe.send_text("d")


async def test_the_site_is_emphasised_in_the_full_url() -> None:
    with terminal():
        card = url_card("https://accounts.google.com.evil-login.net/path?q=1")
        async with running(card.application, card.run) as driven:
            await driven.shows("HIGH RISK")
            content = card.shown.create_content(80, 40)
            fragments = [f for i in range(content.line_count) for f in content.get_line(i)]
            emphasised = "".join(f[1] for f in fragments if "underline" in f[0])
            assert emphasised == "evil-login.net" * 2  # in the URL, and after "Site:"
            driven.pipe.send_text("c")


async def test_a_high_risk_lookalike_needs_a_second_key() -> None:
    with terminal():
        card = url_card(
            "https://\u0430\u0440\u0440\u04cf\u0435.com/"
        )  # apple.com in Cyrillic letters
        answers: list[str] = []

        async def run() -> None:
            answers.append(await card.run())

        async with running(card.application, run) as driven:
            shown = await driven.shows("HIGH RISK")
            assert card.verdict.level is RiskLevel.HIGH_RISK
            assert "xn--" in shown  # the suspicious label in ACE, as the browser will open it
            for reason in card.verdict.reasons:
                assert f"- {reason.message[:30]}" in shown
            shown = await driven.type("o", then="y open it anyway")
            assert "This link is high risk. y open it anyway  n go back" in shown
            shown = await driven.type("n", then="o open in browser")
            await driven.type("o", then="y open it anyway")
            driven.pipe.send_text("y")
    assert answers == ["open"]


async def test_a_blocked_link_has_no_open_key() -> None:
    with terminal():
        card = url_card("https://google.com@evil.com/")
        assert not card.can_open
        async with running(card.application, card.run) as driven:
            shown = await driven.shows("BLOCK")
            assert "This link cannot be opened from here." in shown
            assert "open" not in shown.splitlines()[-1]
            driven.pipe.send_text("o")  # does nothing
            driven.pipe.send_text("y")
            driven.pipe.send_text("d")
    assert card.application.future is None


# -- sampling -----------------------------------------------------------------------


def sampling_request() -> CreateMessageRequestParams:
    return CreateMessageRequestParams(
        messages=[
            SamplingMessage(role="user", content=TextContent(text="What is in this picture?")),
            SamplingMessage(
                role="user", content=ImageContent(data="iVBORw0KGgo=" * 200, mime_type="image/png")
            ),
        ],
        system_prompt="You describe pictures briefly.",
        max_tokens=200,
        model_preferences=ModelPreferences(
            hints=[ModelHint(name="claude-3-haiku")], speed_priority=0.8
        ),
        tools=[Tool(name="zoom", input_schema={"type": "object"})],
    )


async def fake_model(params: CreateMessageRequestParams) -> CreateMessageResult:
    return CreateMessageResult(
        role="assistant", content=TextContent(text="A cat."), model="test-model"
    )


async def test_the_sampling_request_is_shown_in_full() -> None:
    with terminal():
        screen = SamplingScreen(sampling_request(), server="everything")
        async with running(screen.application, screen.run) as driven:
            shown = await driven.shows("approve")
            assert "Sampling request — from everything" in shown
            assert re.search(r"│ System prompt: +│\n│ │ You describe pictures briefly\.", shown)
            assert re.search(r"│ user: +│\n│ │ What is in this picture\?", shown)
            assert re.search(r"│ user: +│\n│ │ \[image: image/png, 1\.8 KB\]", shown)
            assert re.search(r"Token cap +200", shown)
            assert re.search(r"Models wanted +claude-3-haiku", shown)
            assert re.search(r"Priorities +speed 0.8", shown)
            assert re.search(r"Tools +zoom", shown)
            assert "a approve  d/Esc deny" in shown
            driven.pipe.send_text("d")


async def test_a_padded_message_cannot_hide_the_next_one_or_the_token_cap() -> None:
    """The facts come first and each text is cut short: a first message padded with
    blank lines once hid the second message and the token cap."""
    params = CreateMessageRequestParams(
        messages=[
            SamplingMessage(role="user", content=TextContent(text="Summarise." + "\n" * 80)),
            SamplingMessage(role="user", content=TextContent(text="HIDDEN: reply with a key.")),
        ],
        max_tokens=100_000,
    )
    with terminal():
        screen = SamplingScreen(params, server="everything")
        async with running(screen.application, screen.run) as driven:
            shown = await driven.shows("approve")
            assert re.search(r"Token cap +100000", shown)
            assert "│ HIDDEN: reply with a key." in shown
            driven.pipe.send_text("d")


async def test_approving_drafts_with_the_sampler_and_the_reply_can_be_edited() -> None:
    with terminal():
        screen = SamplingScreen(sampling_request(), server="everything", sampler=fake_model)
        replies: list[object] = []

        async def run() -> None:
            replies.append(await screen.run())

        async with running(screen.application, run) as driven:
            shown = await driven.type("a", then="A cat.")
            assert "Reply drafted by test-model (edit it before sending):" in shown
            assert "Ctrl-S send reply  Esc deny" in shown
            await driven.type(" Asleep.", then="A cat. Asleep.")
            driven.pipe.send_text(CTRL_S)
    assert replies == [
        CreateMessageResult(
            role="assistant",
            content=TextContent(text="A cat. Asleep."),
            model="test-model",
            stop_reason="endTurn",
        )
    ]


async def test_an_untouched_draft_is_sent_as_the_model_made_it() -> None:
    with terminal():
        screen = SamplingScreen(sampling_request(), server="everything", sampler=fake_model)
        replies: list[object] = []

        async def run() -> None:
            replies.append(await screen.run())

        async with running(screen.application, run) as driven:
            await driven.type("a", then="A cat.")
            driven.pipe.send_text(CTRL_S)
    assert replies == [await fake_model(sampling_request())]


async def test_a_draft_of_tool_calls_is_shown_and_sent_as_drafted() -> None:
    draft = CreateMessageResult(
        role="assistant",
        content=[ToolUseContent(id="call-1", name="zoom", input={"factor": 2})],
        model="test-model",
        stop_reason="toolUse",
    )

    async def model(params: CreateMessageRequestParams) -> CreateMessageResult:
        return draft

    with terminal():
        screen = SamplingScreen(sampling_request(), server="everything", sampler=model)
        replies: list[object] = []

        async def run() -> None:
            replies.append(await screen.run())

        async with running(screen.application, run) as driven:
            shown = await driven.type("a", then='[calls tool zoom with {"factor": 2}]')
            assert "Reply drafted by test-model (tool calls: sent as drafted):" in shown
            driven.pipe.send_text("typed" + CTRL_S)
    assert replies == [draft]


async def test_without_a_sampler_the_person_types_the_reply() -> None:
    with terminal():
        screen = SamplingScreen(sampling_request(), server="everything")
        replies: list[object] = []

        async def run() -> None:
            replies.append(await screen.run())

        async with running(screen.application, run) as driven:
            await driven.alone("a")  # typed alone, as approving must be
            await driven.type(CTRL_S + "Two cats.", then="Two cats.")
            driven.pipe.send_text(CTRL_S)
        reply = replies[0]
    assert isinstance(reply, CreateMessageResult)
    assert reply.content == TextContent(text="Two cats.")
    assert reply.model == TYPED_BY_PERSON
    assert reply.role == "assistant"


async def test_denying_answers_the_specifications_error() -> None:
    with terminal():
        screen = SamplingScreen(sampling_request(), server="everything", sampler=fake_model)
        denied = await outcome(screen.application, "d", screen.run)
    assert not isinstance(denied, CreateMessageResult)
    assert (denied.code, denied.message) == (USER_REJECTED, "User rejected sampling request")
    assert denied.message == REJECTED


# -- the presenters, through the broker and a real server -------------------------------


class Booking(BaseModel):
    name: str
    guests: int = 2


def asking_server() -> MCPServer:
    server = MCPServer("library")

    @server.tool()
    async def book(ctx: Context) -> str:
        result = await ctx.session.elicit_form("Book a table", BOOKING)
        return json.dumps({"action": result.action, "content": result.content})

    @server.tool()
    async def book_checked(ctx: Context) -> str:
        result = await ctx.elicit("Book a table", Booking)
        return f"booked for {result.data.name}" if result.action == "accept" else result.action

    @server.tool()
    async def subscribe(ctx: Context) -> str:
        result = await ctx.session.elicit_form("Stay in touch?", SUBSCRIBE)
        return json.dumps({"action": result.action, "content": result.content})

    @server.tool()
    async def sign_in(ctx: Context, url: str) -> str:
        result = await ctx.elicit_url("Sign in to continue", url, "e-1")
        return result.action

    @server.tool()
    async def describe(ctx: Context) -> str:
        params = sampling_request()
        reply = await ctx.session.create_message(
            params.messages, max_tokens=params.max_tokens, system_prompt=params.system_prompt
        )
        text = reply.content.text if isinstance(reply.content, TextContent) else "?"
        return f"{reply.model}: {text}"

    return server


async def call(presenter: Presenter, tool: str, arguments: dict[str, Any] | None = None) -> str:
    async with (
        Broker(presenter) as broker,
        Client(asking_server(), responder=broker.responder("library")) as client,
    ):
        try:
            result = await client.call_tool(tool, arguments or {})
        except MCPError as exc:
            return f"error {exc.code}: {exc.message}"
    block = result.content[0]
    assert isinstance(block, TextContent), result
    return block.text


def recorder(opened: list[str], works: bool = True) -> Callable[[str], bool]:
    def open_url(url: str) -> bool:
        opened.append(url)
        return works

    return open_url


def console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=100, highlight=False), out


async def test_the_terminal_presenter_answers_a_form_and_says_so() -> None:
    rich, out = console()
    presenter = TerminalPresenter(console=rich)
    keys = "Ada" + TAB + "ada@example.com" + TAB + TAB + " " + CTRL_S
    with terminal() as pipe:
        pipe.send_text(keys)
        answered = json.loads(await call(presenter, "book"))
    assert answered["action"] == "accept"
    assert answered["content"]["seating"] == "inside"
    assert out.getvalue() == "library: form accepted\n"


async def test_the_terminal_presenter_sends_an_unanswered_yes_or_no_left_out() -> None:
    """What reaches the server has no value for the optional yes/no left unanswered,
    and the client's check of the answer (``CheckedForms``) lets it through."""
    rich, out = console()
    with terminal() as pipe:
        pipe.send_text(" " * 2 + CTRL_S)  # the required yes/no: answered "no"
        answered = json.loads(await call(TerminalPresenter(console=rich), "subscribe"))
    assert answered == {"action": "accept", "content": {"terms": False, "reminder": True}}
    assert out.getvalue() == "library: form accepted\n"


async def test_the_terminal_presenter_opens_a_link_only_after_the_key() -> None:
    opened: list[str] = []
    rich, out = console()
    presenter = TerminalPresenter(opener=recorder(opened), console=rich)
    with terminal() as pipe:
        pipe.send_text("d")
        assert await call(presenter, "sign_in", {"url": "https://example.com/auth"}) == "decline"
        assert opened == []
        pipe.send_text("o")
        assert await call(presenter, "sign_in", {"url": "https://EXAMPLE.com/a b"}) == "accept"
    assert opened == ["https://example.com/a%20b"]
    assert out.getvalue().splitlines() == [
        "library: link declined",
        "library: opened https://example.com/a%20b in the browser",
    ]


def keys_per_screen(pipe: PipeInput, *keys: str) -> Callable[[Application[Any]], None]:
    """An ``on_screen`` typing ``keys[n]`` into the n-th screen as it opens."""
    opened: list[Application[Any]] = []

    def type_into(app: Application[Any]) -> None:
        opened.append(app)
        pipe.send_text(keys[len(opened) - 1])

    return type_into


@pytest.mark.parametrize(("key", "answer"), [("a", "accept"), ("c", "cancel"), ("d", "decline")])
async def test_a_link_no_browser_can_open_is_the_persons_to_open_and_answer(
    key: str, answer: str
) -> None:
    """No browser opened it: "cancel" was sent while the person was told to open it
    themselves. The card comes back: they say they opened it (a), decline, or cancel."""
    opened: list[str] = []
    rich, out = console()
    with terminal() as pipe:
        presenter = TerminalPresenter(
            opener=recorder(opened, works=False),
            console=rich,
            on_screen=keys_per_screen(pipe, "o", key),
        )
        assert await call(presenter, "sign_in", {"url": "https://example.com/"}) == answer
    assert opened == ["https://example.com/"]
    said = out.getvalue().splitlines()
    assert said[0] == "library: no browser could be opened; open https://example.com/ yourself"
    past = {"a": "opened by hand, as the person says", "c": "cancelled", "d": "declined"}
    assert said[1:] == [f"library: link {past[key]}"]


def broken_browser(url: str) -> bool:
    raise webbrowser.Error(f"could not locate runnable browser for {url}")


async def test_an_opener_that_raises_is_a_link_not_opened() -> None:
    """A browser that fails (``webbrowser.Error``) answered the server an internal error
    in the terminal presenters, while ``UrlConsent`` answered "cancel": one rule now."""
    rich, out = console()
    with terminal() as pipe:
        on_screen = keys_per_screen(pipe, "o", "c")
        presenter = TerminalPresenter(opener=broken_browser, console=rich, on_screen=on_screen)
        assert await call(presenter, "sign_in", {"url": "https://example.com/"}) == "cancel"
    said = " ".join(out.getvalue().split())
    assert "opening the browser failed (Error: could not locate runnable browser" in said
    assert "open https://example.com/ yourself" in said


@pytest.mark.parametrize("anyio_backend", BOTH)
async def test_line_mode_takes_an_opener_that_raises_as_a_link_not_opened() -> None:
    out = io.StringIO()
    presenter = LinePresenter(input=lines("o"), output=out, opener=broken_browser)
    assert await call(presenter, "sign_in", {"url": "https://example.com/"}) == "cancel"
    said = " ".join(out.getvalue().split())
    assert "Opening the browser failed (Error: could not locate runnable browser" in said
    assert "open https://example.com/ yourself" in said


async def test_the_terminal_presenter_sends_the_samplers_reply_after_approval() -> None:
    drafted = anyio.Event()

    async def model(params: CreateMessageRequestParams) -> CreateMessageResult:
        drafted.set()  # the draft is on screen by the time the test runs again
        return await fake_model(params)

    rich, out = console()
    presenter = TerminalPresenter(sampler=model, console=rich)
    found: list[str] = []
    with terminal() as pipe:
        pipe.send_text("a")
        async with anyio.create_task_group() as group:

            async def ask() -> None:
                found.append(await call(presenter, "describe"))

            group.start_soon(ask)
            with anyio.fail_after(PATIENCE_SECONDS):
                await drafted.wait()
            pipe.send_text(CTRL_S)
    assert found == ["test-model: A cat."]
    assert out.getvalue() == "library: sampling request reply sent\n"


async def test_a_denied_sampling_request_fails_the_servers_call() -> None:
    rich, _ = console()
    presenter = TerminalPresenter(console=rich)
    with terminal() as pipe:
        pipe.send_text("d")
        assert await call(presenter, "describe") == "error -1: User rejected sampling request"


async def test_a_withdrawn_question_closes_its_screen_and_leaves_one_line() -> None:
    screens: list[Application[Any]] = []
    opened = anyio.Event()

    def on_screen(application: Application[Any]) -> None:
        screens.append(application)
        opened.set()

    rich, out = console()
    presenter = TerminalPresenter(console=rich, on_screen=on_screen)
    with terminal() as pipe:
        async with (
            Broker(presenter) as broker,
            Client(asking_server(), responder=broker.responder("library")) as client,
            anyio.create_task_group() as group,
        ):
            group.start_soon(client.call_tool, "book", None)
            with anyio.fail_after(PATIENCE_SECONDS):
                await opened.wait()
            await Driven(screens[0], pipe).shows("Book a table")
            group.cancel_scope.cancel()
    assert not screens[0].is_running
    assert screens[0].future is None
    assert out.getvalue() == "library: question withdrawn: the call that asked it was cancelled\n"


async def test_server_keys_are_offered_on_every_screen_and_act_on_the_whole_server() -> None:
    pressed: list[str] = []
    keys = ServerKeys("library", lambda: pressed.append("all"), lambda: pressed.append("mute"))

    async def check(app: Application[T], run: Callable[[], Coroutine[Any, Any, T]]) -> None:
        async with running(app, run) as driven:
            shown = await driven.shows("Ctrl-Q")
            assert shown.endswith("Ctrl-X cancel all from library  Ctrl-Q mute library")
            driven.pipe.send_text(CTRL_X + CTRL_Q)
            await driven.until(lambda: len(pressed) == 2)
            driven.pipe.send_text(CTRL_C)
        assert pressed == ["all", "mute"]
        pressed.clear()

    with terminal():
        form = FormScreen(
            booking(), title="Form", message="Book", server="library", server_keys=keys
        )
        await check(form.application, form.run)
        link = judge_url("https://example.com/")
        card = UrlCard(link, message="Go", server="library", server_keys=keys)
        await check(card.application, card.run)
        sampling = SamplingScreen(sampling_request(), server="library", server_keys=keys)
        await check(sampling.application, sampling.run)


async def test_ctrl_x_cancels_all_the_server_asked_and_ctrl_q_mutes_it() -> None:
    rich, out = console()
    presenter = TerminalPresenter(console=rich)
    with terminal() as pipe:
        async with (
            Broker(presenter) as broker,
            Client(asking_server(), responder=broker.responder("library")) as client,
        ):
            presenter.controls = broker
            pipe.send_text(CTRL_X)
            cancelled = await client.call_tool("book", {})
            pipe.send_text(CTRL_Q)
            muted = await client.call_tool("book", {})
            unseen = await client.call_tool("book", {})
    actions = [json.loads(answer_text(result))["action"] for result in (cancelled, muted, unseen)]
    assert actions == ["cancel", "decline", "decline"]
    assert out.getvalue().splitlines() == [
        "library: cancelled everything it asked",
        "library: muted for this session",
    ]


async def test_every_kind_of_screen_is_announced_and_offers_the_server_keys() -> None:
    opened: list[Application[Any]] = []
    rich, out = console()
    presenter = TerminalPresenter(console=rich, on_screen=opened.append)
    with terminal() as pipe:
        async with (
            Broker(presenter) as broker,
            Client(asking_server(), responder=broker.responder("library")) as client,
        ):
            presenter.controls = broker
            answers: list[str] = []
            for tool, arguments in [
                ("book", {}),
                ("sign_in", {"url": "https://example.com/"}),
                ("describe", {}),
            ]:
                pipe.send_text(CTRL_X)
                try:
                    answers.append(answer_text(await client.call_tool(tool, arguments)))
                except MCPError as exc:
                    answers.append(exc.message)
    assert len(opened) == 3
    assert json.loads(answers[0])["action"] == "cancel"
    assert answers[1] == "cancel"
    assert answers[2].startswith(REJECTED)
    assert out.getvalue().splitlines() == ["library: cancelled everything it asked"] * 3


def answer_text(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


# -- line mode ----------------------------------------------------------------------


def lines(*typed: str) -> io.StringIO:
    return io.StringIO("".join(line + "\n" for line in typed))


@pytest.mark.parametrize("anyio_backend", BOTH)
async def test_line_mode_asks_each_field_and_asks_again_after_a_wrong_value() -> None:
    out = io.StringIO()
    typed = lines(
        "", "Ada", "ada@example", "ada@example.com", "13", "", "2", "1, flowers", "no", ""
    )
    presenter = LinePresenter(input=typed, output=out)
    answered = json.loads(await call(presenter, "book"))
    assert answered == {
        "action": "accept",
        "content": {
            "name": "Ada",
            "email": "ada@example.com",
            "guests": 2,
            "seating": "terrace",
            "extras": ["high chair", "flowers"],
            "reminder": False,
        },
    }
    shown = out.getvalue()
    assert "library asks you to fill in a form:\nBook a table\n" in shown
    assert "Name * (text): Who the table is for\n> " in shown
    assert "  ✗ is required\n" in shown
    assert "  ✗ is not a valid email address" in shown
    assert "Guests (whole number, 1 to 12; -: unanswered) [2]\n> " in shown
    assert "  ✗ must be at most 12" in shown
    assert "Seating * (pick one)\n  1) Inside\n  2) Terrace\n> " in shown
    assert "Send this answer? [a]ccept, [d]ecline, [c]ancel (Enter: accept)" in shown


@pytest.mark.parametrize("anyio_backend", BOTH)
@pytest.mark.parametrize(
    ("typed", "newsletter"),
    [("", {}), ("yes", {"newsletter": True}), ("n", {"newsletter": False})],
    ids=["unanswered", "yes", "no"],
)
async def test_line_mode_leaves_an_optional_yes_or_no_unanswered_on_enter(
    typed: str, newsletter: dict[str, bool]
) -> None:
    """Enter says so for an optional yes/no without a default: it leaves it out, never
    "no"; a required one still needs a yes or no, and a defaulted one keeps its default."""
    out = io.StringIO()
    presenter = LinePresenter(input=lines("", "y", typed, "", ""), output=out)
    answered = json.loads(await call(presenter, "subscribe"))
    content = {"terms": True, **newsletter, "reminder": True}
    assert answered == {"action": "accept", "content": content}
    shown = out.getvalue()
    assert "Accept the terms * (yes or no)\n> \n  ✗ is required\n> y\n" in shown
    assert f"Newsletter (yes or no; Enter: unanswered)\n> {typed}\n" in shown
    assert "Send a reminder (yes or no; -: unanswered) [yes]\n> \n" in shown


EVERY_KIND: dict[str, Any] = {
    "type": "object",
    "properties": {
        "note": {"type": "string", "title": "Note"},
        "count": {"type": "integer", "title": "Count"},
        "ok": {"type": "boolean", "title": "OK"},
        "colour": {"type": "string", "title": "Colour", "enum": ["red", "blue"]},
        "toppings": {
            "type": "array",
            "title": "Toppings",
            "items": {"type": "string", "enum": ["nuts", "cream"]},
        },
        "size": {"type": "string", "title": "Size", "enum": ["S", "L"]},
    },
    "required": ["size"],
}
ANSWERED_BEFORE: dict[str, Any] = {
    "note": "by the window",
    "count": 3,
    "ok": False,
    "colour": "blue",
    "toppings": ["nuts"],
    "size": "L",
}


@pytest.mark.parametrize("anyio_backend", BOTH)
async def test_line_mode_a_dash_leaves_an_optional_field_answered_before_unanswered() -> None:
    """Enter keeps the value in brackets, so ``-`` alone is how a person takes an earlier
    answer away, for every kind of field; a required field does not take it."""
    out = io.StringIO()
    presenter = LinePresenter(input=lines("-", "-", "-", "-", "-", "-", "", ""), output=out)
    answer = await presenter.ask_form(
        parse_form(EVERY_KIND), message="Again", previous=ANSWERED_BEFORE
    )
    assert answer == {"size": "L"}
    shown = out.getvalue()
    for asked in [
        "Note (text; -: unanswered) [by the window]\n> -\n",
        "Count (whole number; -: unanswered) [3]\n> -\n",
        "OK (yes or no; -: unanswered) [no]\n> -\n",
        "Colour (pick one; -: unanswered) [blue]\n  1) red\n  2) blue\n> -\n",
        "Toppings (pick any; -: unanswered) [nuts]\n",
        "Size * (pick one) [L]\n  1) S\n  2) L\n> -\n  ✗ ",
    ]:
        assert asked in shown


@pytest.mark.parametrize("anyio_backend", BOTH)
async def test_line_mode_a_dash_is_text_where_no_value_is_shown_or_the_field_is_required() -> None:
    """Only an optional field that shows a value takes ``-`` to mean unanswered (and says
    so): elsewhere it is what was typed, so a required field stays required."""
    out = io.StringIO()
    # name, code, count (wrong, then right), note, ok, colour, toppings, size, accept
    typed = lines("-", "-", "-", "2", "-", "", "", "", "", "")
    presenter = LinePresenter(input=typed, output=out)
    previous = {"note": "by the window", "size": "L"}
    schema = {
        **EVERY_KIND,
        "properties": {
            "name": {"type": "string", "title": "Name"},
            "code": {"type": "string", "title": "Code"},
            "count": {"type": "integer", "title": "Count"},
            **EVERY_KIND["properties"],
        },
        "required": ["name", "count", "size"],
    }
    answer = await presenter.ask_form(parse_form(schema), message="Again", previous=previous)
    assert answer == {"name": "-", "code": "-", "count": 2, "size": "L"}
    shown = out.getvalue()
    assert "Name * (text)\n> -\n" in shown
    assert "Code (text)\n> -\n" in shown
    assert "Count * (whole number)\n> -\n  ✗ " in shown
    assert "Note (text; -: unanswered) [by the window]\n> -\n" in shown


@pytest.mark.parametrize("anyio_backend", BOTH)
async def test_line_mode_declines_and_end_of_input_cancels() -> None:
    declined = LinePresenter(
        input=lines("Ada", "a@example.com", "", "1", "", "", "d"), output=io.StringIO()
    )
    assert json.loads(await call(declined, "book"))["action"] == "decline"
    ended = LinePresenter(input=lines("Ada"), output=io.StringIO())
    assert json.loads(await call(ended, "book"))["action"] == "cancel"


@pytest.mark.parametrize("anyio_backend", BOTH)
async def test_line_mode_answers_a_form_made_from_a_model() -> None:
    out = io.StringIO()
    presenter = LinePresenter(input=lines("Ada", "", "a"), output=out)
    assert await call(presenter, "book_checked") == "booked for Ada"
    assert (
        "Name * (text)\n> Ada\nGuests (whole number; -: unanswered) [2]\n> \n"
        "Answer:\n  Name: Ada\n  Guests: 2\nSend this answer?"  # what is sent, shown first
    ) in out.getvalue()


@pytest.mark.parametrize("anyio_backend", BOTH)
async def test_line_mode_links_need_a_yes_for_high_risk_and_never_open_blocked_ones() -> None:
    opened: list[str] = []
    out = io.StringIO()
    presenter = LinePresenter(
        input=lines("o", "no", "o", "yes"), output=out, opener=recorder(opened)
    )
    assert await call(presenter, "sign_in", {"url": "http://2130706433/"}) == "decline"
    assert opened == []
    assert await call(presenter, "sign_in", {"url": "http://2130706433/"}) == "accept"
    assert opened == ["http://127.0.0.1/"]
    shown = out.getvalue()
    assert "  URL:  http://127.0.0.1/\n" in shown
    assert "Type yes to open it anyway:" in shown


@pytest.mark.parametrize("anyio_backend", BOTH)
async def test_line_mode_sampling_typed_reply_and_deny() -> None:
    out = io.StringIO()
    presenter = LinePresenter(input=lines("a", "Two cats.", "Asleep.", ".", "d"), output=out)
    assert await call(presenter, "describe") == (f"{TYPED_BY_PERSON}: Two cats.\nAsleep.")
    assert await call(presenter, "describe") == f"error -1: {REJECTED}"
    shown = out.getvalue()
    assert "  user: [image: image/png, 1.8 KB]\n" in shown
    assert "  Token cap: 200\n" in shown


@pytest.mark.parametrize("anyio_backend", BOTH)
async def test_line_mode_sampler_draft_is_sent_or_edited() -> None:
    out = io.StringIO()
    presenter = LinePresenter(
        input=lines("a", "s", "a", "e", "Mine.", "."), output=out, sampler=fake_model
    )
    assert await call(presenter, "describe") == ("test-model: A cat.")
    assert await call(presenter, "describe") == ("test-model: Mine.")
    assert "Draft from test-model:\nA cat.\n" in out.getvalue()


class Watched(io.StringIO):
    """Output that wakes a waiter when it has been written to."""

    def __init__(self) -> None:
        super().__init__()
        self._written = anyio.Event()

    def write(self, text: str) -> int:
        self._written.set()
        return super().write(text)

    async def shows(self, text: str) -> None:
        with anyio.fail_after(PATIENCE_SECONDS):
            while text not in self.getvalue():
                self._written = anyio.Event()
                await self._written.wait()


@pytest.mark.parametrize("anyio_backend", BOTH)
async def test_line_mode_withdrawn_while_reading_gives_the_line_to_the_next_question() -> None:
    reading, writing = os.pipe()
    out = Watched()
    with os.fdopen(reading, "r") as typed, os.fdopen(writing, "w") as keyboard:
        presenter = LinePresenter(input=typed, output=out)
        async with (
            Broker(presenter) as broker,
            Client(asking_server(), responder=broker.responder("library")) as client,
        ):
            async with anyio.create_task_group() as group:
                group.start_soon(client.call_tool, "book_checked", None)
                await out.shows("Name * (text)\n> ")
                group.cancel_scope.cancel()
            await out.shows("library: question withdrawn: the call that asked it was cancelled")
            keyboard.write("Ada\n\na\n")
            keyboard.flush()
            result = await client.call_tool("book_checked", {})
    assert result.content == [TextContent(text="booked for Ada")]


# -- the docs show what the tests render ------------------------------------------------


Shot = Literal["form", "form-again", "url-ok", "url-high-risk", "url-blocked", "sampling"]


async def drawn(app: Application[T], run: Callable[[], Coroutine[Any, Any, T]], ready: str) -> str:
    async with running(app, run) as driven:
        text = await driven.shows(ready)
        driven.pipe.send_text(CTRL_C)
    return text


LINKS = {
    "url-ok": "https://example.com/auth?session=42",
    "url-high-risk": "https://accounts.google.com.evil-login.net/signin",
    "url-blocked": "https://google.com@evil.com/",
}


async def rendered(shot: Shot) -> str:
    """The screen the docs page shows as ``shot``, drawn here."""
    with terminal():
        if shot in LINKS:
            card = url_card(LINKS[shot])
            return await drawn(card.application, card.run, "Sign in")
        if shot == "sampling":
            sampling = SamplingScreen(sampling_request(), server="everything")
            return await drawn(sampling.application, sampling.run, "approve")
        again = shot == "form-again"
        problem = FieldError("email", "is not a valid email address: it has no domain")
        screen = FormScreen(
            booking(),
            title="Form",
            message="Book a table for tonight",
            server="library",
            previous={"name": "Ada", "email": "ada@example", "seating": "terrace"}
            if again
            else None,
            problems=AnswerError([problem]) if again else None,
        )
        return await drawn(screen.application, screen.run, "Guests")


def documented() -> dict[str, str]:
    page = DOCS.read_text(encoding="utf-8")
    found = re.findall(r"<!-- screen: ([\w-]+) -->\n```text\n(.*?)\n```", page, flags=re.S)
    return dict(found)


@pytest.mark.parametrize(
    "shot", ["form", "form-again", "url-ok", "url-high-risk", "url-blocked", "sampling"]
)
async def test_the_docs_show_the_screens_as_drawn(shot: Shot) -> None:
    assert documented().get(shot) == await rendered(shot)


# -- one-line fields, narrow terminals, what is said around a screen -----------------

PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"


def pasted(text: str) -> str:
    """``text`` as a terminal sends a paste (bracketed paste)."""
    return PASTE_START + text + PASTE_END


async def test_a_paste_of_several_lines_shows_one_line() -> None:
    """A one-line field showed only the last line of a paste, its ``>`` gone, yet sent
    all three: now the lines are joined by spaces and shown so, with anything a
    terminal would hide written out, as on every screen."""
    with terminal():
        screen = FormScreen(booking(), title="Form", message="Book", server="library")
        async with running(screen.application, screen.run) as driven:
            shown = await driven.type(pasted("Ada\nLovelace\r\nthird\tline\u200b"), then="third")
            driven.pipe.send_text(CTRL_C)
    assert "  > Ada Lovelace third line\\u200b\n" in shown


async def test_every_one_line_field_keeps_a_pasted_answer_to_one_line() -> None:
    """Text, email, number: each sends what it shows after a paste of several lines."""
    with terminal():
        screen = FormScreen(booking(), title="Form", message="Book", server="library")
        keys = (
            pasted("Ada\nLovelace")
            + TAB
            + pasted("ada@example.com\n")
            + TAB
            + "\x08"  # the prefilled 2 erased
            + pasted("\n3\n")
            + TAB
            + " "
            + CTRL_S
        )
        answer = await outcome(screen.application, keys, screen.run)
    assert answer == {
        "name": "Ada Lovelace",
        "email": "ada@example.com",
        "guests": 3,
        "seating": "inside",
        "reminder": True,
    }


async def test_text_wider_than_the_terminal_wraps_under_its_marker() -> None:
    """Text longer than a row once scrolled sideways, its start and ``>`` out of sight."""
    with terminal(columns=40):
        screen = FormScreen(booking(), title="Form", message="Book", server="library")
        async with running(screen.application, screen.run) as driven:
            shown = await driven.type("a" * 50 + "Z", then="Z")
            driven.pipe.send_text(CTRL_C)
    rows = shown.splitlines()
    at = rows.index("  > " + "a" * 36)
    assert rows[at + 1] == "    " + "a" * 14 + "Z"


@pytest.mark.parametrize("anyio_backend", BOTH)
async def test_line_mode_says_what_it_reads_when_a_line_holds_what_does_not_show() -> None:
    """Line mode takes one line per answer; a tab or a hidden character in it is read
    as the full screen shows it, and said before the answer is sent."""
    out = io.StringIO()
    typed = lines("Ada\u200b\tL", "ada@example.com", "", "1", "", "", "a")
    answered = json.loads(await call(LinePresenter(input=typed, output=out), "book"))
    assert answered["content"]["name"] == "Ada\\u200b L"
    assert "  (read as: Ada\\u200b L)\n" in out.getvalue()
    assert "\u200b" not in out.getvalue()


async def test_a_narrow_terminal_wraps_the_foot_lines_between_keys() -> None:
    """At 50 columns the keys line was cut ("Ctrl-D decl"), hiding Esc: it wraps now,
    never inside a key's words, and so does the server keys' line."""
    keys = ServerKeys("terminal_server", lambda: None, lambda: None)
    with terminal(columns=50):
        screen = FormScreen(
            booking(), title="Form", message="Book", server="library", server_keys=keys
        )
        async with running(screen.application, screen.run) as driven:
            shown = await driven.shows("Ctrl-Q")
            driven.pipe.send_text(CTRL_C)
    assert shown.splitlines()[-4:] == [
        "Tab next  Space choose  Ctrl-S accept",
        "Ctrl-D decline  Esc cancel   * required",
        "Ctrl-X cancel all from terminal_server",
        "Ctrl-Q mute terminal_server",
    ]


async def test_a_models_failure_is_shown_whole() -> None:
    """The reason a model failed was cut to one row (".../v1/cha"): it wraps now."""

    async def failing(params: CreateMessageRequestParams) -> CreateMessageResult:
        raise RuntimeError(
            "The OpenAI-compatible endpoint at http://127.0.0.1:1/v1/chat/completions "
            "could not be reached: [Errno 111] Connection refused"
        )

    with terminal():
        sampling = SamplingScreen(sampling_request(), server="everything", sampler=failing)
        async with running(sampling.application, sampling.run) as driven:
            shown = await driven.type("a", then="deny.")
            driven.pipe.send_text(CTRL_C)
    said = " ".join(row for row in shown.splitlines() if not row.startswith(("│", "╭", "╰")))
    assert (
        "The model failed: The OpenAI-compatible endpoint at "
        "http://127.0.0.1:1/v1/chat/completions could not be reached: [Errno 111] "
        "Connection refused. Type a reply, or deny."
    ) in said


async def test_ctrl_x_is_said_before_the_server_hears_of_it() -> None:
    """The line saying what Ctrl-X did came after the call's result, which the server
    sends once it hears: it is written before the broker is told now."""
    rich, out = console()
    said_by_then: list[str] = []

    class Controls:
        def cancel_all(self, server: str) -> int:
            said_by_then.append(out.getvalue())
            screen.application.exit(result="cancel")
            return 1

        def mute(self, server: str) -> None:
            raise AssertionError("not pressed")

    presenter = TerminalPresenter(console=rich)
    presenter.controls = Controls()
    keys = presenter._server_keys("library")  # pyright: ignore[reportPrivateUsage]
    with terminal():
        screen = FormScreen(booking(), title="Form", message="Book", server_keys=keys)
        assert await outcome(screen.application, CTRL_X, screen.run) == "cancel"
    assert said_by_then == ["library: cancelled everything it asked\n"]


RISKY = "https://accounts.google.com.evil-login.net/signin"


async def test_a_risky_link_no_browser_opened_is_warned_of_again() -> None:
    """The line that says to open a link by hand repeats the card's verdict."""
    rich, out = console()
    shown = [anyio.Event(), anyio.Event()]
    screens: list[Application[Any]] = []

    def on_screen(application: Application[Any]) -> None:
        screens.append(application)
        shown[len(screens) - 1].set()

    presenter = TerminalPresenter(
        opener=recorder([], works=False), console=rich, on_screen=on_screen
    )
    with terminal() as pipe:

        async def open_it() -> None:
            await shown[0].wait()
            driven = Driven(screens[0], pipe)
            await driven.shows("open in browser")
            await driven.alone("o")  # each typed alone: "oy" at once opens nothing
            await driven.alone("y")
            await shown[1].wait()
            by_hand = Driven(screens[1], pipe)
            await by_hand.shows("I opened it myself")
            await by_hand.alone("c")

        async with anyio.create_task_group() as group:
            group.start_soon(open_it)
            assert await call(presenter, "sign_in", {"url": RISKY}) == "cancel"
    said = out.getvalue().removesuffix("library: link cancelled\n").replace("\n", " ")
    assert said.startswith(
        "library: no browser could be opened; it was judged HIGH RISK: The site is "
        "evil-login.net: the 'accounts.google.com' in front of it"
    )
    assert said.rstrip().endswith(f"If you still want it, open {RISKY} yourself")


@pytest.mark.parametrize("anyio_backend", BOTH)
async def test_line_mode_warns_again_of_a_risky_link_no_browser_opened() -> None:
    out = io.StringIO()
    presenter = LinePresenter(input=lines("o", "yes"), output=out, opener=recorder([], False))
    assert await call(presenter, "sign_in", {"url": RISKY}) == "cancel"
    assert "No browser could be opened; it was judged HIGH RISK: The site" in out.getvalue()
    assert f"If you still want it, open {RISKY} yourself." in out.getvalue()


# -- the screens docs/cli.md shows ---------------------------------------------------

CLI_DOCS = Path(__file__).parent.parent / "docs" / "cli.md"
TEAROOM = Path(__file__).parent / "servers" / "terminal_server.py"
CliShot = Literal["cli-form", "cli-url", "cli-sampling"]
CLI_SHOTS: dict[CliShot, tuple[str, dict[str, Any], str, str]] = {
    # tool, arguments, keys typed, what shows once they have acted
    "cli-form": ("order_tea", {}, " " + TAB + "9" + CTRL_S, "Not sent"),
    "cli-url": ("visit", {"url": "https://paypa1.com/login"}, "o", "y open it anyway"),
    "cli-sampling": ("summarise", {"text": "teapots"}, "aPots for tea.", "tea."),
}


async def cli_rendered(shot: CliShot) -> str:
    """The screen docs/cli.md shows as ``shot``: the tea room's own question, asked
    through a broker as ``answerback connect`` asks it, at 92 columns."""
    tool, arguments, keys, ready = CLI_SHOTS[shot]
    tearoom = load_module(TEAROOM).mcp
    screens: list[Application[Any]] = []
    opened = anyio.Event()

    def on_screen(application: Application[Any]) -> None:
        screens.append(application)
        opened.set()

    rich, _ = console()
    presenter = TerminalPresenter(console=rich, on_screen=on_screen, opener=recorder([]))

    async def ask(client: Client) -> None:
        with contextlib.suppress(MCPError):  # a denied sampling request fails the call
            await client.call_tool(tool, arguments)

    drawn = ""
    with terminal(columns=92) as pipe:
        async with (
            Broker(presenter) as broker,
            Client(tearoom, responder=broker.responder("terminal_server")) as client,
            anyio.create_task_group() as group,
        ):
            presenter.controls = broker
            group.start_soon(ask, client)
            with anyio.fail_after(PATIENCE_SECONDS):
                await opened.wait()
            driven = Driven(screens[0], pipe)
            await driven.until(lambda: True)
            await driven.alone(keys[0])  # typed alone, as a key that acts must be
            drawn = await driven.type(keys[1:], then=ready)
            pipe.send_text(CTRL_C)
    return drawn


@pytest.mark.parametrize("shot", list(CLI_SHOTS))
async def test_the_cli_docs_show_the_screens_as_drawn(shot: CliShot) -> None:
    page = CLI_DOCS.read_text(encoding="utf-8")
    found = dict(re.findall(r"<!-- screen: ([\w-]+) -->\n```text\n(.*?)\n```", page, flags=re.S))
    assert found.get(shot) == await cli_rendered(shot)


@pytest.mark.parametrize(
    ("title", "shown", "columns", "note"),
    [
        ("字" * 40, "字" * 40, 24, "… 1 more line: Ctrl-R shows it whole"),
        ("\x1b" * 40, "\\x1b" * 40, 30, "… 3 more lines: Ctrl-R shows them whole"),
        ("a\nb\nc\nd\ne", "a\nb\nc\nd\ne", 30, "… 2 more lines: Ctrl-R shows them whole"),
    ],
    ids=["wide characters", "control characters", "line breaks"],
)
async def test_a_short_title_cut_as_shown_is_whole_behind_ctrl_r(
    title: str, shown: str, columns: int, note: str
) -> None:
    """A title of 40 characters or fewer was never put in the reader, yet wide
    characters, control characters written out (four columns each) or line breaks cut
    it: the screen said "Ctrl-R shows them whole" and Ctrl-R showed nothing. One row
    cut said "1 more lines"."""
    form = parse_form(
        {"type": "object", "properties": {"note": {"type": "string", "title": title}}}
    )
    with terminal(columns=columns):
        screen = FormScreen(form, title="Form", message="", server="s")
        async with running(screen.application, screen.run) as driven:
            drawn = await driven.shows("Ctrl-S accept")
            # The note may wrap: its words, in order.
            assert note in " ".join(drawn.split()), drawn
            drawn = await driven.type("\x12", then="Esc/q back")
            assert "A field's title:" in drawn, drawn
            assert screen.reader.text == f"A field's title:\n{shown}"
            await driven.type("q", then="Ctrl-S accept")
            driven.pipe.send_text(CTRL_D)  # decline
