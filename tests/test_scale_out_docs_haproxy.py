"""docs/deployment.md's haproxy configuration, as printed, in front of two copies of
examples/scaled_out_server.py on one real Redis: haproxy accepts it, its health check
finds the copies up, calls go through, its runtime API drains a copy, and the page's
rolling restart (drain, stop, start, back in service) leaves every copy serving. The
page's readiness route, run as printed, fails while its replica cannot reach Redis.

Only what cannot be the same here is replaced: the TLS ``bind`` (a loopback port), the
servers' addresses (the copies' ports) and the runtime API's socket (a file of the
test's); the third server is dropped (two copies are enough to alternate).
"""

from __future__ import annotations

import re
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Generator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx2
import pytest
from scale_out.cluster import (
    ROOT,
    Process,
    Redis,
    free_port,
    haproxy_path,
    missing_for_haproxy,
    missing_for_redis,
    redis_server,
    started,
)

from answerback import Client
from answerback.client import ClientRequestContext
from answerback.types import ElicitRequestParams, ElicitResult, TextContent

EXAMPLE = ROOT / "examples" / "scaled_out_server.py"
PAGE = ROOT / "docs" / "deployment.md"
PATIENCE_SECONDS = 60.0
"""A safety net so a broken test fails instead of hanging; never a claim about speed."""
CHECK_POLL_SECONDS = 0.2
"""haproxy tells no one when a check passes: its state is read this often, under a
deadline, until it does."""

pytestmark = [
    pytest.mark.skipif(missing_for_redis() is not None, reason=str(missing_for_redis())),
    pytest.mark.skipif(missing_for_haproxy() is not None, reason=str(missing_for_haproxy())),
    pytest.mark.parametrize("anyio_backend", ["asyncio"]),
]


def documented_config() -> str:
    """The haproxy configuration under the page's "haproxy" heading."""
    section = PAGE.read_text().split("\n## haproxy\n", 1)[1]
    found = re.search(r"```text\n(.*?)```", section, re.DOTALL)
    assert found is not None, "no configuration block under ## haproxy"
    return found.group(1)


def adapted(config: str, port: int, servers: list[int], admin: Path) -> str:
    """``config`` with the bind, servers and runtime API socket of this test."""
    config, binds = re.subn(r"bind :443 ssl crt \S+", f"bind 127.0.0.1:{port}", config)
    config, sockets = re.subn(r"stats socket \S+", f"stats socket {admin}", config)
    lines: list[str] = []
    for line in config.splitlines():
        server = re.match(r"(\s*server r(\d+) )\S+:8000( .*)", line)
        if server is not None:
            index = int(server.group(2)) - 1
            if index >= len(servers):
                continue
            line = f"{server.group(1)}127.0.0.1:{servers[index]}{server.group(3)}"
        lines.append(line)
    assert (binds, sockets) == (1, 1), config
    return "\n".join(lines) + "\n"


