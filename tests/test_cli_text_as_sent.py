"""A server's text is printed as it sent it: rich's emoji codes (``:x:``, ``:100:``),
markup and highlighting change none of it, in ``answerback call`` (results, errors, log
lines) and in ``answerback connect``.

A probe's echo of ``mix 1:100:1 and a:b:c :x:`` came out as ``mix 1💯1 and a🅱c ❌``.
"""

from __future__ import annotations

import io
import re
import shlex
from pathlib import Path

import pytest
from rich.markup import escape
from test_cli import answerback, script_server
from test_terminal_e2e import Terminal, connect, terminal

from answerback.cli._output import PlainConsole

__all__ = ["terminal"]  # the fixture the connect test takes

WORDS = "ratio 1:100:1, a:b:c :x: [bold]b[/bold] 42 https://example.com/a 'q'"
"""Emoji codes, markup and what rich highlights (numbers, a URL, a quoted word)."""

SERVER = """
from answerback.server import Context, MCPServer

mcp = MCPServer("words")


@mcp.tool()
async def say(ctx: Context, text: str) -> str:
    await ctx.info(text)
    return text


@mcp.tool()
def fail(text: str) -> str:
    raise RuntimeError(text)


if __name__ == "__main__":
    mcp.run()
"""

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.mark.parametrize("tty", [False, True], ids=["pipe", "terminal"])
def test_call_prints_a_result_an_error_and_a_log_line_as_sent(tmp_path: Path, tty: bool) -> None:
    """On a terminal too (``TTY_COMPATIBLE`` makes rich draw as for one), where only the
    command's own styling (the log line's level and server) may add colour."""
    server = script_server(tmp_path, "words.py", SERVER)
    env = {"TTY_COMPATIBLE": "1", "COLUMNS": "300"} if tty else {}
    said = answerback("call", server, "say", f"text={WORDS}", env=env)
    assert (said.returncode, said.stdout) == (0, f"{WORDS}\n")
    assert f"words: {WORDS}\n" in ANSI.sub("", said.stderr), said.stderr
    failed = answerback("call", server, "fail", f"text={WORDS}", env=env)
    assert failed.returncode == 1
    assert WORDS in failed.stderr, failed.stderr


def test_the_console_keeps_emoji_codes_and_highlights_nothing() -> None:
    """The command's own markup still styles; a server's words inside it stay as sent."""
    file = io.StringIO()
    console = PlainConsole(file=file, force_terminal=True, color_system="standard", width=300)
    console.print(f"[green]{escape(WORDS)}[/]")
    assert file.getvalue() == f"\x1b[32m{WORDS}\x1b[0m\n"


def test_connect_prints_a_result_as_sent(terminal: Terminal, tmp_path: Path) -> None:
    connect(terminal, script_server(tmp_path, "words.py", SERVER))
    terminal.type(f"call say {shlex.quote(f'text={WORDS}')}")
    terminal.wait_for(f"^{re.escape(WORDS)}$")
