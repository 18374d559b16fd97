"""``LinePresenter`` sharing its input with a program's own prompt (stop 55): the
plain-line mode of ``answerback connect`` reads its command lines and the servers'
questions from the same input, one line at a time."""

from __future__ import annotations

import io
import os
import select

import anyio
import pytest
from support import PATIENCE_SECONDS

from answerback.forms import parse_form
from answerback.interact.terminal import LinePresenter

pytestmark = pytest.mark.anyio

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}}


async def test_a_prompt_given_up_for_a_question_leaves_it_the_next_line() -> None:
    read_end, write_end = os.pipe()
    out = io.StringIO()
    with os.fdopen(read_end) as typed, os.fdopen(write_end, "w") as keyboard:
        presenter = LinePresenter(input=typed, output=out)
        with anyio.CancelScope() as prompt:
            prompt.cancel()  # as the question comes, before any line is typed
            await presenter.read_line("answerback> ")
        keyboard.write("Ada\na\n")
        keyboard.flush()
        answer = await presenter.ask_form(parse_form(SCHEMA), message="Your name?")
    assert answer == {"name": "Ada"}
    assert out.getvalue().startswith("answerback> \nYour name?\n")


async def test_a_note_said_while_the_prompt_waits_goes_above_it() -> None:
    read_end, write_end = os.pipe()
    out = io.StringIO()
    with os.fdopen(read_end) as typed, os.fdopen(write_end, "w") as keyboard:
        presenter = LinePresenter(input=typed, output=out)
        async with anyio.create_task_group() as tg:
            tg.start_soon(presenter.read_line, "answerback> ")
            await anyio.wait_all_tasks_blocked()
            presenter.note("[1] library: call greet →\nHello, Ada!")
            keyboard.write("quit\n")
            keyboard.flush()
    assert out.getvalue() == (
        "answerback> \n[1] library: call greet →\nHello, Ada!\nanswerback> quit\n"
    )


async def test_the_end_of_input_at_the_prompt_is_eof_and_ends_the_line() -> None:
    out = io.StringIO()
    presenter = LinePresenter(input=io.StringIO(""), output=out)
    with pytest.raises(EOFError):
        await presenter.read_line("answerback> ")
    presenter.note("bye")
    assert out.getvalue() == "answerback> \nbye\n"


def typed(keyboard: int, keys: bytes) -> None:
    """Type ``keys`` at the terminal whose master end is ``keyboard``, and wait for their
    echo: the terminal's line discipline holds them then."""
    os.write(keyboard, keys)
    echo = keys.replace(b"\n", b"\r\n")  # the terminal echoes a line break so
    echoed = b""
    while echo not in echoed:
        ready, _, _ = select.select([keyboard], [], [], PATIENCE_SECONDS)
        assert ready, f"no echo of {keys!r}; got {echoed!r}"
        echoed += os.read(keyboard, 1024)


async def test_what_was_typed_for_a_withdrawn_question_answers_no_other() -> None:
    """At a terminal, a line half typed for a question that went away (withdrawn,
    cancelled) is discarded: the next question's answer is only what is typed for it."""
    keyboard, screen_end = os.openpty()
    terminal = os.fdopen(screen_end)
    answers: list[object] = []
    presenter = LinePresenter(input=terminal, output=io.StringIO())

    async def ask(message: str) -> None:
        answers.append(await presenter.ask_form(parse_form(SCHEMA), message=message))

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(ask, "First?")
            await anyio.wait_all_tasks_blocked()
            typed(keyboard, b"Bab")  # then the question is withdrawn
            tg.cancel_scope.cancel()
        with anyio.fail_after(PATIENCE_SECONDS):
            async with anyio.create_task_group() as tg:
                tg.start_soon(ask, "Your name?")
                await anyio.wait_all_tasks_blocked()
                typed(keyboard, b"Ada\n")
                await anyio.wait_all_tasks_blocked()
                typed(keyboard, b"a\n")
    finally:
        os.close(keyboard)  # the reader thread's read ends with the terminal
        terminal.close()
    assert answers == [{"name": "Ada"}]
