"""A server out of file descriptors says so, once, and serves again once they are free.

Without the warning, new connections are closed unanswered (uvloop) or left waiting
(asyncio) while the server's log says nothing; the operator needs the limit's name and
what to do. A real server runs in a process whose RLIMIT_NOFILE is set low."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import queue
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Generator
from typing import Any

import httpx2
import pytest
from http_support import PATIENCE_SECONDS, POST_HEADERS, REPO, initialize_params, rpc

from answerback.server import MCPServer
from answerback.transports.http import StreamableHTTPApp, _uvicorn

resource = pytest.importorskip("resource")  # no RLIMIT_NOFILE on Windows

DESCRIPTOR_LIMIT = 64
CONNECTIONS = 2 * DESCRIPTOR_LIMIT  # more than the server can hold
WARNING = "the server is running out of file descriptors"

_, _HARD = resource.getrlimit(resource.RLIMIT_NOFILE)
HARD_LIMIT = 4096 if _HARD == resource.RLIM_INFINITY else min(_HARD, 4096)
"""Room for the tests whose server raises its limit, or starts high."""

SERVER = """
import contextlib, resource, sys
from answerback.server import MCPServer
from answerback.transports.http import _uvicorn, run_uvicorn

if sys.argv[1] == "asyncio":
    _uvicorn.asyncio_loop_options = dict

@contextlib.asynccontextmanager
async def lifespan(server):
    if sys.argv[2]:  # the program sets its own soft limit as it starts
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[2]), hard))
    yield None

# One warning for the whole test, however slowly a busy machine runs it.
_uvicorn.DESCRIPTORS_WARNING_SECONDS = 3600.0
mcp = MCPServer("descriptors", lifespan=lifespan)
run_uvicorn(mcp.http_app(), port=0)
"""


@contextlib.contextmanager
def limited_server(
    loop: str, soft: int = DESCRIPTOR_LIMIT, hard: int = DESCRIPTOR_LIMIT, lifespan_soft: str = ""
) -> Generator[tuple[str, queue.Queue[str]], None, None]:
    """The server's URL and its stderr's lines as they come ("" once it ends); it starts
    with RLIMIT_NOFILE ``(soft, hard)``, and its lifespan sets the soft one to
    ``lifespan_soft`` if given."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    lines: queue.Queue[str] = queue.Queue()
    with subprocess.Popen(
        [sys.executable, "-c", SERVER, loop, lifespan_soft], cwd=REPO,
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, preexec_fn=limit,
    ) as process:  # fmt: skip
        stderr = process.stderr
        assert stderr is not None

        def drain() -> None:
            for line in stderr:
                lines.put(line)
            lines.put("")

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        try:
            line = next_line(lines)
            found = re.search(r"serving MCP at (http://\S+) ", line)
            assert found is not None, line
            yield found[1], lines
        finally:
            process.terminate()
            process.wait(timeout=PATIENCE_SECONDS)
            reader.join(PATIENCE_SECONDS)


def next_line(lines: queue.Queue[str]) -> str:
    try:
        return lines.get(timeout=PATIENCE_SECONDS)
    except queue.Empty:
        raise AssertionError("the server said nothing") from None


def closed_by_server(sock: socket.socket) -> None:
    """Wait until the server has closed its end (it reads our end's EOF, or had closed
    the connection at once for want of a descriptor)."""
    sock.shutdown(socket.SHUT_WR)
    sock.settimeout(PATIENCE_SECONDS)
    with contextlib.suppress(ConnectionResetError):
        while sock.recv(4096):
            pass
    sock.close()


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_a_server_out_of_descriptors_warns_once_and_recovers(loop: str) -> None:
    """asyncio also reports each second that it cannot accept: that is folded into the
    one warning, not logged as an error with a traceback."""
    if loop == "uvloop":
        pytest.importorskip("uvloop")
    with limited_server(loop) as (url, lines):
        port = int(url.split(":")[2].split("/")[0])
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(CONNECTIONS)]
        try:
            said = next_line(lines)
            assert WARNING in said, said
            assert f"of which this process may open {DESCRIPTOR_LIMIT} (RLIMIT_NOFILE)" in said
            assert "ulimit -n" in said
            assert "body_timeout_seconds" in said
        finally:
            for sock in held:
                closed_by_server(sock)
        with httpx2.Client(timeout=PATIENCE_SECONDS) as http:
            started = http.post(
                url, json=rpc("initialize", initialize_params()), headers=POST_HEADERS
            )
            assert started.status_code == 200, started.text
    rest: list[str] = []
    while line := next_line(lines):
        rest.append(line)
    assert not [line for line in rest if WARNING in line or "socket.accept()" in line], rest


