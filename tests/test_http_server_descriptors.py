"""A server out of file descriptors says so, once, and serves again once they are free.

Without the warning, new connections are closed unanswered (uvloop) or left waiting
(asyncio) while the server's log says nothing; the operator needs the limit's name and
what to do. A real server runs in a process whose RLIMIT_NOFILE is set low."""

from __future__ import annotations

import contextlib
import queue
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Generator

import httpx2
import pytest
from http_support import PATIENCE_SECONDS, POST_HEADERS, REPO, initialize_params, rpc

from answerback.transports.http import _uvicorn

resource = pytest.importorskip("resource")  # no RLIMIT_NOFILE on Windows

DESCRIPTOR_LIMIT = 64
CONNECTIONS = 2 * DESCRIPTOR_LIMIT  # more than the server can hold
WARNING = "the server is running out of file descriptors"

SERVER = """
import sys
from answerback.server import MCPServer
from answerback.transports.http import _uvicorn, run_uvicorn

if sys.argv[1] == "asyncio":
    _uvicorn.asyncio_loop_options = dict

# One warning for the whole test, however slowly a busy machine runs it.
_uvicorn.DESCRIPTORS_WARNING_SECONDS = 3600.0
mcp = MCPServer("descriptors")
run_uvicorn(mcp.http_app(), port=0)
"""


def low_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (DESCRIPTOR_LIMIT, DESCRIPTOR_LIMIT))


@contextlib.contextmanager
def limited_server(loop: str) -> Generator[tuple[str, queue.Queue[str]], None, None]:
    """The server's URL and its stderr's lines as they come ("" once it ends)."""
    lines: queue.Queue[str] = queue.Queue()
    with subprocess.Popen(
        [sys.executable, "-c", SERVER, loop], cwd=REPO, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, preexec_fn=low_limit,
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
    watch = _uvicorn._Descriptors(clock=lambda: now[0])  # pyright: ignore[reportPrivateUsage]
    watch.limit, watch.margin = 100, 10
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
