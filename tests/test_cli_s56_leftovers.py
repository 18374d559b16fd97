"""The command-line client's leftovers of stop 56: what it imports from other layers,
its usage errors, and what it suggests or does after a person's mistake."""

from __future__ import annotations

import ast
import importlib
import os
import shlex
import sys
from pathlib import Path

import pytest
from test_cli import TEAROOM, script_server
from test_cli import answerback as run_answerback
from test_cli_keyboard_fixes import session_of
from test_terminal_e2e import Terminal, connect
from test_terminal_e2e import terminal as terminal  # the fixture

import answerback.cli

CLI = Path(answerback.cli.__file__).parent


def _public_package(module: str) -> str:
    """The package a private module belongs to: ``answerback.interact`` for
    ``answerback.interact._printable``."""
    parts = module.split(".")
    while any(part.startswith("_") for part in parts):
        parts.pop()
    return ".".join(parts)


def test_the_cli_takes_a_public_name_from_its_public_package() -> None:
    """The CLI took ``clean`` from ``answerback.interact._printable``, a private module
    of another layer, free to move, while ``answerback.interact`` exports it."""
    taken: list[str] = []
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            module = node.module if isinstance(node, ast.ImportFrom) else None
            if (
                not module
                or not module.startswith("answerback.")
                or module.startswith("answerback.cli")
            ):
                continue
            package = _public_package(module)
            if package == module:
                continue
            exported: set[str] = set(getattr(importlib.import_module(package), "__all__", ()))
            assert isinstance(node, ast.ImportFrom)
            taken += [
                f"{path.name}: {alias.name} from {module}, not {package}"
                for alias in node.names
                if alias.name in exported
            ]
    assert taken == []


HANGS_THE_SECOND_TIME = """
import pathlib, sys, time

started = pathlib.Path(sys.argv[1])
if started.exists():
    time.sleep(600)  # never answers: connecting waits until Ctrl-C
started.touch()
sys.exit(1)  # the first time it fails at once: the session starts without it
"""


@pytest.mark.parametrize("options", ["", "--plain"])
def test_ctrl_c_during_reconnect_stops_it_and_the_session_goes_on(
    terminal: Terminal, tmp_path: Path, options: str
) -> None:
    """Ctrl-C while ``reconnect`` waited for a server that never answers ended the whole
    session (exit 130) on the full screen. It stops the reconnect, says so, and the
    prompt and the other servers carry on."""
    script = tmp_path / "hangs.py"
    script.write_text(HANGS_THE_SECOND_TIME, encoding="utf-8")
    hangs = f"{sys.executable} {script} {tmp_path / 'started'}"
    connect(terminal, TEAROOM, hangs, options=options)
    terminal.type("reconnect")
    terminal.wait_for(r"Connecting to hangs…", after=r"answerback> reconnect")
    terminal.keys("C-c")
    terminal.wait_for(
        r"hangs is not connected: reconnect hangs tries again\.\n"
        r"Ctrl-C stopped reconnect\.\n(.*\n)?answerback>",
        after=r"answerback> reconnect",
    )
    terminal.type("call greet name=Ada")
    screen = terminal.wait_for(r"^Hello, Ada!$", after=r"answerback> call greet")
    assert "[exited" not in screen


GATED_LISTING = """
import json, sys

listed = 0
for line in sys.stdin:
    message = json.loads(line)
    method, ident = message.get("method"), message.get("id")
    if method == "initialize":
        answer = {
            "result": {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "gated", "version": "1"},
            }
        }
    elif ident is None:
        continue
    elif method == "tools/list":
        listed += 1
        if listed > 1:  # the first listing at once, a later one once the gate opens
            with open(sys.argv[1]) as gate:
                gate.read()
        tool = {"name": "listed_late", "inputSchema": {"type": "object"}}
        answer = {"result": {"tools": [tool]}}
    elif method in ("resources/list", "prompts/list"):
        answer = {"result": {method.split("/")[0]: []}}
    else:
        answer = {"error": {"code": -32601, "message": "Method not found"}}
    print(json.dumps({"jsonrpc": "2.0", "id": ident, **answer}), flush=True)
"""
"""A server whose tools are listed at once the first time, and the next time only once
something is written to the FIFO named by its argument."""


