"""``PromptSeat``: keys typed ahead around a screen run in the order they were typed.

The rest of a paste, read by the prompt before a screen took the terminal, is run once
the prompt is back. Keys typed while the screen closed (after its Ctrl-S, in the same
read) are left by the screen as typed ahead too; they were run *before* the older rest
of the paste.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from prompt_toolkit import Application, PromptSession
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.output import DummyOutput
from support import PATIENCE_SECONDS, ReportingEventLoop

from answerback.cli._connect import PromptSeat

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> tuple[str, dict[str, Any]]:
    """prompt_toolkit runs on asyncio only."""
    return ("asyncio", {"loop_factory": ReportingEventLoop})


async def test_the_rest_of_a_paste_runs_before_keys_typed_as_a_screen_closed() -> None:
    with create_pipe_input() as keys, anyio.fail_after(PATIENCE_SECONDS):
        session: PromptSession[str] = PromptSession(input=keys, output=DummyOutput())
        seat = PromptSeat(session)
        keys.send_text("call greet\rcall menu\r")
        assert await seat.read("> ") == "call greet"
        accept = KeyBindings()

        @accept.add("c-s")
        def _(event: KeyPressEvent) -> None:
            event.app.exit()

        form: Application[None] = Application(key_bindings=accept, input=keys, output=DummyOutput())
        async with seat.screen():  # "call greet" asks its arguments on a form
            keys.send_text("\x13status\r")  # Ctrl-S, then the next line at once
            await form.run_async()  # leaves "status" unread, as typed ahead
        assert await seat.read("> ") == "call menu"
        assert await seat.read("> ") == "status"
