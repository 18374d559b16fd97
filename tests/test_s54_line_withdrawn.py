"""``LinePresenter.withdrawn`` while the next question waits at its prompt (stop 54): the
line starts on a line of its own, and the prompt is written again below it. Before, it
was glued onto the prompt ("> library: question withdrawn: ...")."""

from __future__ import annotations

import io
import os
from typing import cast

import anyio
import pytest

from answerback.client import ClientRequestContext
from answerback.forms import parse_form
from answerback.interact import SERVER_CANCELLED, Question
from answerback.interact.terminal import LinePresenter
from answerback.types import ElicitRequestFormParams

pytestmark = pytest.mark.anyio

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}}


def withdrawn_question() -> Question:
    """What ``withdrawn`` is told about; it reads only the server's name."""
    params = ElicitRequestFormParams(message="Name?", requested_schema=SCHEMA)
    return Question("library", "form", params, cast(ClientRequestContext, None))


async def test_a_withdrawal_said_while_a_prompt_waits_starts_on_a_fresh_line() -> None:
    read_end, write_end = os.pipe()
    out = io.StringIO()
    with os.fdopen(read_end) as typed, os.fdopen(write_end, "w") as keyboard:
        presenter = LinePresenter(input=typed, output=out)
        async with anyio.create_task_group() as tg:
            form = parse_form(SCHEMA)
            tg.start_soon(lambda: presenter.ask_form(form, message="Second question"))
            await anyio.wait_all_tasks_blocked()
            assert out.getvalue().endswith("> "), "the second question waits at its prompt"
            await presenter.withdrawn(withdrawn_question(), SERVER_CANCELLED)
            tg.cancel_scope.cancel()
        keyboard.write("\n")  # lets the reading thread end
    assert out.getvalue().endswith(f"> \nlibrary: question withdrawn: {SERVER_CANCELLED}\n> ")
