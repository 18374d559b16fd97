"""``answerback connect`` with several servers: each connects at once, in a task of its
own, so any one can be reconnected in any order, a frozen one holds up none of the
others (the prompt waits for it to connect or fail, up to its ``--timeout``), and a
config file's servers are all connected when none is named.
Also the protocol era chosen from the command line (``--mode``, a config entry's
``"mode"``), and its advice where a tool asks the way only the older era carries.

What a person sees runs in tmux (``test_terminal_e2e``); scripts run without a terminal
(``test_cli``); the library's parts in-process.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
from pathlib import Path

import pytest
from test_cli import answerback
from test_terminal_e2e import PROMPT, REPO, TEAROOM, Terminal, connect
from test_terminal_e2e import terminal as terminal  # the fixture

from answerback.cli._interface import parse
from answerback.cli._oneshot import make_client
from answerback.cli._reporting import CommandResponder, ReportedHeadless
from answerback.cli._targets import Target, TargetError, resolve
from answerback.interact import Roots
from answerback.types import LATEST_LEGACY_VERSION

OFFICIAL_SERVER = REPO / "tests" / "interop" / "official_server.py"

SILENT = """
import os, sys
with open(sys.argv[1], "w") as pidfile:
    pidfile.write(str(os.getpid()))
sys.stdin.read()  # never answers: connecting to it waits out its timeout
"""
"""A stdio server that reads and never answers, its pid written to the file named."""


def test_reconnecting_a_server_that_was_not_the_last_connected_keeps_the_session(
    terminal: Terminal,
) -> None:
    """Every server's connection was entered in the session's one task: ``reconnect``
    of any but the last closed a cancel scope out of order, and the session ended with
    anyio's RuntimeError (exit 1), every other server lost with it."""
    connect(terminal, TEAROOM, TEAROOM)
    terminal.wait_for(r"Connected to terminal_server-2")
    terminal.type("reconnect terminal_server")
    terminal.wait_for(r"Connected to terminal_server \(", after=r"answerback> reconnect")
    terminal.wait_for(PROMPT)
    terminal.type("call terminal_server:greet name=Ada")
    terminal.wait_for(r"^Hello, Ada!$", after=r"answerback> call terminal_server:greet")
    terminal.type("call terminal_server-2:greet name=Bo")
    terminal.wait_for(r"^Hello, Bo!$", after=r"answerback> call terminal_server-2:greet")
    terminal.type("reconnect terminal_server-2")
    terminal.wait_for(r"Connected to terminal_server-2", after=r"answerback> reconnect")
    terminal.type("reconnect terminal_server")
    terminal.wait_for(r"Connected to terminal_server \(", after=r"answerback> reconnect")
    terminal.type("status")
    screen = terminal.wait_for(r"question\(s\) waiting", after=r"answerback> status")
    status = screen[screen.rindex("answerback> status") :]
    assert len(re.findall(r"terminal_server(-2)? .* connected", status)) == 2, status
    assert "[exited" not in screen
    assert "RuntimeError" not in screen


def test_a_server_that_never_answers_holds_up_no_other_server(
    terminal: Terminal, tmp_path: Path
) -> None:
    """Servers were connected one after another: a frozen first one kept the second
    from even starting until it timed out (twice ``--timeout``), and the prompt with it."""
    pidfile = tmp_path / "silent.pid"
    silent = tmp_path / "silent.py"
    silent.write_text(SILENT)
    terminal.start(
        f"{sys.executable} -m answerback connect --timeout 100 "
        f"'{sys.executable} {silent} {pidfile}' '{TEAROOM}'"
    )
    screen = terminal.wait_for(r"Connected to terminal_server")
    assert "did not answer" not in screen
    assert "cannot talk to silent" not in screen
    assert not re.search(PROMPT, screen, re.MULTILINE)  # not before every server settled
    os.kill(int(pidfile.read_text()), signal.SIGKILL)
    terminal.wait_for(PROMPT)
    terminal.type("call greet name=Ada")
    screen = terminal.wait_for(r"^Hello, Ada!$", after=r"answerback> call greet")
    assert "cannot talk to silent" in " ".join(screen.split())


