"""What a keyboard probe of ``answerback connect`` left over, fixed: an HTTP server's
name (``host:port``) can qualify a tool as the session itself suggests; a refused link's
reason never quotes its password; a server that went away says what to do.

What a person sees runs in tmux (``test_terminal_e2e``); the session's own parts are
driven directly.
"""

from __future__ import annotations

import os
import re
import signal
import sys
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

import anyio
import pytest
from http_support import served_by_answerback
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from rich.console import Console
from test_cli import SERVERS, TEAROOM
from test_terminal_e2e import FORM_KEYS, PROMPT, Terminal, connect
from test_terminal_e2e import terminal as terminal  # the fixture

from answerback import Client
from answerback.cli._connect import Session, SessionCompleter
from answerback.cli._interface import redacted
from answerback.cli._oneshot import failure
from answerback.cli._targets import Target
from answerback.client._url_elicitation import refuse_blocked
from answerback.interact import Roots
from answerback.jsonrpc._endpoint import WHY
from answerback.transports.http._client import STAYS_OPEN
from answerback.types import ConnectionClosedError, Tool
from answerback.urls import ReasonCode, judge_url

# -- defect 3: SERVER:TOOL for a server whose name holds a colon --------------------------


def test_an_http_servers_tool_is_called_by_the_name_the_session_suggests(
    terminal: Terminal,
) -> None:
    """``call 127.0.0.1:PORT:greet`` was read as server ``127.0.0.1``, so with a second
    server offering ``greet`` the HTTP server's could not be called at all, though the
    ambiguity message and Tab offered exactly that spelling."""
    with served_by_answerback(SERVERS / "terminal_server.py") as url:
        http_name = urlsplit(url).netloc
        connect(terminal, url, TEAROOM)
        terminal.wait_for(f"Connected to {re.escape(http_name)}")
        terminal.wait_for("Connected to terminal_server")
        terminal.type("call greet name=Ada")
        terminal.wait_for(
            rf"say which \({re.escape(http_name)}:greet, terminal_server:greet\)",
            after="answerback> call greet name=Ada",
        )
        terminal.type(f"call {http_name}:gre", enter=False)
        terminal.keys("Tab")
        terminal.wait_for(rf"answerback> call {re.escape(http_name)}:greet\s*$")
        terminal.type(" name=Ada")
        terminal.wait_for(rf"\[1\] {re.escape(http_name)}: call greet…")
        terminal.wait_for(rf"\[1\] {re.escape(http_name)}: call greet →")
        terminal.wait_for(r"^Hello, Ada!$")
        terminal.type("call terminal_server:greet name=Bo")
        terminal.wait_for(r"\[2\] terminal_server: call greet…")
        terminal.wait_for(r"^Hello, Bo!$")


def session_of(tmp_path: Path, *names: str) -> Session:
    """A session whose servers ``names`` are connected, as far as its commands know,
    each offering the tool ``greet``."""
    session = Session(
        [Target(name=name) for name in names],
        Roots([tmp_path]),
        history=tmp_path / "history",
        timeout=None,
        log_level="info",
    )
    session.console = Console(record=True, width=200)
    for server in session.servers:
        server.client = cast(Any, object())
        server.tools = [Tool(name="greet", input_schema={"type": "object"})]
    return session


def test_the_longest_server_name_before_a_colon_wins(tmp_path: Path) -> None:
    session = session_of(tmp_path, "localhost", "localhost:8000")
    find = session._find  # pyright: ignore[reportPrivateUsage]
    named = {s.name: s for s in session.servers}

    def listed(server: Any) -> list[str]:
        return ["greet"]

    assert find("localhost:8000:greet", "tool", listed) == (named["localhost:8000"], "greet")
    assert find("localhost:greet", "tool", listed) == (named["localhost"], "greet")
    # Every qualified name Tab offers resolves to its server.
    completer = SessionCompleter(session.live_servers, lambda: session.servers)
    offered = [
        c.text for c in completer.get_completions(Document("call localhost"), CompleteEvent())
    ]
    assert sorted(offered) == ["localhost:8000:greet", "localhost:greet"]
    for text in offered:
        server, tool = find(text, "tool", listed)
        assert f"{server.name}:{tool}" == text