def runtime_api(admin: Path, command: str) -> str:
    """One command on haproxy's runtime API, and its reply."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(str(admin))
        conn.sendall(command.encode() + b"\n")
        reply = b""
        while chunk := conn.recv(65536):
            reply += chunk
    return reply.decode()


def server_states(admin: Path) -> dict[str, tuple[str, str, int]]:
    """``{server: (status, last check's status, requests sent)}`` of the ``replicas``
    backend."""
    lines = runtime_api(admin, "show stat").splitlines()
    header = lines[0].lstrip("# ").split(",")
    rows = [dict(zip(header, line.split(","), strict=False)) for line in lines[1:] if line]
    return {
        row["svname"]: (row["status"], row["check_status"], int(row["stot"]))
        for row in rows
        if row["pxname"] == "replicas" and row["svname"] not in ("FRONTEND", "BACKEND")
    }


def checked(config: Path) -> None:
    """haproxy's own verdict on ``config`` (``haproxy -c``)."""
    haproxy = haproxy_path()
    assert haproxy is not None
    check = subprocess.run(
        [haproxy, "-c", "-f", str(config)], capture_output=True, text=True, timeout=30
    )
    assert check.returncode == 0, check.stdout + check.stderr


def until_every_server_passes_its_check(admin: Path) -> None:
    deadline = time.monotonic() + PATIENCE_SECONDS
    while True:
        states = server_states(admin)
        if {state[:2] for state in states.values()} == {("UP", "L7OK")}:
            return
        assert time.monotonic() < deadline, f"haproxy's checks did not pass: {states}"
        time.sleep(CHECK_POLL_SECONDS)  # polling haproxy under a deadline: nothing to wait on


async def answer_two(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"guests": 2})


async def book(url: str) -> list[str]:
    texts: list[str] = []
    async with Client(url, mode="legacy", elicitation_callback=answer_two) as client:
        for _ in range(3):
            block = (await client.call_tool("book_table", {})).content[0]
            assert isinstance(block, TextContent)
            texts.append(block.text)
    return texts


@pytest.mark.anyio
async def test_the_documented_haproxy_config_serves_the_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANSWERBACK_STATE_KEY", secrets.token_hex(32))
    haproxy = haproxy_path()
    assert haproxy is not None
    admin = tmp_path / "admin.sock"
    with redis_server(tmp_path) as redis:
        ports = [free_port(), free_port()]
        argv = [
            [sys.executable, str(EXAMPLE), "--host", "127.0.0.1", "--port", str(p), "--redis"]
            for p in ports
        ]
        with (
            started("copy 1", [*argv[0], redis.url], ports[0], tmp_path / "1.log") as first,
            started("copy 2", [*argv[1], redis.url], ports[1], tmp_path / "2.log") as second,
        ):
            first.wait_listening()
            second.wait_listening()
            port = free_port()
            config = tmp_path / "haproxy.cfg"
            config.write_text(adapted(documented_config(), port, ports, admin))
            checked(config)
            proxy = [haproxy, "-db", "-f", str(config)]
            with started("haproxy", proxy, port, tmp_path / "haproxy.log") as balancer:
                balancer.wait_listening()
                until_every_server_passes_its_check(admin)
                with anyio.fail_after(PATIENCE_SECONDS):
                    url = f"http://127.0.0.1:{port}/mcp"
                    both = await book(url)
                    served = server_states(admin)
                    drained = runtime_api(admin, "set server replicas/r1 state drain")
                    after_drain = await book(url)
                    states = server_states(admin)
    assert drained.strip() == "", drained
    assert states["r1"][0] == "DRAIN", states
    for text in both + after_drain:
        assert text.startswith("Booked a table for 2 on replica "), text
    assert all(requests > 0 for _, _, requests in served.values()), served
    assert {text.rsplit(" ", 1)[1] for text in after_drain} == {f"{second.popen.pid}."}


def section(heading: str) -> str:
    """The page's text under ``## heading``, up to the next heading of that level."""
    return PAGE.read_text().split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def drain_commands() -> tuple[list[str], list[str]]:
    """The runtime API commands "Draining a replica" gives for ``r1``: those before its
    step that stops the replica, and those after (once it runs again)."""
    before, after = section("Draining a replica").split("Stop it (SIGTERM)", 1)
    command = r'echo "(set server replicas/r1 [^"]+)"'
    return re.findall(command, before), re.findall(command, after)


def settled_status(admin: Path, server: str) -> str:
    """``server``'s status once its health check passes and no change is under way
    (haproxy writes one as, say, ``DOWN 1/2``)."""
    deadline = time.monotonic() + PATIENCE_SECONDS
    while True:
        status, check, _ = server_states(admin)[server]
        if check == "L7OK" and " " not in status:
            return status
        assert time.monotonic() < deadline, f"{server} did not settle: {status}, {check}"
        time.sleep(CHECK_POLL_SECONDS)  # polling haproxy under a deadline: nothing to wait on


@dataclass
class Deployment:
    """The page's haproxy in front of two copies of the example on one Redis."""

    url: str
    admin: Path
    copies: list[Process]
    argv: list[list[str]]
    stack: ExitStack
    workdir: Path

    def restart(self, index: int) -> Process:
        """Stop copy ``index`` (SIGTERM) and start it again on its port."""
        old = self.copies[index]
        old.stop()
        log = self.workdir / f"{index + 1}-again.log"
        new = self.stack.enter_context(started(old.name, self.argv[index], old.port, log))
        new.wait_listening()
        self.copies[index] = new
        return new


@contextmanager
def deployment(workdir: Path) -> Generator[Deployment, None, None]:
    haproxy = haproxy_path()
    assert haproxy is not None
    admin = workdir / "admin.sock"
    with ExitStack() as stack:
        redis: Redis = stack.enter_context(redis_server(workdir))
        ports = [free_port(), free_port()]
        example = [sys.executable, str(EXAMPLE), "--host", "127.0.0.1", "--redis", redis.url]
        argv = [[*example, "--port", str(port)] for port in ports]
        copies = [
            stack.enter_context(
                started(f"copy {n}", argv[n - 1], ports[n - 1], workdir / f"{n}.log")
            )
            for n in (1, 2)
        ]
        for copy in copies:
            copy.wait_listening()
        port = free_port()
        config = workdir / "haproxy.cfg"
        config.write_text(adapted(documented_config(), port, ports, admin))
        checked(config)
        proxy = [haproxy, "-db", "-f", str(config)]
        balancer = stack.enter_context(started("haproxy", proxy, port, workdir / "haproxy.log"))
        balancer.wait_listening()
        until_every_server_passes_its_check(admin)
        url = f"http://127.0.0.1:{port}/mcp"
        yield Deployment(url, admin, copies, argv, stack, workdir)


@pytest.mark.anyio
async def test_the_documented_rolling_restart_puts_each_replica_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Following "Draining a replica" step by step for r1, then draining r2: the
    restarted r1 serves every call (before, it stayed drained, and draining r2 left
    haproxy no server: a total outage)."""
    monkeypatch.setenv("ANSWERBACK_STATE_KEY", secrets.token_hex(32))
    before_stop, after_start = drain_commands()
    assert before_stop, "no runtime API command to drain r1 before stopping it"
    with deployment(tmp_path) as deployed:
        replies = [runtime_api(deployed.admin, command) for command in before_stop]
        restarted = deployed.restart(0)
        replies += [runtime_api(deployed.admin, command) for command in after_start]
        status = settled_status(deployed.admin, "r1")
        for command in before_stop:
            replies.append(runtime_api(deployed.admin, command.replace("/r1 ", "/r2 ")))
        with anyio.fail_after(PATIENCE_SECONDS):
            texts = await book(deployed.url)
    assert all(reply.strip() == "" for reply in replies), replies
    assert status == "UP", f"after the documented steps r1 is {status}, not back in service"
    assert {text.rsplit(" ", 1)[1] for text in texts} == {f"{restarted.popen.pid}."}, texts


LOGGED_WARNING = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} WARNING answerback\.http: ", re.MULTILINE
)
"""A warning as the page's ``logging.basicConfig`` writes it: time, level, source."""


def until_logged(process: Process, pattern: re.Pattern[str]) -> str:
    """The first line of ``process``'s log matching ``pattern``, once it is written."""
    deadline = time.monotonic() + PATIENCE_SECONDS
    while (found := pattern.search(process.log_tail(1_000_000))) is None:
        assert time.monotonic() < deadline, f"not logged: {pattern.pattern}\n{process.log_tail()}"
        time.sleep(CHECK_POLL_SECONDS)  # polling a log under a deadline: nothing to wait on
    line_end = found.string.find("\n", found.start())
    return found.string[found.start() : line_end if line_end >= 0 else None]


def readiness_program(port: int) -> str:
    """The replica with a readiness route under "Health checks", on loopback ``port``."""
    found = re.search(r"```python skip\n(.*?)```", section("Health checks"), re.DOTALL)
    assert found is not None, "no replica program under ## Health checks"
    served_at = f'host="127.0.0.1", port={port}'
    program, replaced = re.subn(r'host="0\.0\.0\.0", port=8000', served_at, found.group(1))
    assert replaced == 1, program
    return program


@pytest.mark.anyio
async def test_the_documented_readiness_route_fails_while_redis_is_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The route "Health checks" adds beside the MCP endpoint answers 200 while its
    replica reaches Redis and 503 once Redis is gone, so a balancer checking it takes
    the replica out (the MCP endpoint's own check never asks Redis); and the replica's
    warnings carry their time, level and source, as "Logs" promises."""
    monkeypatch.setenv("ANSWERBACK_STATE_KEY", secrets.token_hex(32))
    port = free_port()
    script = tmp_path / "ready_replica.py"
    script.write_text(readiness_program(port))
    with redis_server(tmp_path) as redis:
        monkeypatch.setenv("REDIS_URL", redis.url)
        argv = [sys.executable, str(script)]
        with started("replica", argv, port, tmp_path / "replica.log") as replica:
            replica.wait_listening()
            async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
                with anyio.fail_after(PATIENCE_SECONDS):
                    reaching = await http.get("/ready")
                    endpoint = await http.get("/mcp")
                    redis.process.stop()
                    cut_off = await http.get("/ready")
            logged = until_logged(replica, LOGGED_WARNING)
    assert (reaching.status_code, reaching.text) == (200, "ready")
    assert endpoint.status_code == 400, endpoint.text  # the MCP endpoint, asking for a session
    assert "Mcp-Session-Id" in endpoint.text, endpoint.text
    assert cut_off.status_code == 503, cut_off.text
    assert "Redis" in cut_off.text, cut_off.text
    assert "Redis" in logged, logged
