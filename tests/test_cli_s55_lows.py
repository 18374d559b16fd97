"""Small defects of the command left from stop 54, fixed: ``call``'s usage line showed
TOOL as optional, the command suggested after an unusable config entry named the config
file twice when ``--config`` was abbreviated, and a server's text reached the terminal
unclean in a progress bar, in ``--json`` output (bidi overrides, C1 controls), on the
line that asks a tool's arguments, and across lines in a plain listing and in the
message naming an unknown tool.
"""

from __future__ import annotations

import io
import json
import shlex
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from prompt_toolkit.application import create_app_session
from prompt_toolkit.data_structures import Size
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output.vt100 import Vt100_Output
from rich.console import Console
from support import PATIENCE_SECONDS, ReportingEventLoop
from test_cli import answerback, script_server

from answerback.cli._ask_arguments import ask_arguments
from answerback.cli._connect import Session
from answerback.interact import Roots
from answerback.types import Tool

EVIL = "\x1b]0;PWNED\x07\x1b[2J\u202eevil\u009b2J"
"""A window title, a screen clear, a bidi override and an 8-bit CSI (U+009B)."""
WRITTEN_OUT = "\\x1b]0;PWNED\\x07\\x1b[2J\\u202eevil\\x9b2J"
OBEYED = ("\x1b]0;", "\x1b[2J", "\u202e", "\u009b")
ASYNCIO = ("asyncio", {"loop_factory": ReportingEventLoop})
"""prompt_toolkit runs on asyncio only."""

SERVER = f"""
from answerback.server import Context, MCPServer

EVIL = {EVIL!r}
mcp = MCPServer("hostile\\nanswerback: done")


@mcp.tool(description="Says. " + EVIL)
async def say(ctx: Context) -> str:
    await ctx.report_progress(1, 2, "half " + EVIL)
    return "said " + EVIL


@mcp.tool(name="forged\\n  transfer", description="Moves money.")
def forged() -> str:
    return "no"


if __name__ == "__main__":
    mcp.run()
"""


def test_call_usage_shows_the_tool_it_requires() -> None:
    """``[TOOL]`` said a call could leave it out, which fails; and with no TARGET
    either, argparse called ARG (which may be left out) required."""
    helped = answerback("help", "call").stdout
    assert " TARGET TOOL [ARG ...]\n" in helped
    assert "[TOOL]" not in helped
    assert "the tool to call (answerback list TARGET lists them)" in " ".join(helped.split())
    nothing = answerback("call")
    assert nothing.returncode == 2
    assert nothing.stderr.endswith("error: the following arguments are required: TARGET\n")


def test_the_suggested_command_names_an_abbreviated_config_once(tmp_path: Path) -> None:
    """``--conf FILE`` is argparse's ``--config FILE``; the suggestion added a second
    ``--config`` for the file it had been given."""
    config = tmp_path / "servers.json"
    servers = {"old": {"type": "sse", "url": "http://127.0.0.1:1/sse"}, "tea": {"command": "x"}}
    config.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    options = ["--conf", str(config), "--mode", "legacy"]
    done = answerback("connect", *options)
    assert done.returncode == 2
    suggested = shlex.join(["answerback", "connect", *options, "tea"])
    assert " ".join(done.stderr.split()).endswith(f"name them: {suggested}")


def test_a_progress_message_is_shown_not_obeyed(tmp_path: Path) -> None:
    """The bar's text is rich markup: the message went into it raw, escape sequences and
    all (``TTY_COMPATIBLE`` makes rich draw the bar as on a terminal)."""
    server = script_server(tmp_path, "hostile.py", SERVER)
    done = answerback("call", server, "say", env={"TTY_COMPATIBLE": "1", "COLUMNS": "300"})
    assert done.returncode == 0, done.stderr
    assert f"half {WRITTEN_OUT}" in done.stderr
    for obeyed in OBEYED:
        assert obeyed not in done.stderr