def test_reconnect_completes_every_server_name_those_gone_too(tmp_path: Path) -> None:
    """The completer knew only live servers, and ``reconnect`` is for those gone:
    ``reconnect`` + Tab offered nothing for them."""
    session = session_of(tmp_path, "tea", "coffee", "cocoa")
    gone = {s.name: s for s in session.servers}
    gone["coffee"].client = None  # never answered
    gone["cocoa"].lost = "it exited"  # went away
    completer = SessionCompleter(session.live_servers, lambda: session.servers)

    def offered(text: str) -> list[str]:
        return [c.text for c in completer.get_completions(Document(text), CompleteEvent())]

    assert offered("reconnect ") == ["tea", "coffee", "cocoa"]
    assert offered("reconnect co") == ["coffee", "cocoa"]
    assert offered("tools ") == ["tea"]  # the others take live servers only
    assert offered("reconnect tea ") == []


# -- defect 8: a refused link's reason and its password ------------------------------------


def test_a_links_reason_quotes_its_user_name_but_never_its_password() -> None:
    verdict = judge_url("https://user:s3cret@example.com/")
    (reason,) = [r for r in verdict.reasons if r.code is ReasonCode.USERINFO]
    assert "('user:****')" in reason.message
    # The line the person sees when the client refuses the link: its reasons.
    said = redacted(str(refuse_blocked(verdict)))
    assert "s3cret" not in said
    assert "('user:****')" in said
    # A user name alone is quoted: it is what deceives (a site's name before '@').
    tricked = judge_url("https://google.com@evil.com/")
    assert "('google.com')" in tricked.reasons[0].message


# -- defect 10: a server that went away --------------------------------------------------


def test_a_server_that_went_away_is_connected_again_by_reconnect(
    terminal: Terminal, tmp_path: Path
) -> None:
    """The call's failure advised "Open a new connection", which ``connect`` had no
    command for, then "quit and run connect again", which lost the session. ``reconnect``
    starts the same server again, in the same session (its history too)."""
    pidfile = tmp_path / "server.pid"
    connect(terminal, TEAROOM)
    terminal.type(f"call vanish pidfile={pidfile}")
    terminal.wait_for(r"A form whose server will die")
    first = int(pidfile.read_text())
    os.kill(first, signal.SIGKILL)
    terminal.wait_gone(FORM_KEYS)
    terminal.wait_for(
        r"Server terminal_server went away: .*\. To use it again, type reconnect "
        r"terminal_server\."
    )
    screen = terminal.wait_for(r"\[1\] cannot talk to terminal_server .*SIGKILL\)?\.$")
    assert "new connection" not in screen
    terminal.wait_for(PROMPT)
    terminal.type("reconnect")
    terminal.wait_for(r"Connected to terminal_server", after=r"answerback> reconnect")
    terminal.type("call greet name=Ada")
    terminal.wait_for(r"^Hello, Ada!$", after=r"answerback> call greet")
    terminal.keys("Up", "Up", "Up")  # the lines typed before the server went away
    terminal.wait_for(rf"^answerback> call vanish pidfile={re.escape(str(pidfile))}\s*$")
    terminal.keys("C-u")
    terminal.type("reconnect")
    terminal.wait_for(r"Every server is connected", after=r"answerback> reconnect")
    terminal.type("call vanish pidfile=" + str(pidfile))
    terminal.wait_for(r"A form whose server will die")
    assert int(pidfile.read_text()) != first  # started again: the same target, anew
    terminal.keys("Escape")


