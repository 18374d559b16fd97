"""What the command line says about a target it cannot find and a server that does not
answer: a lone name with no config file says where config files were looked for; a
connection given up on says how long was spent on it in all, not the last request's
limit; a request's timeout is told by its class, whatever the library's wording.

Commands run as subprocesses with no terminal (as in ``test_cli``).
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import pytest
from test_cli import answerback, script_server

from answerback import Client
from answerback.cli import _oneshot
from answerback.cli._targets import DEFAULT_CONFIGS, Target
from answerback.types import RequestTimeoutError

pytestmark = pytest.mark.anyio

SILENT = "import sys\nsys.stdin.read()\n"
"""A server that reads every request and answers none (and ends when its stdin does)."""

# -- 1. a name, with no config file to find it in ---------------------------------------


def test_a_name_without_a_config_file_says_where_it_looked_and_what_to_type(
    tmp_path: Path,
) -> None:
    """``answerback list tea`` ran ``tea`` as a program: "No such file or directory:
    'tea'", exit 3, never saying that no config file was found."""
    done = answerback("list", "tea", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    said = " ".join(done.stderr.split())
    assert "'tea' is not a server answerback can find: no config file was found" in said
    assert f"(looked for .mcp.json, .cursor/mcp.json and .vscode/mcp.json in {tmp_path})" in said
    assert all(name in said for name in DEFAULT_CONFIGS)
    assert "--config FILE" in said
    assert "give the server's URL (http://...) or the command that starts it" in said
    assert "No such file" not in said


def test_a_name_missing_from_the_config_file_found_names_its_servers(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {"coffee": {"command": "x"}}}')
    done = answerback("call", "tea", "greet", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    said = " ".join(done.stderr.split())
    assert "it is not a server in .mcp.json (its servers: coffee)" in said
    assert "no program 'tea' is on PATH" in said


def test_a_lone_program_on_path_is_still_run(tmp_path: Path) -> None:
    """A name that is a program (here the Python running the tests, by its path) is
    run, config file or not: only a word that is neither is refused up front."""
    done = answerback("list", sys.executable, cwd=tmp_path)
    assert "is not a server answerback can find" not in done.stderr


# -- 2. a connection given up on says the time it took ------------------------------------


def test_a_connection_given_up_on_says_the_time_spent_in_all(tmp_path: Path) -> None:
    """With ``--timeout 0.5`` the message said "within 0.5 s", though the probe
    (server/discover) had been waited for first: the command took twice that and more.
    Now it says the time spent in all, and what was waited for and how long."""
    silent = script_server(tmp_path, "silent.py", SILENT)
    started = time.monotonic()
    done = answerback("list", silent, "--timeout", "0.5")
    took = time.monotonic() - started
    assert done.returncode == 3, done.stderr
    said = " ".join(done.stderr.split())
    spent = re.search(r"silent did not answer while connecting \(.*\): ([\d.]+) s were spent", said)
    assert spent is not None, said
    assert 1.0 <= float(spent[1]) <= took
    assert "up to 0.5 s waiting for an answer to server/discover" in said
    assert "then up to 0.5 s for each request of the older handshake (initialize)" in said
    assert "pass --timeout SECONDS to wait longer" in said
    assert "within 0.5 s" not in said


async def test_the_time_said_is_the_clocks(tmp_path: Path) -> None:
    """The time is measured, from the start of connecting to the end of giving up."""
    silent = tmp_path / "silent.py"
    silent.write_text(SILENT)
    target = Target(name="silent", command=[sys.executable, str(silent)])
    ticks = iter([100.0, 142.0])
    client = Client(target.client_target(), connect_timeout_seconds=0.2)
    with pytest.raises(_oneshot.NotConnected) as caught:
        async with _oneshot.connected(client, target, 30, clock=lambda: next(ticks)):
            pass
    said = str(caught.value)
    assert "42 s were spent on it in all: up to 10 s waiting for an answer to server/discover" in (
        said
    )
    assert "then up to 30 s for each request" in said


# -- 6. advice keyed on the error's class, not its words ---------------------------------


@pytest.mark.parametrize(
    "wording",
    [
        "No answer to 'tools/call' from the server within 5 s; the request was cancelled. "
        "Raise the timeout if the operation is expected to take longer.",
        "tools/call: no reply in 5 s. Pass Client(read_timeout_seconds=...) to wait longer.",
    ],
)
def test_a_requests_timeout_gets_the_command_lines_advice_whatever_its_wording(
    wording: str,
) -> None:
    """The advice was made by replacing the library's sentences: reworded, the
    library's advice for programs (``Client(...)``) reached the person."""
    said = str(
        _oneshot.failure(Target(name="tea", command=["tea"]), RequestTimeoutError(wording), None, 5)
    )
    assert said == (
        "tea did not answer in time (tea): it sent neither an answer nor progress for 5 s, "
        "so the request was cancelled; if it is expected to take longer, pass --timeout "
        "SECONDS to wait longer."
    )
