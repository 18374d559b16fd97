"""A server repeating a fault (stdio lines that are not JSON-RPC, HTTP events that are
not JSON): the first ten are reported in full, then counted; the count left when the
connection closes is reported too, not lost."""

from __future__ import annotations

import json
import logging
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest
from http_support import PATIENCE_SECONDS, posted_message, serve

from answerback import Client, StdioServer
from answerback.client import IncomingMessage
from answerback.jsonrpc import MalformedMessage
from answerback.transports import StrayOutputError
from answerback.transports import _stdio as stdio_module
from answerback.transports.http import StreamableHTTPTransport
from answerback.types import TextContent

pytestmark = pytest.mark.anyio

STRAY_LINES = 15

# A handshake-era server written by hand that prints STRAY_LINES lines of debug output
# to stdout before each tool's answer.
NOISY_SERVER = textwrap.dedent(
    """
    import json, sys

    def write(message):
        sys.stdout.write(json.dumps(message) + "\\n")
        sys.stdout.flush()

    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue
        if method == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "noisy", "version": "1"},
            }
        elif method == "tools/call":
            for n in range(STRAY_LINES):
                sys.stdout.write(f"debug: step {n}\\n")
            result = {"content": [{"type": "text", "text": "done"}]}
        else:
            result = {}
        write({"jsonrpc": "2.0", "id": request_id, "result": result})
    """
).replace("STRAY_LINES", str(STRAY_LINES))


async def test_stray_lines_past_the_tenth_are_counted_and_the_count_said_at_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Each stray line was reported (a warning each by default): a server printing a
    line per request filled the log. The clock stands still, so no minute's summary
    comes: the five past the tenth are said once, as the client leaves."""
    monkeypatch.setattr(stdio_module, "_clock", lambda: 0.0)
    script = tmp_path / "noisy_server.py"
    script.write_text(NOISY_SERVER)
    reports: list[StrayOutputError] = []

    async def message_handler(message: IncomingMessage) -> None:
        if isinstance(message, StrayOutputError):
            reports.append(message)

    server = StdioServer(sys.executable, [str(script)])
    with caplog.at_level(logging.WARNING, logger="answerback.transports"):
        async with Client(server, mode="legacy", message_handler=message_handler) as client:
            with anyio.fail_after(PATIENCE_SECONDS):
                result = await client.call_tool("noisy")
    assert result.content == [TextContent(text="done")]
    assert [report.line for report in reports] == [f"debug: step {n}" for n in range(10)]
    assert all("such line" not in str(report) for report in reports[:9])
    assert "This is the 10th such line: from now on they are counted" in str(reports[9])
    said = [r.getMessage() for r in caplog.records if "more lines that are not" in r.getMessage()]
    assert len(said) == 1, said
    assert said[0].startswith(
        f"The server `{server.command_line}` wrote 5 more lines that are not JSON-RPC to "
        "stdout since the last report (the latest: 'debug: step 14')"
    ), said[0]


GARBAGE_EVENTS = 25


async def garbling_server(scope: Any, receive: Any, send: Any) -> None:
    """A legacy server whose answer to a tool call comes after GARBAGE_EVENTS events
    that are not JSON."""
    message = await posted_message(scope, receive, send)
    if message is None:
        return
    body = b""
    kind = b"application/json"
    if message.get("method") == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "Garbled", "version": "1"},
        }
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
    elif message.get("method") == "tools/call":
        done = {"content": [{"type": "text", "text": "done"}]}
        answer = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": done})
        garbage = "".join(f"data: not json {n}\n\n" for n in range(GARBAGE_EVENTS))
        body, kind = f"{garbage}data: {answer}\n\n".encode(), b"text/event-stream"
    status = 200 if body else 202
    await send(
        {"type": "http.response.start", "status": status, "headers": [(b"content-type", kind)]}
    )
    await send({"type": "http.response.body", "body": body})


async def test_unreadable_events_counted_past_the_tenth_are_said_when_the_client_closes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The count past the tenth was said only at the next event a minute on: a server
    that stopped before then had it lost. The clock stands still: it is said as the
    client leaves (logged, as the client has gone by then)."""
    reports: list[MalformedMessage] = []

    async def message_handler(message: IncomingMessage) -> None:
        if isinstance(message, MalformedMessage):
            reports.append(message)

    with caplog.at_level(logging.WARNING, logger="answerback.transports"):
        async with serve(garbling_server) as server:
            transport = StreamableHTTPTransport(server.url)
            transport._clock = lambda: 0.0  # pyright: ignore[reportPrivateUsage]
            async with Client(transport, mode="legacy", message_handler=message_handler) as client:
                with anyio.fail_after(PATIENCE_SECONDS):
                    result = await client.call_tool("garbled")
    assert result.content == [TextContent(text="done")]
    assert len(reports) == 10, [str(r) for r in reports]
    said = [r.getMessage() for r in caplog.records if "more messages that" in r.getMessage()]
    assert len(said) == 1, said
    assert said[0].startswith(
        f"the server sent {GARBAGE_EVENTS - 10} more messages that could not be read since "
        "the last report"
    ), said[0]
