"""A Python file given on its own as a target (``answerback list server.py``), run for
real from a folder of the user's own: served as ``answerback run`` serves it when it only
defines its server, run as a script when it starts itself."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from answerback.cli import _targets

PATIENCE_SECONDS = 60

README_SERVER = '''
from pydantic import BaseModel

from answerback.server import Context, MCPServer

mcp = MCPServer("Library")


class CardHolder(BaseModel):
    name: str


@mcp.tool()
async def issue_card(ctx: Context) -> str:
    """Issue a new library card."""
    answer = await ctx.elicit("What name should go on the card?", schema=CardHolder)
    if answer.action == "accept":
        return f"Card issued to {answer.data.name}."
    return "No card issued."
'''

SELF_STARTING_SERVER = """
from answerback.server import MCPServer

mcp = MCPServer("started")
started_as = "an import"


@mcp.tool()
def how_started() -> str:
    return started_as


if __name__ == "__main__":
    started_as = "a script"
    mcp.run()
"""


def answerback(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command as a script runs it, from ``cwd``: no terminal, output captured."""
    return subprocess.run(
        [sys.executable, "-m", "answerback", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=PATIENCE_SECONDS,
        check=False,
    )


def test_a_file_that_only_defines_its_server_is_served(tmp_path: Path) -> None:
    """The README's server saved as server.py was run as a script, which ended at once:
    "exited with code 0 ... does it end with `mcp.run()`?", though the docs promised it
    is run as ``answerback run server.py`` runs it."""
    (tmp_path / "server.py").write_text(README_SERVER, encoding="utf-8")
    answers = [{"server": "server", "content": {"name": "Ada Lovelace"}}]
    (tmp_path / "answers.json").write_text(json.dumps(answers), encoding="utf-8")
    listed = answerback("list", "server.py", cwd=tmp_path)
    assert (listed.returncode, listed.stdout.splitlines()[:2]) == (
        0,
        ["server tools:", "  issue_card  Issue a new library card."],
    ), listed.stderr
    called = answerback(
        "call", "server.py", "issue_card", "--answers", "answers.json", cwd=tmp_path
    )
    assert (called.returncode, called.stdout) == (0, "Card issued to Ada Lovelace.\n"), (
        called.stderr
    )


def test_a_file_that_starts_its_server_is_run_as_a_script(tmp_path: Path) -> None:
    """Its ``if __name__ == "__main__":`` block runs, as ``python server.py`` runs it:
    what it sets up there (here a name the tool reports) is kept."""
    (tmp_path / "started.py").write_text(SELF_STARTING_SERVER, encoding="utf-8")
    done = answerback("call", "started.py", "how_started", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, "a script\n"), done.stderr


def test_a_file_that_does_not_import_answerback_is_run_as_a_script(tmp_path: Path) -> None:
    """A server written with another library (the official SDK, FastMCP) starts itself
    in ways answerback cannot see: it is run as Python runs it, not as ``answerback run``
    would import it."""
    script = tmp_path / "other.py"
    script.write_text('import sys\nsys.exit("other.py ran as a script")\n', encoding="utf-8")
    done = answerback("list", "other.py", cwd=tmp_path)
    assert done.returncode == 3
    assert f"cannot talk to other ({sys.executable} other.py)" in done.stderr
    assert "other.py ran as a script" in done.stderr


TOOL_THAT_RUNS_A_COMMAND = """
import subprocess

import anyio.to_thread

from answerback.server import MCPServer

mcp = MCPServer("shell")


@mcp.tool()
async def uptime() -> str:
    done = await anyio.to_thread.run_sync(lambda: subprocess.run(["uptime"], check=False))
    return str(done.returncode)
"""


@pytest.mark.parametrize(
    ("source", "served"),
    [
        # A tool's body runs when it is called, not when the file is imported.
        (TOOL_THAT_RUNS_A_COMMAND, True),
        (README_SERVER, True),
        (SELF_STARTING_SERVER, False),
        (README_SERVER + "\nif __name__ == '__main__':\n    main()\n", False),
        (README_SERVER + "\nmcp.run()\n", False),
        ("import anyio\nfrom answerback import Client\n\nanyio.run(main)\n", False),
        ("import json\n", False),
    ],
    ids=["tool-runs-a-command", "readme", "main-block", "calls-main", "run", "client", "plain"],
)
def test_only_the_code_run_on_import_decides_how_a_file_starts(
    tmp_path: Path, source: str, served: bool
) -> None:
    """A tool calling ``subprocess.run`` made a plain server look like one that starts
    itself: run as a script, it ended at once ("exited with code 0")."""
    script = tmp_path / "server.py"
    script.write_text(source, encoding="utf-8")
    assert _targets._only_defines_a_server(script) is served  # pyright: ignore[reportPrivateUsage]