HANGING_LISTING = """
import json, sys

for line in sys.stdin:
    message = json.loads(line)
    method, ident = message.get("method"), message.get("id")
    if method == "initialize":
        answer = {
            "result": {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hang", "version": "1"},
            }
        }
    elif ident is None or method == "tools/list":
        continue
    else:
        answer = {"error": {"code": -32601, "message": "Method not found"}}
    print(json.dumps({"jsonrpc": "2.0", "id": ident, **answer}), flush=True)
"""
"""A server that answers initialize, and refuses what else it does not know, but never
answers tools/list: its listing waits for ever."""


def test_reconnect_while_the_first_listing_waits_says_nothing_of_the_old_one(
    terminal: Terminal, tmp_path: Path
) -> None:
    """``reconnect`` while the old connection's first listing still waited printed "Could
    not list what hanging offers: ... the connection was closed. Type tools hanging to try
    again.", of a connection it had just replaced (and, had that failure come once the
    server had no client, its assertion would have ended the session)."""
    server = tmp_path / "hanging.py"
    server.write_text(HANGING_LISTING)
    connect(terminal, f"{sys.executable} {server}")
    terminal.wait_for(r"Connected to hanging")
    terminal.type("reconnect hanging")
    terminal.wait_for(r"Connected to hanging", after=r"answerback> reconnect hanging")
    terminal.type("status")
    screen = terminal.wait_for(r"hanging .* connected", after=r"answerback> status")
    assert "Could not list" not in screen


@pytest.mark.anyio
async def test_a_first_listing_that_fails_once_reconnect_took_its_client_says_nothing(
    tmp_path: Path,
) -> None:
    """Had the old connection's listing failed once ``reconnect`` had cleared the
    server's client, its report asserted a client and the assertion ended the session."""
    script = tmp_path / "hanging.py"
    script.write_text(HANGING_LISTING)
    session = Session(
        [Target(name="hanging", command=[sys.executable, str(script)])],
        Roots([tmp_path]),
        history=tmp_path / "history",
        timeout=None,
        log_level="info",
    )
    session.console = Console(record=True, width=200)
    (server,) = session.servers
    first_listing = session._first_listing  # pyright: ignore[reportPrivateUsage]
    async with (
        anyio.create_task_group() as group,
        Client(server.target.client_target()) as client,
    ):
        server.client = client
        group.start_soon(first_listing, server, client)
        server.client = None  # as reconnect does, then closes it: the listing fails
    assert "Could not list" not in session.console.export_text()
    assert server.tools == []


def test_a_muted_servers_declined_question_leaves_a_line_once_a_mute(
    terminal: Terminal,
) -> None:
    """Its questions were declined with no word of it: only the tool's result told."""
    said = r"declined a form from terminal_server unseen: the person muted this server"
    connect(terminal, TEAROOM)
    terminal.type("mute terminal_server")
    terminal.wait_for(r"Muted terminal_server")
    terminal.type("call order_tea")
    terminal.wait_for(said)
    terminal.wait_for(r"^No order \(decline\)\.$")
    terminal.type("call order_tea")
    screen = terminal.wait_for(r"\[2\] terminal_server: call order_tea →")
    terminal.wait_for(r"^No order \(decline\)\.$", after=r"\[2\] terminal_server: call order_tea →")
    assert len(re.findall(said, screen)) == 1  # one line a mute, however much it asks
    terminal.type("unmute terminal_server")
    terminal.type("mute terminal_server")
    terminal.type("call order_tea")
    screen = terminal.wait_for(r"^No order \(decline\)\.$", after=r"\[3\] terminal_server")
    assert len(re.findall(said, screen)) == 2


def test_a_request_failure_does_not_say_the_connection_stays_open_as_the_command_exits() -> None:
    """The library's "Request failed" ends saying the connection stays open, for a
    program that goes on; the command is leaving."""
    reason = "the server at http://127.0.0.1:9/mcp answered HTTP 502."
    exc = ConnectionClosedError(f"Request failed: {reason} {STAYS_OPEN}.", {WHY: reason})
    said = str(failure(Target(name="tea", url="http://127.0.0.1:9/mcp"), exc))
    assert said == f"cannot talk to tea (http://127.0.0.1:9/mcp): {reason}"
