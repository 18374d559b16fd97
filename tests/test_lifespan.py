"""``MCPServer(lifespan=...)``: one value every request shares, opened once however the
server is served (in-process, stdio, streamable HTTP) and closed after the last client,
with failures to open or close it reported, never swallowed."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest
from http_support import serve
from support import PATIENCE_SECONDS, SERVERS

from answerback import Client, StdioServer
from answerback.server import Context, MCPServer
from answerback.types import TextContent

pytestmark = pytest.mark.anyio

LIFESPAN_SERVER = SERVERS / "lifespan_server.py"
START_LINE = re.compile(
    r"answerback: serving MCP at (http://127\.0\.0\.1:\d+/mcp) \(Ctrl-C to stop\)"
)


@dataclass
class Pool:
    """Stands for a database pool: what a lifespan opens once for every request."""

    log: list[str]
    queries: int = 0
    extra: dict[str, str] = field(default_factory=dict[str, str])


def counting_server(log: list[str]) -> MCPServer:
    """A server whose lifespan logs its entry and exit (after an await: a cancelled
    server still runs its cleanup) and whose ``query`` tool counts on the shared pool."""

    @asynccontextmanager
    async def lifespan(server: MCPServer) -> AsyncGenerator[Pool, None]:
        log.append(f"entered for {server.name}")
        try:
            yield Pool(log)
        finally:
            await anyio.lowlevel.checkpoint()
            log.append("left")

    mcp = MCPServer("Pooled", lifespan=lifespan)

    @mcp.tool()
    async def query(ctx: Context[Pool]) -> int:
        ctx.lifespan_context.queries += 1
        return ctx.lifespan_context.queries

    return mcp


async def queries(client: Client) -> int:
    result = await client.call_tool("query")
    assert result.structured_content is not None
    count = result.structured_content["result"]
    assert isinstance(count, int)
    return count


# -- in-process --------------------------------------------------------------------------


async def test_tools_reach_the_value_the_lifespan_yielded_in_both_eras() -> None:
    log: list[str] = []
    mcp = counting_server(log)
    assert mcp.lifespan_context is None
    async with Client(mcp, mode="legacy") as legacy:
        assert log == ["entered for Pooled"]
        assert isinstance(mcp.lifespan_context, Pool)
        assert await queries(legacy) == 1
        async with Client(mcp, mode="2026-07-28") as modern:
            assert await queries(modern) == 2
        assert await queries(legacy) == 3
    assert log == ["entered for Pooled", "left"]
    assert mcp.lifespan_context is None


async def test_a_client_after_the_last_one_left_gets_a_fresh_lifespan() -> None:
    log: list[str] = []
    mcp = counting_server(log)
    for _ in range(2):
        async with Client(mcp) as client:
            assert await queries(client) == 1
    assert log == ["entered for Pooled", "left"] * 2


async def test_concurrent_clients_share_one_lifespan_whichever_leaves_first() -> None:
    """The first client leaves, at once, while the second still calls: the value stays
    open for the second and is closed once, after it, by the task that opened it (the
    lifespan holds a task group, which no other task could leave)."""
    log: list[str] = []
    background_ran = anyio.Event()

    async def background() -> None:
        background_ran.set()
        await anyio.sleep_forever()

    @asynccontextmanager
    async def lifespan(server: MCPServer) -> AsyncGenerator[Pool, None]:
        async with anyio.create_task_group() as tg:
            tg.start_soon(background)
            log.append("entered")
            yield Pool(log)
            tg.cancel_scope.cancel()
        log.append("left")

    mcp = MCPServer("Pooled", lifespan=lifespan)

    @mcp.tool()
    def query(ctx: Context[Pool]) -> int:
        ctx.lifespan_context.queries += 1
        return ctx.lifespan_context.queries

    first_open, second_open = anyio.Event(), anyio.Event()
    counts: list[int] = []

    async def first() -> None:
        async with Client(mcp) as client:
            counts.append(await queries(client))
            first_open.set()
            await second_open.wait()
        log.append("first client closed")

    async with anyio.create_task_group() as tg:
        tg.start_soon(first)
        await first_open.wait()
        async with Client(mcp) as second:
            second_open.set()
            await anyio.wait_all_tasks_blocked()  # the first client is closing
            counts.append(await queries(second))
            assert "left" not in log
    assert background_ran.is_set()
    assert counts == [1, 2]
    assert log == ["entered", "first client closed", "left"]


async def test_a_lifespan_that_fails_to_start_fails_the_connection_with_its_error() -> None:
    attempts: list[str] = []

    @asynccontextmanager
    async def lifespan(server: MCPServer) -> AsyncGenerator[str, None]:
        attempts.append("tried")
        if len(attempts) == 1:
            raise ConnectionRefusedError("no database at db.example:5432")
        yield "pool"

    mcp = MCPServer("Flaky", lifespan=lifespan)

    @mcp.tool()
    def which(ctx: Context[str]) -> str:
        return ctx.lifespan_context

    with pytest.raises(ConnectionRefusedError, match=r"no database at db\.example:5432"):
        async with Client(mcp):
            pytest.fail("the client connected to a server whose lifespan failed")
    assert mcp.lifespan_context is None
    async with Client(mcp) as client:  # nothing half-started is left: it starts again
        result = await client.call_tool("which")
    assert result.structured_content == {"result": "pool"}


async def test_a_client_waiting_for_a_lifespan_that_fails_is_told_why() -> None:
    entering, fail = anyio.Event(), anyio.Event()

    @asynccontextmanager
    async def lifespan(server: MCPServer) -> AsyncGenerator[None, None]:
        entering.set()
        await fail.wait()
        raise ConnectionRefusedError("no database")
        yield

    mcp = MCPServer("Slow to fail", lifespan=lifespan)
    raised: dict[str, BaseException] = {}

    async def connect(which: str) -> None:
        try:
            async with Client(mcp):
                pass
        except Exception as exc:
            raised[which] = exc

    async with anyio.create_task_group() as tg:
        tg.start_soon(connect, "first")
        await entering.wait()
        tg.start_soon(connect, "second")
        await anyio.wait_all_tasks_blocked()  # the second waits for the first's lifespan
        fail.set()
    first, second = raised["first"], raised["second"]
    assert isinstance(first, ConnectionRefusedError)
    assert isinstance(second, RuntimeError)
    assert str(second) == (
        "the server's lifespan failed: ConnectionRefusedError: no database "
        "(entered for another connection)"
    )


async def test_a_lifespan_that_fails_to_stop_is_reported() -> None:
    @asynccontextmanager
    async def lifespan(server: MCPServer) -> AsyncGenerator[int, None]:
        yield 1
        raise OSError("the pool would not close")

    mcp = MCPServer("Stuck", lifespan=lifespan)
    with pytest.raises(OSError, match="the pool would not close"):
        async with Client(mcp):
            pass


async def test_without_a_lifespan_reading_it_is_an_error_saying_what_to_pass() -> None:
    mcp = MCPServer("Bare")

    @mcp.tool()
    def read(ctx: Context) -> str:
        return str(ctx.lifespan_context)

    async with Client(mcp) as client:
        result = await client.call_tool("read")
    assert result.is_error
    [block] = result.content
    assert isinstance(block, TextContent)
    assert "this server has no lifespan, or it yielded None" in block.text
    assert "MCPServer(..., lifespan=...)" in block.text


def test_a_lifespan_that_is_not_a_function_is_refused() -> None:
    with pytest.raises(TypeError, match="lifespan must be a function or None, not int"):
        MCPServer("x", lifespan=42)  # pyright: ignore[reportArgumentType]


def test_a_lifespan_without_its_asynccontextmanager_is_refused() -> None:
    async def lifespan(server: MCPServer) -> AsyncGenerator[int, None]:
        yield 1

    with pytest.raises(ValueError, match=r"Decorate it with @contextlib\.asynccontextmanager"):
        MCPServer("x", lifespan=lifespan)  # pyright: ignore[reportArgumentType]


async def test_a_lifespan_returning_no_context_manager_fails_saying_so() -> None:
    mcp = MCPServer("x", lifespan=lambda server: 42)  # pyright: ignore[reportArgumentType]
    with pytest.raises(TypeError, match="returned int, not an async context manager"):
        async with Client(mcp):
            pass


# -- streamable HTTP ---------------------------------------------------------------------


async def test_the_http_app_holds_the_lifespan_for_every_session() -> None:
    log: list[str] = []
    mcp = counting_server(log)
    async with serve(mcp.http_app()) as running:
        assert log == ["entered for Pooled"]  # before any client came
        async with Client(running.url, mode="legacy") as legacy:
            assert await queries(legacy) == 1
        async with Client(running.url, mode="2026-07-28") as modern:
            assert await queries(modern) == 2
        assert log == ["entered for Pooled"]
    assert log == ["entered for Pooled", "left"]


# -- server programs ---------------------------------------------------------------------


def program(log: Path, behaviour: str, where: str) -> list[str]:
    return [sys.executable, str(LIFESPAN_SERVER), str(log), behaviour, where]


@pytest.mark.parametrize("where", ["stdio", "stdio-trio"])
async def test_a_stdio_server_program_opens_its_lifespan_once(tmp_path: Path, where: str) -> None:
    log = tmp_path / "lifespan.log"
    command, *args = program(log, "ok", where)
    async with Client(StdioServer(command, args)) as client:
        assert [await visits(client) for _ in range(2)] == [1, 2]
    assert log.read_text() == "entered for Counting\nleft\n"


@pytest.mark.parametrize("where", ["stdio", "stdio-trio"])
@pytest.mark.parametrize(
    ("behaviour", "error"),
    [
        ("fail-entry", "ConnectionRefusedError: no database at db.example:5432"),
        ("fail-exit", "OSError: the pool would not close"),
    ],
)
def test_a_stdio_server_program_whose_lifespan_fails_exits_with_its_error(
    tmp_path: Path, behaviour: str, error: str, where: str
) -> None:
    completed = subprocess.run(
        program(tmp_path / "lifespan.log", behaviour, where),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=PATIENCE_SECONDS,
        check=False,
    )
    assert completed.returncode == 1
    assert "The server's lifespan failed\nTraceback" in completed.stderr
    assert completed.stderr.splitlines()[-1] == f"answerback: the server's lifespan failed: {error}"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("where", ["stdio", "stdio-trio"])
async def test_a_stdio_server_program_stopped_by_sigterm_closes_its_lifespan(
    tmp_path: Path, where: str
) -> None:
    log = tmp_path / "lifespan.log"
    async with await anyio.open_process(program(log, "ok", where)) as process:
        assert process.stderr is not None
        output = bytearray()
        with anyio.fail_after(PATIENCE_SECONDS):
            while b"lifespan entered\n" not in output:
                output += await process.stderr.receive()
            process.send_signal(signal.SIGTERM)
            assert await process.wait() == 0
    assert log.read_text() == "entered for Counting\nleft\n"


def test_an_http_server_program_whose_lifespan_fails_to_start_exits_saying_why(
    tmp_path: Path,
) -> None:
    completed = subprocess.run(
        program(tmp_path / "lifespan.log", "fail-entry", "0"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=PATIENCE_SECONDS,
        check=False,
    )
    assert completed.returncode == 1
    assert "ConnectionRefusedError: no database at db.example:5432" in completed.stderr
    assert completed.stderr.splitlines()[-1] == (
        "answerback: the server's lifespan failed: ConnectionRefusedError: no database at "
        "db.example:5432"
    )


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize(("behaviour", "code"), [("ok", 0), ("fail-exit", 1)])
async def test_an_http_server_program_closes_its_lifespan_when_stopped(
    tmp_path: Path, behaviour: str, code: int
) -> None:
    log = tmp_path / "lifespan.log"
    async with await anyio.open_process(program(log, behaviour, "0")) as process:
        assert process.stderr is not None
        output = bytearray()
        with anyio.fail_after(PATIENCE_SECONDS):
            while (match := START_LINE.search(output.decode())) is None:
                output += await process.stderr.receive()
        async with Client(match.group(1)) as client:
            assert [await visits(client) for _ in range(2)] == [1, 2]
        process.send_signal(signal.SIGTERM)
        with anyio.fail_after(PATIENCE_SECONDS):
            async for chunk in process.stderr:
                output += chunk
            assert await process.wait() == code
    assert log.read_text() == "entered for Counting\nleft\n"
    if code:
        assert output.decode().splitlines()[-1] == (
            "answerback: the server's lifespan failed: OSError: the pool would not close"
        )


async def visits(client: Client) -> int:
    result = await client.call_tool("visits")
    assert result.structured_content is not None
    count = result.structured_content["result"]
    assert isinstance(count, int)
    return count


def test_the_lifespan_example_serves_from_its_database() -> None:
    completed = subprocess.run(
        [sys.executable, str(Path(__file__).parent.parent / "examples" / "lifespan_server.py")],
        capture_output=True,
        text=True,
        timeout=PATIENCE_SECONDS,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines() == [
        "Emma: {'result': 'Jane Austen'}",
        "Dune: {'result': 'Frank Herbert'}",
    ]
