"""Plain-line mode: the command's questions asked line by line, with no full screen.

A terminal that cannot draw a screen (``TERM=dumb``: Emacs ``M-x shell``, some IDE
panes), or a person who prefers plain lines (a screen reader reads them in order), gets
every question through ``LinePresenter``, and ``connect``'s prompt as a plain line too:
nothing is drawn, so nothing written holds a cursor or colour code. prompt_toolkit
would run a prompt of its own on a dumb terminal, one that no question can make step
aside, so it is not used there at all.

The prompt and the questions read the same input, one line at a time. A question that
arrives while the prompt waits is asked below it, and the prompt comes back once it is
answered; what was typed at the prompt never answers the question (``LinePresenter``
sets it aside). Ctrl-C cancels the question being asked (denies
a sampling request), as on the full screen.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator
from contextlib import asynccontextmanager, contextmanager

import anyio
from prompt_toolkit.utils import is_dumb_terminal

from answerback.interact import Answer, Question, clean
from answerback.interact.terminal import LinePresenter
from answerback.interact.terminal._sampling_screen import rejected
from answerback.types import CreateMessageRequestParams, ElicitResult


def plain_lines(asked: bool) -> bool:
    """Whether to ask in plain lines: asked for (``--plain``), or the terminal cannot
    draw a screen (what prompt_toolkit takes for one: ``TERM`` ``dumb`` or
    ``unknown``)."""
    return asked or is_dumb_terminal(os.environ.get("TERM", ""))


@contextmanager
def suspend_ignored() -> Generator[None]:
    """Ctrl-Z does nothing while plain lines ask, as on the full screen, where it is a
    key read like any other: here the terminal would stop the whole session, leaving
    its servers waiting on questions nobody sees. ``SIGTSTP`` is ignored (servers
    started meanwhile inherit that) and put back as it was after."""
    tstp = getattr(signal, "SIGTSTP", None)  # none on Windows, nor a Ctrl-Z that stops
    if tstp is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(tstp, signal.SIG_IGN)
    try:
        yield
    finally:
        # None: a handler not set from Python, which cannot be put back; the default is.
        signal.signal(tstp, signal.SIG_DFL if previous is None else previous)


async def interruptible(seat: LineSeat, run: Callable[[], Awaitable[int]]) -> int:
    """``run()``'s exit status, with Ctrl-C read as ``connect --plain`` reads it: it
    cancels the question ``seat`` holds the terminal for (the command goes on, as on
    the full screen); with none, it ends ``run`` and raises ``KeyboardInterrupt``, as
    it would have without this."""
    interrupted = False
    failed: Exception | None = None
    status = 0
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            nonlocal interrupted
            with anyio.open_signal_receiver(signal.SIGINT) as interrupts:
                async for _ in interrupts:
                    if not seat.interrupt():
                        interrupted = True
                        group.cancel_scope.cancel()
                        return

        group.start_soon(watch)
        try:
            status = await run()
        except Exception as exc:  # raised here, not as a group from the task group
            failed = exc
        finally:
            group.cancel_scope.cancel()
    if interrupted:
        raise KeyboardInterrupt
    if failed is not None:
        raise failed
    return status


class Interrupted(Exception):
    """Ctrl-C took the terminal back from what held it (a question, a tool's
    arguments)."""


class LineSeat:
    """The one input, shared by ``connect``'s prompt and the questions, in plain lines.

    The line mode's ``PromptSeat``: a question takes the terminal with ``async with
    seat.screen()``, the prompt's read (if one waits) gives way to it, and the prompt
    is written again once no question wants the terminal. Questions take it one at a
    time."""

    def __init__(self, lines: LinePresenter) -> None:
        self.lines = lines
        self.wanted = 0
        self.free = anyio.Event()
        self.free.set()
        self.reading: tuple[anyio.CancelScope, anyio.Event] | None = None
        """The prompt's read while it waits, and the event set once it has ended."""
        self.holding: anyio.CancelScope | None = None
        """What holds the terminal now, which Ctrl-C interrupts."""
        self.one_screen = anyio.Lock()

    @asynccontextmanager
    async def screen(self) -> AsyncGenerator[None]:
        """Hold the terminal; raises ``Interrupted`` if Ctrl-C ended the hold."""
        self.wanted += 1
        if self.free.is_set():
            self.free = anyio.Event()
        try:
            if self.reading is not None:
                scope, ended = self.reading
                scope.cancel()
                # Until it has, it is the prompt that the input answers.
                await ended.wait()
            async with self.one_screen:
                with anyio.CancelScope() as holding:
                    self.holding = holding
                    try:
                        yield
                    finally:
                        self.holding = None
                if holding.cancelled_caught:
                    raise Interrupted
        finally:
            self.wanted -= 1
            if self.wanted == 0:
                self.free.set()

    async def read(self, message: str) -> str:
        """The next command line, once no question holds the terminal (raises
        ``EOFError`` at the end of input: Ctrl-D)."""
        while True:
            while not self.free.is_set():
                await self.free.wait()
            ended = anyio.Event()
            with anyio.CancelScope() as scope:
                self.reading = (scope, ended)
                try:
                    return await self.lines.read_line(message)
                finally:
                    self.reading = None
                    ended.set()

    def interrupt(self) -> bool:
        """Ctrl-C: end what holds the terminal; ``False`` if nothing does (the prompt
        waits, or a command runs)."""
        if self.holding is None:
            return False
        self.holding.cancel()
        return True


class LineSeatedPresenter:
    """Asks in plain lines, holding the terminal while it asks; a question Ctrl-C
    interrupts is answered "cancel" (a sampling request: denied), and a line says so."""

    def __init__(self, lines: LinePresenter, seat: LineSeat) -> None:
        self.lines = lines
        self.seat = seat

    async def present(self, question: Question) -> Answer:
        try:
            async with self.seat.screen():
                return await self.lines.present(question)
        except Interrupted:
            server = clean(question.server)
            if isinstance(question.params, CreateMessageRequestParams):
                self.lines.note(f"Ctrl-C: denied the sampling request from {server}.")
                return rejected()
            asked = "link" if question.kind == "url" else "form"
            self.lines.note(f"Ctrl-C: cancelled the {asked} from {server}.")
            return ElicitResult(action="cancel")

    async def withdrawn(self, question: Question, reason: str) -> None:
        await self.lines.withdrawn(question, reason)
