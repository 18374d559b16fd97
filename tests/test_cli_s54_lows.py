"""Small defects of the command left from stop 53, fixed: usage errors that say what to
type, ``--help`` naming every kind of target, a suggested command that keeps the
options the person gave, the "Connected to" line quoting a server's name as every other
line does, and the test authorization server ending quietly on Ctrl-C.

What a person sees runs in tmux (``test_terminal_e2e``); the rest as scripts run it.
"""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
from pathlib import Path

from oauth_fixtures import OAUTH_SERVER
from support import PATIENCE_SECONDS
from test_cli import answerback
from test_terminal_e2e import PROMPT, Terminal, connect
from test_terminal_e2e import terminal as terminal  # the fixture

from answerback.cli._interface import COMMANDS

TOP_LEVEL_USAGE = "usage: answerback [-h] [--version] COMMAND ..."


def test_no_command_lists_the_commands() -> None:
    """It was argparse's "the following arguments are required: COMMAND", naming none."""
    done = answerback()
    assert done.returncode == 2
    for name, does in COMMANDS.items():
        assert f"  {name}" in done.stderr
        assert does in done.stderr
    assert "answerback help COMMAND" in done.stderr
    assert "the following arguments are required" not in done.stderr


def test_call_without_a_tool_shows_no_usage_line_of_another_command() -> None:
    """The whole program's usage line came first, which has no TOOL in it."""
    done = answerback("call", "python server.py")
    assert done.returncode == 2
    assert TOP_LEVEL_USAGE not in done.stderr
    assert done.stderr.startswith("answerback: error: call needs a TOOL after the TARGET")


def test_run_with_a_name_the_file_does_not_define_lists_those_it_does(tmp_path: Path) -> None:
    script = tmp_path / "two.py"
    script.write_text(
        "from answerback.server import MCPServer\n"
        "alpha = MCPServer('alpha')\n"
        "beta = MCPServer('beta')\n",
        encoding="utf-8",
    )
    done = answerback("run", f"{script}:nope")
    assert done.returncode == 2
    assert "is not defined, not an MCPServer" in done.stderr
    assert f"(alpha, beta) with {script}:NAME" in done.stderr
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n", encoding="utf-8")
    none = answerback("run", f"{empty}:x")
    assert none.returncode == 2
    assert "defines none at module level: create one" in none.stderr


def test_help_names_a_python_file_as_a_target() -> None:
    """docs/cli.md documents a bare ``server.py``; ``--help`` left it out."""
    helped = " ".join(answerback("--help").stdout.split())
    assert "Targets: an http(s) URL, a command line in quotes" in helped
    assert "a Python file (server.py)" in helped
    connect_help = " ".join(answerback("help", "connect").stdout.split())
    assert "a Python file (server.py)" in connect_help


def _config_with_an_unusable_entry(folder: Path) -> Path:
    config = folder / ".mcp.json"
    servers = {"old": {"type": "sse", "url": "http://127.0.0.1:1/sse"}, "tea": {"command": "x"}}
    config.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return config


def test_the_command_suggested_after_an_unusable_entry_keeps_every_option(
    tmp_path: Path,
) -> None:
    """It kept ``--config`` alone: ``--mode`` and ``--timeout`` were lost."""
    config = _config_with_an_unusable_entry(tmp_path)
    options = ["--config", str(config), "--mode", "legacy", "--timeout", "5", "--root", "/tmp"]
    done = answerback("connect", *options)
    assert done.returncode == 2
    suggested = shlex.join(["answerback", "connect", *options, "tea"])
    assert f"name them: {suggested}" in " ".join(done.stderr.split())


def test_the_command_suggested_names_the_config_file_it_found(tmp_path: Path) -> None:
    _config_with_an_unusable_entry(tmp_path)
    done = answerback("connect", "--mode", "legacy", cwd=tmp_path)
    assert done.returncode == 2
    suggested = "answerback connect --config .mcp.json --mode legacy tea"
    assert f"name them: {suggested}" in " ".join(done.stderr.split())


def test_the_connected_line_cuts_a_servers_long_name(terminal: Terminal, tmp_path: Path) -> None:
    """Escaped but not cut, a server's name could fill the screen; everywhere else it is
    cut to 64 characters (and quoted unless a plain word)."""
    script = tmp_path / "long_name_server.py"
    script.write_text(
        "from answerback.server import MCPServer\n"
        f"mcp = MCPServer({'Tea' + 'x' * 200!r})\n"
        "@mcp.tool()\n"
        "def greet() -> str:\n"
        "    return 'hello'\n",
        encoding="utf-8",
    )
    connect(terminal, str(script))
    screen = " ".join(terminal.wait_for(PROMPT).split())
    shown = "Tea" + "x" * 60 + "…"  # 64 characters with the ellipsis; a plain word, unquoted
    assert f"Connected to long_name_server ({shown} 0.1.0, protocol" in screen
    assert "x" * 61 not in screen


def test_the_test_authorization_server_ends_quietly_on_ctrl_c() -> None:
    """docs/authorization.md has people run it; Ctrl-C printed a KeyboardInterrupt
    traceback."""
    with subprocess.Popen(
        [sys.executable, str(OAUTH_SERVER)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        try:
            assert process.stdout is not None
            assert process.stdout.readline().startswith("listening at ")
            process.send_signal(signal.SIGINT)
            _, stderr = process.communicate(timeout=PATIENCE_SECONDS)
        finally:
            process.kill()
    assert process.returncode == 130
    assert "Traceback" not in stderr
    assert "KeyboardInterrupt" not in stderr