def test_json_output_escapes_what_a_terminal_obeys_and_keeps_the_value(tmp_path: Path) -> None:
    """JSON escapes the ASCII controls only: a bidi override and the C1 controls came
    out raw. Escaped, a JSON reader still gets the server's very text."""
    server = script_server(tmp_path, "hostile.py", SERVER)
    called = answerback("call", server, "say", "--json")
    listed = answerback("list", server, "--json")
    for done in (called, listed):
        assert done.returncode == 0, done.stderr
        assert "\\u202eevil\\u009b2J" in done.stdout
        for obeyed in OBEYED:
            assert obeyed not in done.stdout
    assert json.loads(called.stdout)["content"][0]["text"] == f"said {EVIL}"
    [say] = [tool for tool in json.loads(listed.stdout)["tools"] if tool["name"] == "say"]
    assert say["description"] == f"Says. {EVIL}"


def test_a_plain_listing_keeps_each_name_on_its_line(tmp_path: Path) -> None:
    """A tool's name with a line break printed a line of the server's making."""
    server = script_server(tmp_path, "hostile.py", SERVER)
    done = answerback("list", server)
    assert done.returncode == 0, done.stderr
    assert "  forged\\x0a  transfer  Moves money." in done.stdout.splitlines()


def test_an_unknown_tool_is_said_on_one_line(tmp_path: Path) -> None:
    """The server's name and its tools' names, a line break in them, wrote lines of the
    server's making into the command's one-line message."""
    server = script_server(tmp_path, "hostile.py", SERVER)
    done = answerback("call", server, "nope")
    assert done.returncode == 4
    assert done.stderr.splitlines()[-1] == (
        "answerback: 'hostile\\nanswerback: done' has no tool 'nope' (its tools: "
        "forged\\x0a  transfer, say)."
    )


@pytest.mark.anyio
async def test_a_progress_message_stays_on_the_sessions_line(tmp_path: Path) -> None:
    """``connect`` wrote a message's escape sequences out but kept its line breaks: a
    message could print a line that looks like the client's."""
    session = Session(
        [], Roots([tmp_path]), history=tmp_path / "history", timeout=None, log_level="info"
    )
    session.console = Console(record=True, width=300)
    report = session._progress("tearoom", "call brew")  # pyright: ignore[reportPrivateUsage]
    await report(1, 2, f"steeping\nanswerback> {EVIL}")
    said = session.console.export_text()
    assert said.splitlines() == [
        f"tearoom: call brew {'█' * 10 + '░' * 10} 1/2 steeping\\x0aanswerback> {WRITTEN_OUT}"
    ]


@pytest.mark.anyio
async def test_roots_added_are_shown_as_named_not_as_markup(tmp_path: Path) -> None:
    """A directory named like rich markup lost its brackets on the "Added root" line."""
    folder = tmp_path / "a[bold]b"
    folder.mkdir()
    session = Session(
        [], Roots([tmp_path]), history=tmp_path / "history", timeout=None, log_level="info"
    )
    session.console = Console(record=True, width=300)
    assert await session.run_line(f"roots add {shlex.quote(str(folder))}")
    assert f"Added root {folder}" in session.console.export_text().splitlines()


@asynccontextmanager
async def _nothing_to_take() -> AsyncGenerator[None]:
    yield


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", [ASYNCIO], ids=["asyncio"])
async def test_the_line_asking_a_tools_arguments_writes_out_its_name() -> None:
    """A tool whose required argument no form can show has its arguments typed on a line,
    which the tool's name began as the server sent it: a bidi override reordered it."""
    schema = {
        "type": "object",
        "properties": {"stops": {"type": "array", "items": {"type": "object"}}},
        "required": ["stops"],
    }
    tool = Tool(name="plan\u202eevil", input_schema=schema)
    drawn = io.StringIO()
    output = Vt100_Output(drawn, lambda: Size(rows=24, columns=200), term="xterm")
    with create_pipe_input() as keys, create_app_session(input=keys, output=output):
        keys.send_text("\r")  # an empty line: not called
        with anyio.fail_after(PATIENCE_SECONDS):
            asked = await ask_arguments(
                tool, server="tearoom", say=lambda _: None, instead="", screen=_nothing_to_take
            )
    assert asked is None
    assert "plan\\u202eevil arguments:" in drawn.getvalue()
    assert "\u202e" not in drawn.getvalue()
