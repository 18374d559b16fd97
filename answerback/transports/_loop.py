"""The event loop a server program runs on, and the signals that stop it.

A server's blocking entry points (``MCPServer.run``, ``run_uvicorn``) own their process,
so they choose its loop: uvloop where it is installed (answerback depends on it where it
builds: CPython off Windows), which serves a stdio call with 40 to 50 % less CPU than
asyncio's own loop (``benchmarks/README.md``, "Stdio"), and asyncio's loop elsewhere.
Code that runs in a loop someone else chose (the client, ``serve_connection``, the ASGI
app) uses that loop, whichever it is.

libuv, under uvloop, takes for granted what asyncio does not, and aborts the process
where it is wrong, so this module and ``_own_copy`` (``_stdio_server.py``) keep it where
it holds: the standard descriptors are open (its own descriptors are numbered from 3),
and a pipe transport is given a pipe or a socket (never a regular file or ``/dev/null``,
nor a terminal to write to).
"""

from __future__ import annotations

import os
import signal
from typing import Any

_STANDARD_DESCRIPTORS = (0, 1, 2)

STOPPING_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)
"""Besides Ctrl-C, what tells a server program to stop cleanly: SIGTERM from whoever
runs it (a supervisor, or a client whose stdio server outlived its closed stdin), SIGHUP
from the terminal it ran in closing (not on Windows)."""


def asyncio_loop_options() -> dict[str, Any]:
    """``anyio.run``'s ``backend_options`` for a server program on asyncio."""
    try:
        import uvloop
    except ImportError:
        return {}
    if not all(_is_open(descriptor) for descriptor in _STANDARD_DESCRIPTORS):
        return {}  # started with ``<&-`` or ``2>&-``: asyncio's loop says so in one line
    return {"loop_factory": uvloop.new_event_loop}


def _is_open(descriptor: int) -> bool:
    try:
        os.fstat(descriptor)
    except OSError:
        return False
    return True
