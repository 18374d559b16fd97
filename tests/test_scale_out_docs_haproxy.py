"""docs/deployment.md's haproxy configuration, as printed, in front of two copies of
examples/scaled_out_server.py on one real Redis: haproxy accepts it, its health check
finds the copies up, calls go through, and its runtime API drains a copy.

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
from pathlib import Path

import anyio
import pytest
from scale_out.cluster import (
    ROOT,
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