def test_the_warning_comes_at_most_once_a_minute_with_a_count(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    watch = _uvicorn._Descriptors(clock=lambda: now[0], limit=lambda: (100, 10))  # pyright: ignore[reportPrivateUsage]
    watch.accepted(50)  # far from the limit: nothing
    for descriptor in range(90, 100):
        watch.accepted(descriptor)
    watch.refused()
    now[0] = _uvicorn.DESCRIPTORS_WARNING_SECONDS
    watch.accepted(95)
    said = [record.getMessage() for record in caplog.records]
    assert len(said) == 2, said
    assert "a connection took descriptor 90;" in said[0]
    assert said[1].endswith("(11 times in the last 60 s.)"), said[1]


def port_of(url: str) -> int:
    return int(url.split(":")[2].split("/")[0])


def rest_of(lines: queue.Queue[str]) -> list[str]:
    """What the server still says, to its end."""
    rest: list[str] = []
    while line := next_line(lines):
        rest.append(line)
    return rest


def test_a_limit_the_lifespan_raises_is_the_one_watched() -> None:
    """A program raising its soft limit to the hard one as it starts (what the warning
    advises) is not warned against the limit it started with."""
    connections = 100  # past 64, far below the raised limit
    with limited_server("uvloop", soft=64, hard=HARD_LIMIT, lifespan_soft=str(HARD_LIMIT)) as (
        url,
        lines,
    ):
        held = [socket.create_connection(("127.0.0.1", port_of(url))) for _ in range(connections)]
        try:
            # Accepted after every held connection: the server has seen them all.
            with httpx2.Client(timeout=PATIENCE_SECONDS) as http:
                started = http.post(
                    url, json=rpc("initialize", initialize_params()), headers=POST_HEADERS
                )
                assert started.status_code == 200, started.text
        finally:
            for sock in held:
                closed_by_server(sock)
    rest = rest_of(lines)
    assert not [line for line in rest if WARNING in line], rest


def test_a_limit_the_lifespan_lowers_is_the_one_watched() -> None:
    with limited_server(
        "uvloop", soft=HARD_LIMIT, hard=HARD_LIMIT, lifespan_soft=str(DESCRIPTOR_LIMIT)
    ) as (url, lines):
        held = [socket.create_connection(("127.0.0.1", port_of(url))) for _ in range(CONNECTIONS)]
        try:
            said = next_line(lines)
            assert WARNING in said, said
            assert f"of which this process may open {DESCRIPTOR_LIMIT} (RLIMIT_NOFILE)" in said
        finally:
            for sock in held:
                closed_by_server(sock)


def test_the_limit_is_read_again_before_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    limits = [(100, 10)]
    watch = _uvicorn._Descriptors(clock=lambda: 0.0, limit=lambda: limits[-1])  # pyright: ignore[reportPrivateUsage]
    limits.append((1000, 62))  # the program raised its own limit
    watch.accepted(95)
    assert not caplog.records
    assert (watch.limit, watch.margin) == (1000, 62)
    limits.append((50, 8))  # and lowered it: asyncio cannot accept
    watch.refused()
    said = [record.getMessage() for record in caplog.records]
    assert len(said) == 1, said
    assert "of which this process may open 50 (RLIMIT_NOFILE)" in said[0]


def out_of_descriptors(sock: Any) -> dict[str, Any]:
    """What asyncio's loop reports when accepting on ``sock`` fails for want of a
    descriptor (``sock`` a ``TransportSocket``, as asyncio gives)."""
    return {
        "message": "socket.accept() out of system resource",
        "exception": OSError(errno.EMFILE, "Too many open files"),
        "socket": sock,
    }


def test_a_served_loop_gets_its_exception_handler_back_and_keeps_others_errors(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """``serve_uvicorn`` runs on the caller's loop: only this server's accept failures
    become the warning, and only while it serves; each serve leaves the handler it found."""
    watch = _uvicorn._Descriptors(clock=lambda: 0.0)  # pyright: ignore[reportPrivateUsage]
    monkeypatch.setattr(_uvicorn, "_descriptors", lambda: watch)  # no earlier warning's pause

    async def main() -> None:
        loop = asyncio.get_running_loop()
        theirs: list[dict[str, Any]] = []

        def previous(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
            theirs.append(context)

        loop.set_exception_handler(previous)
        other = await loop.create_server(asyncio.Protocol, "127.0.0.1", 0)
        async with other:
            for _ in range(2):
                started = asyncio.Event()
                server = _uvicorn.uvicorn_server(
                    StreamableHTTPApp(MCPServer("served")), port=0, on_started=started.set
                )
                serving = asyncio.create_task(server.serve())
                await started.wait()
                loop.call_exception_handler(out_of_descriptors(server.servers[0].sockets[0]))
                assert not theirs
                foreign = out_of_descriptors(other.sockets[0])
                loop.call_exception_handler(foreign)
                assert theirs == [foreign]
                theirs.clear()
                server.should_exit = True
                await serving
                assert loop.get_exception_handler() is previous

    asyncio.run(main())
    warned = [record for record in caplog.records if WARNING in record.getMessage()]
    assert len(warned) == 1, warned  # the second one within the minute is counted
    assert "could not be accepted" in warned[0].getMessage()


def test_a_cancelled_serve_gives_the_exception_handler_back() -> None:
    """Cancelling the serving task skips uvicorn's shutdown; the handler comes back all the same."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        started = asyncio.Event()
        server = _uvicorn.uvicorn_server(
            StreamableHTTPApp(MCPServer("served")), port=0, on_started=started.set
        )
        serving = asyncio.create_task(server.serve())
        await started.wait()
        assert loop.get_exception_handler() is not None
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await serving
        assert loop.get_exception_handler() is None
        for listening in server.servers:  # uvicorn's shutdown, which closes them, never ran
            listening.close()
            await listening.wait_closed()

    asyncio.run(main())
