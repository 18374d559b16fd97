"""Each side loads only its own code: importing and using the HTTP client leaves starlette
and uvicorn unimported, and a server answering over stdio (as a script or through
``answerback run``) never loads the client, httpx2, the URL verdicts or the terminal's
output library. Start-up time is what a host waits for on every server it launches.
Each check runs in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from http_support import PATIENCE_SECONDS, REPO, serve
from http_support.apps import http_app

SERVER_MODULES = ("starlette", "uvicorn", "answerback.transports.http._server")

CHECK = f"""
import sys
loaded = [name for name in {SERVER_MODULES!r} if name in sys.modules]
assert not loaded, f"server modules loaded by a client-only program: {{loaded}}"
"""

IMPORTS = """
import answerback
from answerback import Client
from answerback.client import ClientRequestContext
import answerback.transports.http._client
from answerback.transports.http import StreamableHTTPTransport
"""

CONNECT = """
import sys

import anyio
from answerback import Client

async def main(url):
    async with Client(url, mode="legacy") as client:
        result = await client.call_tool("pause", {"seconds": 0})
        assert result.content[0].text == "done", result

anyio.run(main, sys.argv[1])
"""


def unknown_name_fails(module: str) -> str:
    """Code that checks ``module`` (a name bound in it) raises AttributeError, naming
    the name, for a name it does not have."""
    return f"""
try:
    {module}.NoSuchName
except AttributeError as exc:
    assert "NoSuchName" in str(exc)
else:
    raise AssertionError("an unknown name must raise AttributeError")
"""


def run_python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=PATIENCE_SECONDS,
        check=False,
    )


def test_importing_the_client_loads_no_server_code() -> None:
    """Nothing of the server loads until a server name is used; then it loads on first
    use, and reports its public home like every export."""
    code = (
        IMPORTS
        + CHECK
        + """
from answerback.transports.http import StreamableHTTPApp, uvicorn_server, HostPolicy
import answerback.transports.http as http
assert "answerback.transports.http._server" in sys.modules
assert StreamableHTTPApp.__module__ == "answerback.transports.http"
assert "StreamableHTTPApp" in dir(http)
assert "uvicorn" in sys.modules
"""
        + unknown_name_fails("http")
    )
    done = run_python(code)
    assert done.returncode == 0, done.stderr


@pytest.mark.anyio
async def test_a_client_talking_to_a_url_loads_no_server_code() -> None:
    async with serve(http_app()) as running:
        with anyio.fail_after(PATIENCE_SECONDS):
            done = await anyio.to_thread.run_sync(run_python, CONNECT + CHECK, running.url)
    assert done.returncode == 0, done.stderr


CLIENT_MODULES = (
    "answerback.client",
    "answerback.transports.http._client",
    "httpx2",
    "answerback.urls",
    "rich",
)

STDIO_SERVER = f"""
import sys

from answerback.server import MCPServer

mcp = MCPServer("lean")


@mcp.tool()
def client_modules_loaded() -> list[str]:
    return [name for name in {CLIENT_MODULES!r} if name in sys.modules]


if __name__ == "__main__":
    mcp.run()
"""


@pytest.mark.parametrize("runner", [[], ["-m", "answerback", "run"]], ids=["script", "cli"])
def test_a_server_answering_over_stdio_loads_no_client_code(
    tmp_path: Path, runner: list[str]
) -> None:
    """Run as a script or by ``answerback run`` (a host waits for either to start), the
    server has loaded nothing of the client by the time it answers a call."""
    server = tmp_path / "lean_server.py"
    server.write_text(STDIO_SERVER)
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "client_modules_loaded"},
        },
    ]
    done = subprocess.run(
        [sys.executable, *runner, str(server)],
        cwd=REPO,
        input="".join(json.dumps(request) + "\n" for request in requests),
        capture_output=True,
        text=True,
        timeout=PATIENCE_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [answer["id"] for answer in answers] == [1, 2]
    assert answers[1]["result"]["structuredContent"] == {"result": []}


def test_the_top_level_names_load_on_first_use() -> None:
    code = """
import sys
import answerback
assert "answerback.client" not in sys.modules
assert "Client" in dir(answerback)
from answerback import Client, MCPError, StdioServer
assert Client.__module__ == "answerback.client"
assert answerback.Client is Client
""" + unknown_name_fails("answerback")
    done = run_python(code)
    assert done.returncode == 0, done.stderr