def test_a_listing_printed_while_a_plain_question_waits_leaves_its_prompt_last(
    terminal: Terminal, tmp_path: Path
) -> None:
    """In plain lines, a ``tools`` listing that came while a question waited at its
    prompt was printed after the prompt: the person typed on a line under the listing,
    far from the question. The prompt is written again below the listing."""
    listing_gate, question_gate = tmp_path / "listing", tmp_path / "question"
    os.mkfifo(listing_gate)
    os.mkfifo(question_gate)
    script = tmp_path / "gated.py"
    script.write_text(GATED_LISTING, encoding="utf-8")
    connect(terminal, TEAROOM, f"{sys.executable} {script} {listing_gate}", options="--plain")
    terminal.wait_for(r"Connected to gated")
    terminal.type(f"call order_tea gate={question_gate}")
    terminal.wait_for(r"\[1\] terminal_server: call order_tea…")
    terminal.type("tools gated")
    question_gate.write_text("go")  # the question comes while the listing waits
    terminal.wait_for(r"What would you like\?")
    prompt = terminal.wait_for(r">\s*$").rstrip().splitlines()[-1]
    listing_gate.write_text("go")
    screen = terminal.wait_for(r"listed_late(.*\n)+.*>\s*$")
    assert screen.rstrip().splitlines()[-1] == prompt, screen
    terminal.type("1")  # answered where it is typed
    terminal.wait_for(r"^Cups \*", after=r"\n> 1\n")


@pytest.mark.parametrize("plain", ["", "--plain"])
def test_call_says_why_it_asks_a_line_where_it_asks_with_stderr_sent_away(
    terminal: Terminal, plain: str
) -> None:
    """``call TOOL`` with arguments a form cannot ask asked for them on the terminal but
    said why, and what was wrong with a line typed, on stderr: sent away, the person got
    a bare prompt and the same prompt again."""
    call = [sys.executable, "-m", "answerback", "call", *plain.split(), TEAROOM, "plan"]
    terminal.start(f"{shlex.join(call)} 2>/dev/null")
    screen = terminal.wait_for(r"^plan arguments:\s*$")
    assert "A form cannot ask the arguments of plan (its stops)" in screen
    terminal.type("stops=oops")
    # Asked again: the full screen with the line as typed, to put right.
    screen = terminal.wait_for(r"^plan arguments:( stops=oops)?\s*$", after="is a list")
    assert "The argument 'stops' is a list, and 'oops' is not valid JSON" in screen
    terminal.keys("C-u")
    terminal.type('{"stops": ["Oslo", "Bergen"]}')
    terminal.wait_for(r"^Oslo -> Bergen$")
    terminal.wait_for(r"\[exited 0\]")


@pytest.mark.anyio
async def test_a_command_typed_wrong_is_said_while_ctrl_c_can_stop_commands(
    tmp_path: Path,
) -> None:
    """A command's usage error, raised where Ctrl-C is watched for, is said as ever (in
    an ExceptionGroup, it was called a bug in answerback)."""
    session = session_of(tmp_path, "tea", "cafe")
    assert await session.run_line("call greet name=Ada")
    said = session.console.export_text()
    assert "Several servers have the tool 'greet': say which" in said, said
    assert "bug" not in said


PROGRESSING = """
import anyio
from answerback.server import Context, MCPServer

mcp = MCPServer("progressing")


@mcp.tool()
async def slow(ctx: Context) -> str:
    for step in range(12):
        await ctx.report_progress(step, 12, "working" if step < 11 else "almost done")
        await anyio.sleep(0.25)
    return "done"


if __name__ == "__main__":
    mcp.run()
"""


def test_a_call_in_a_script_asks_for_progress_so_its_timeout_is_kept_alive(
    tmp_path: Path,
) -> None:
    """Outside a terminal ``call`` asked for no progress, so ``--timeout`` cut off a call
    reporting it (the error said the server sent none); each new progress message is now
    a line on stderr, a repeated one not again."""
    server = script_server(tmp_path, "progressing.py", PROGRESSING)
    done = run_answerback("call", server, "slow", "--timeout", "2")
    assert (done.returncode, done.stdout.strip()) == (0, "done"), done.stderr
    lines = done.stderr.splitlines()
    assert (lines.count("working"), lines.count("almost done")) == (1, 1), done.stderr
