"""The stdio client against a server whose answer is over the limit and does not start
with its id: its call fails instead of waiting for ever."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import anyio
import pytest
from support import PATIENCE_SECONDS

from answerback import Client, MCPError, StdioServer
from answerback.client import IncomingMessage
from answerback.jsonrpc import MalformedMessage
from answerback.jsonrpc import _endpoint as endpoint_module
from answerback.types import RequestTimeoutError, TextContent
from answerback.types._errors import INTERNAL_ERROR

pytestmark = pytest.mark.anyio

LIMIT = 4096

# A handshake-era server written by hand. Its answers put "id" last, as some serializers
# do, so an answer over the client's limit does not say whose it is where the client
# looks. "big" is answered with more than the limit once "small" has come too, and
# "small" right after it (with --alone, or once "never" has come, each at once). "never"
# is never answered.
SERVER = textwrap.dedent(
    """
    import json, sys

    alone = "--alone" in sys.argv
    big = small = None
    never = False

    def write(message):
        sys.stdout.write(json.dumps(message) + "\\n")
        sys.stdout.flush()

    def text(words):
        return {"content": [{"type": "text", "text": words}]}

    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue
        if method == "initialize":
            write({
                "jsonrpc": "2.0",
                "result": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "id-last", "version": "1"},
                },
                "id": request_id,
            })
        elif method == "tools/call" and message["params"]["name"] == "never":
            never = True
        elif method == "tools/call" and message["params"]["name"] == "big":
            big = request_id
        elif method == "tools/call":
            small = request_id
        else:
            write({"jsonrpc": "2.0", "result": {}, "id": request_id})
        if alone or never or (big is not None and small is not None):
            if big is not None:
                write({"jsonrpc": "2.0", "result": text("x" * BIG_SIZE), "id": big})
                big = None
            if small is not None:
                write({"jsonrpc": "2.0", "result": text("small"), "id": small})
                small = None
    """
).replace("BIG_SIZE", str(2 * LIMIT))


def id_last_server(tmp_path: Path, *args: str) -> StdioServer:
    script = tmp_path / "id_last_server.py"
    script.write_text(SERVER)
    return StdioServer(sys.executable, [str(script), *args], max_message_bytes=LIMIT)


def assert_skipped_answer(error: MCPError) -> None:
    assert error.error.code == INTERNAL_ERROR
    assert error.message.startswith(
        f"The answer was larger than this connection's limit of {LIMIT} bytes per message "
        "and was dropped (it did not start with its id"
    ), error.message
    assert error.message.endswith("raise the limit with StdioServer(..., max_message_bytes=...).")


async def test_an_oversized_answer_without_its_id_first_fails_the_one_call_waiting(
    tmp_path: Path,
) -> None:
    """An answer over the limit whose start names no id was skipped with a warning,
    and its call waited for ever. With one call waiting, it can only be that call's."""
    async with Client(id_last_server(tmp_path, "--alone"), mode="legacy") as client:
        with anyio.fail_after(PATIENCE_SECONDS):
            with pytest.raises(MCPError) as caught:
                await client.call_tool("big")
            after = await client.call_tool("small")
    assert_skipped_answer(caught.value)
    assert after.content == [TextContent(text="small")]


async def test_an_oversized_answer_without_its_id_first_fails_the_call_left_unanswered(
    tmp_path: Path,
) -> None:
    """Two calls wait when the answer is skipped: it is the one still unanswered once
    the other's answer has come, and only it fails."""
    results: dict[str, object] = {}

    async def call(client: Client, name: str) -> None:
        try:
            results[name] = (await client.call_tool(name)).content
        except MCPError as exc:
            results[name] = exc

    async with Client(id_last_server(tmp_path), mode="legacy") as client:
        with anyio.fail_after(PATIENCE_SECONDS):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call, client, "big")
                tg.start_soon(call, client, "small")
    assert results["small"] == [TextContent(text="small")]
    big = results["big"]
    assert isinstance(big, MCPError)
    assert_skipped_answer(big)


async def test_a_skipped_answer_is_laid_on_no_call_while_a_call_given_up_may_own_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "never" and "big" wait when big's answer is skipped; "never" is then given up.
    The skipped answer may have been never's (or its late answer may be one still to
    come), so "big" is not failed: failed wrongly, it would drop its own answer when it
    came. It waits, as any call does for an answer (its own timeout bounds it), here
    within ``GIVEN_UP_GRACE`` of the cancel: the clock stands still."""
    monkeypatch.setattr(endpoint_module, "_now", lambda: 0.0)
    skipped = anyio.Event()
    results: dict[str, object] = {}

    async def message_handler(message: IncomingMessage) -> None:
        if isinstance(message, MalformedMessage):
            skipped.set()

    async def call(client: Client, name: str, scope: anyio.CancelScope) -> None:
        with scope:
            try:
                results[name] = (await client.call_tool(name)).content
            except MCPError as exc:
                results[name] = exc

    server = id_last_server(tmp_path)
    never, big = anyio.CancelScope(), anyio.CancelScope()
    async with Client(server, mode="legacy", message_handler=message_handler) as client:
        with anyio.fail_after(PATIENCE_SECONDS):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call, client, "never", never)
                tg.start_soon(call, client, "big", big)
                await skipped.wait()
                assert "big" not in results
                never.cancel()
                results["small"] = (await client.call_tool("small")).content
                assert "big" not in results
                big.cancel()
    assert results["small"] == [TextContent(text="small")]
    assert "never" not in results
    assert "big" not in results


async def test_a_call_given_up_long_ago_does_not_keep_a_skipped_answer_from_its_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "never" timed out and, as MCP asks of a server told so, was never answered. Once
    ``GIVEN_UP_GRACE`` has passed it may own no answer: big's skipped answer fails big,
    the only call waiting, instead of leaving it waiting for ever."""
    now = [0.0]
    monkeypatch.setattr(endpoint_module, "_now", lambda: now[0])
    async with Client(id_last_server(tmp_path), mode="legacy") as client:
        with anyio.fail_after(PATIENCE_SECONDS):
            with pytest.raises(RequestTimeoutError):
                await client.call_tool("never", read_timeout_seconds=0.01)
            now[0] += endpoint_module.GIVEN_UP_GRACE
            with pytest.raises(MCPError) as caught:
                await client.call_tool("big")
    assert_skipped_answer(caught.value)
