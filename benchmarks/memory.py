"""Memory: server RSS per open, idle legacy streamable HTTP session.

A fresh server process per measurement; one warm-up session (opened, used, closed) so
lazily imported code is already loaded, then ``sessions`` idle sessions that are not
measured, then ``sessions`` more clients of the same implementation connect and stay
idle. Per session = (RSS after - RSS before) / sessions, read from ``/proc/<pid>/status``
around that second batch.

Why the unmeasured batch: a process reuses the memory it freed while starting (import
temporaries, validators built for the tools' schemas) before it grows, so the first
sessions' cost depends on how much start-up happened to leave free. Measuring the
second batch gives what a session costs on a warm heap: with one batch, a change that
only made start-up leave less garbage read as 5 KiB more per session, though the
server's RSS with the sessions open was the same.
"""

from __future__ import annotations

from contextlib import AsyncExitStack

import anyio

from benchmarks.clients import Impl, connect
from benchmarks.procs import http_server, rss_kib, server_script


async def rss_per_session(impl: Impl, sessions: int) -> dict[str, float]:
    """Open ``sessions`` idle legacy sessions against a fresh ``impl`` HTTP server."""
    with http_server(server_script(f"{impl}_server")) as server:
        async with connect(impl, "http", "legacy", server.url) as warm:
            await warm.echo()
        async with AsyncExitStack() as stack:

            async def open_idle() -> None:
                for _ in range(sessions):
                    await stack.enter_async_context(connect(impl, "http", "legacy", server.url))

            await open_idle()
            await anyio.sleep(0.5)
            before = rss_kib(server.pid)
            await open_idle()
            await anyio.sleep(1.0)
            after = rss_kib(server.pid)
    return {
        "kib_per_session": (after - before) / sessions,
        "rss_before_kib": float(before),
        "rss_after_kib": float(after),
        "sessions": float(sessions),
    }
