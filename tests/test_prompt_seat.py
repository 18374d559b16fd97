"""``PromptSeat``: the command prompt and the screens that ask take the one terminal in
turns, never both at once, and keys the prompt read before a screen opened stay the
prompt's.

A probe pasted three command lines whose first opened a form: the form took no key
after that (only Esc, sometimes), the other lines' output was drawn over it, and once
the last pasted lines were lost. The screen had opened while the prompt was starting.
"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest
from prompt_toolkit import PromptSession
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.input.typeahead import get_typeahead
from prompt_toolkit.output import DummyOutput
from support import PATIENCE_SECONDS, ReportingEventLoop

from answerback.cli._connect import PromptSeat

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> tuple[str, dict[str, Any]]:
    """prompt_toolkit runs on asyncio only."""
    return ("asyncio", {"loop_factory": ReportingEventLoop})


async def test_a_screen_asking_as_the_prompt_is_about_to_start_has_the_terminal_alone() -> None:
    """The loop asks for the next line just as a question asks for the screen (a
    server's question arriving while pasted lines run): the prompt waits until the
    screen is done, instead of starting under it."""
    with create_pipe_input() as keys, anyio.fail_after(PATIENCE_SECONDS):
        session: PromptSession[str] = PromptSession(input=keys, output=DummyOutput())
        seat = PromptSeat(session)
        prompt_up_under_the_screen: list[bool] = []
        lines: list[str] = []

        async def next_line() -> None:
            lines.append(await seat.read("> "))

        async def question() -> None:
            async with seat.screen():
                for _ in range(10):  # the reader's task gets its turns meanwhile
                    await anyio.lowlevel.checkpoint()
                prompt_up_under_the_screen.append(session.app.is_running)
            while not session.app.is_running:  # the prompt comes back after the screen
                await anyio.lowlevel.checkpoint()
            keys.send_text("quit\r")

        async with anyio.create_task_group() as group:
            group.start_soon(next_line)  # first: it is waiting to start the prompt
            group.start_soon(question)
        assert prompt_up_under_the_screen == [False]
        assert lines == ["quit"]


async def test_lines_the_prompt_had_read_when_a_screen_opened_are_run_after_it() -> None:
    """The rest of a paste, read by the prompt but not yet run, is neither given to the
    screen (which drops keys typed before it was seen) nor lost: the prompt runs it
    once the screen is done."""
    with create_pipe_input() as keys, anyio.fail_after(PATIENCE_SECONDS):
        session: PromptSession[str] = PromptSession(input=keys, output=DummyOutput())
        seat = PromptSeat(session)
        keys.send_text("call greet\rcall menu\r")
        assert await seat.read("> ") == "call greet"
        async with seat.screen():  # "call greet" asks its arguments on a form
            assert get_typeahead(session.app.input) == []  # nothing for the form to drop
        assert await seat.read("> ") == "call menu"
