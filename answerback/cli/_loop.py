"""The commands' event loop, which SIGHUP and SIGTERM stop the way Ctrl-C does.

Python's default for both signals ends the process on the spot, so its clients never
close. A stdio server runs in a process group of its own (a closed terminal does not
reach it), and only the client's orderly stop (close stdin, then SIGTERM the group)
ends a server that is stuck, or the helpers a server started. Closing a terminal window
sends SIGHUP; ``kill`` and service managers send SIGTERM. Either cancels the command,
which unwinds as from Ctrl-C, and the exit code names the signal (128 + its number, as
a shell reports it). A second signal ends the process at once, as the default would.
The loop receives the signals itself rather than turning them into SIGINT: a command
that a shell started in the background ignores SIGINT.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

from answerback.transports._loop import STOPPING_SIGNALS

_T = TypeVar("_T")


class StoppedBySignal(Exception):
    """SIGHUP or SIGTERM stopped the command; its clients have closed."""

    def __init__(self, number: int) -> None:
        super().__init__(f"stopped by signal {number}")
        self.number = number


def run_async(function: Callable[[], Awaitable[_T]]) -> _T:
    """Run an async command on asyncio (the terminal UI needs it); raises
    ``StoppedBySignal`` once SIGHUP or SIGTERM has stopped it."""
    return anyio.run(_until_stopped, function, backend="asyncio")


async def _until_stopped(function: Callable[[], Awaitable[_T]]) -> _T:
    if not _receivable():
        return await function()
    loop = asyncio.get_running_loop()
    stopped_by: list[int] = []
    with anyio.CancelScope() as scope:

        def stop(number: int) -> None:
            if stopped_by:  # a second time: the default, which ends the process at once
                loop.remove_signal_handler(number)
                signal.raise_signal(number)
            stopped_by.append(number)
            scope.cancel()

        for number in STOPPING_SIGNALS:
            loop.add_signal_handler(number, stop, number)
        try:
            return await function()
        finally:
            for number in STOPPING_SIGNALS:
                loop.remove_signal_handler(number)
    raise StoppedBySignal(stopped_by[0])  # only ``stop`` cancels the scope


def _receivable() -> bool:
    """Only the main thread can set signal handlers, and not on Windows."""
    return hasattr(signal, "SIGHUP") and threading.current_thread() is threading.main_thread()
