"""Memory: server RSS per open, idle legacy streamable HTTP session.

A fresh server process per measurement; one warm-up session (opened, used, closed) so
lazily imported code is already loaded, then ``sessions`` clients of the same
implementation connect and stay idle. Per session = (RSS after - RSS before) / sessions,
read from ``/proc/<pid>/status``.
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
        await anyio.sleep(0.5)
        before = rss_kib(server.pid)
        async with AsyncExitStack() as stack:
            for _ in range(sessions):
                await stack.enter_async_context(connect(impl, "http", "legacy", server.url))
            await anyio.sleep(1.0)
            after = rss_kib(server.pid)
    return {
        "kib_per_session": (after - before) / sessions,
        "rss_before_kib": float(before),
        "rss_after_kib": float(after),
        "sessions": float(sessions),
    }