def test_connect_with_a_config_file_and_no_names_connects_all_its_servers(
    terminal: Terminal, tmp_path: Path
) -> None:
    """It was argparse's bare "the following arguments are required: TARGET"; hosts
    connect every server of their config file."""
    server = str(REPO / "tests" / "servers" / "terminal_server.py")
    config = tmp_path / "mcp.json"
    entry = {"command": sys.executable, "args": [server]}
    config.write_text(json.dumps({"mcpServers": {"tea": entry, "more-tea": entry}}))
    connect(terminal, options=f"--config {config}")
    terminal.type("status")
    screen = terminal.wait_for(r"question\(s\) waiting", after=r"answerback> status")
    status = screen[screen.rindex("answerback> status") :]
    assert re.search(r"^\S*\s*tea\b.* connected", status, re.MULTILINE), status
    assert re.search(r"more-tea\b.* connected", status), status


def test_no_servers_named_and_no_config_file_says_what_to_give(tmp_path: Path) -> None:
    with pytest.raises(TargetError, match=r"No server named, and no config file"):
        resolve([], None)
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps({"mcpServers": {"old": {"type": "sse", "url": "http://x/sse"}, "tea": {}}})
    )
    with pytest.raises(TargetError) as caught:
        resolve([], str(config))
    said = str(caught.value)
    assert "'old'" in said
    assert "SSE" in said
    assert f"name them: answerback connect --config {config} tea" in said


# -- the protocol era ------------------------------------------------------------------


def test_mode_is_an_option_of_call_list_and_connect() -> None:
    for command in (["call", "t", "tool"], ["list", "t"], ["connect", "t"]):
        assert parse([*command, "--mode", "legacy"]).mode == "legacy"
        assert parse(command).mode is None


def test_a_config_entrys_mode_is_read_and_checked(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    servers = {
        "old": {"command": "python", "args": ["s.py"], "mode": "legacy"},
        "web": {"url": "http://127.0.0.1:8000/mcp", "mode": LATEST_LEGACY_VERSION},
        "bad": {"command": "python", "args": ["s.py"], "mode": "oldest"},
    }
    config.write_text(json.dumps({"mcpServers": servers}))
    old, web = resolve(["old", "web"], str(config))
    assert (old.mode, web.mode) == ("legacy", LATEST_LEGACY_VERSION)
    (forced,) = resolve(["old"], str(config), "auto")
    assert forced.mode == "auto"  # --mode is for every server named
    with pytest.raises(TargetError, match=r"'bad' in .* has \"mode\" \"oldest\": use \"auto\""):
        resolve(["bad"], str(config))


def test_the_client_speaks_the_targets_mode(tmp_path: Path) -> None:
    target = Target(name="tea", url="http://127.0.0.1:8000/mcp", mode="legacy")
    inner = ReportedHeadless("tea", lambda _: None, "no terminal")
    responder = CommandResponder(inner, "tea", Roots([tmp_path]), lambda *_: None)  # pyright: ignore[reportUnknownLambdaType, reportUnknownArgumentType]
    assert make_client(target, responder).mode == "legacy"


@pytest.mark.interop
def test_a_tool_that_asks_the_older_way_names_the_option_that_lets_it(tmp_path: Path) -> None:
    """The official SDK's ``ctx.elicit`` cannot ask on 2026-07-28; the advice named
    ``Client(..., mode="legacy")``, which nobody at a command line can type."""
    target = f"{sys.executable} {OFFICIAL_SERVER}"
    refused = answerback("call", target, "ask_name")
    assert refused.returncode == 4, refused.stderr
    said = " ".join(refused.stderr.split())
    assert "connect with --mode legacy" in said
    assert 'config entry "mode": "legacy"' in said
    assert "Client(" not in said
    asked = answerback("call", "--mode", "legacy", target, "ask_name")
    assert "declined" in " ".join(asked.stderr.split()), asked.stderr  # it could ask
