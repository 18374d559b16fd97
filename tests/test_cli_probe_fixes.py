"""What a probe of the ``answerback`` command found, fixed: a server's own -32000/-32001
is its refusal, not a lost connection; a server that never lists is waited for within a
bound; one bad config entry leaves the others usable; a command line typed without
quotes, a URL typo and a bare interpreter are named; arguments that cannot be read say
how to quote them; listings mark what they cut and what is a template.

Commands run as subprocesses with no terminal (as in ``test_cli``); the session's own
parts are driven directly; what needs a terminal runs in tmux (``test_terminal_e2e``).
"""

from __future__ import annotations

import base64
import json
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

import anyio
import pytest
from http_support import served_by_answerback
from rich.console import Console
from support import peer_pair
from test_cli import SERVERS, TEAROOM, answerback, script_server
from test_terminal_e2e import PROMPT, Terminal, connect
from test_terminal_e2e import terminal as terminal  # the fixture

from answerback import Client
from answerback.cli._arguments import ArgumentsError, parse_arguments, split_arguments
from answerback.cli._connect import Session
from answerback.cli._oneshot import failure
from answerback.cli._render import print_listing, read_text
from answerback.cli._targets import Target
from answerback.client import AuthorizationError
from answerback.interact import Roots
from answerback.jsonrpc import Endpoint, Envelope, IncomingRequest, JSONObject, RequestId
from answerback.jsonrpc._endpoint import LOCAL_FAILURE
from answerback.transports import StdioServer
from answerback.types import (
    BlobResourceContents,
    ConnectionClosedError,
    MCPError,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    Tool,
)
from answerback.types._errors import AUTHORIZATION_FAILED, SERVER_CLOSED

REFUSING_SERVER = """
from answerback.server import MCPServer
from answerback.types import MCPError

mcp = MCPServer("Refusing")


@mcp.tool()
def busy(code: int) -> str:
    raise MCPError(code, "database unavailable, try later")


@mcp.tool()
def post(addr: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in addr.items())


if __name__ == "__main__":
    mcp.run()
"""

NEVER_LISTS = """
import json, sys

for line in sys.stdin:
    message = json.loads(line)
    method, known = message.get("method"), "id" in message
    if method == "initialize":
        result = {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "mute", "version": "1"},
        }
        answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
    elif method == "server/discover" and known:
        error = {"code": -32601, "message": "Method not found"}
        answer = {"jsonrpc": "2.0", "id": message["id"], "error": error}
    else:
        continue  # connected, and then never a word
    sys.stdout.write(json.dumps(answer) + "\\n")
    sys.stdout.flush()
"""


async def nothing(method: str, params: JSONObject | None, envelope: Envelope) -> None:
    return None


async def refuse(request: IncomingRequest) -> JSONObject:
    raise MCPError(-32601, "no")


async def failure_of(answer: Callable[[RequestId], Envelope]) -> MCPError:
    """What a request raises when ``answer(its id)`` arrives for it."""
    caught: list[MCPError] = []
    with peer_pair() as ((read_stream, write_stream), peer):
        async with (
            Endpoint(
                read_stream, write_stream, on_request=refuse, on_notification=nothing
            ) as endpoint,
            anyio.create_task_group() as tg,
        ):

            async def call() -> None:
                try:
                    await endpoint.request("tools/call")
                except MCPError as exc:
                    caught.append(exc)

            tg.start_soon(call)
            request = await peer.receive()
            request_id = request["id"]
            assert isinstance(request_id, int)
            await peer.send_raw(answer(request_id))
    [failed] = caught
    return failed


# -- 1. a server's own -32000 and -32001 --------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("code", [-32000, -32001])
async def test_a_peers_minus_32000_or_32001_is_a_plain_error(code: int) -> None:
    """JSON-RPC leaves -32000 to -32099 to servers: a peer answering with one is up.
    It was a ConnectionClosedError or a RequestTimeoutError, which the command line
    reported as a lost connection (exit 3)."""
    error = {"code": code, "message": "database unavailable"}
    failed = await failure_of(
        lambda request_id: Envelope({"jsonrpc": "2.0", "id": request_id, "error": error})
    )
    assert type(failed) is MCPError
    assert (failed.code, failed.message) == (code, "database unavailable")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("data", "kind"),
    [(None, ConnectionClosedError), ({"reason": AUTHORIZATION_FAILED}, AuthorizationError)],
    ids=["connection", "authorization"],
)
async def test_an_answer_the_transport_made_up_is_a_connection_failure(
    data: Any, kind: type[MCPError]
) -> None:
    """What a transport answers for a request it could not deliver (marked
    ``LOCAL_FAILURE``) is this side's failure, whatever a peer's -32000 now is."""
    error = {"code": -32000, "message": "Connection failed: refused.", "data": data}
    failed = await failure_of(
        lambda request_id: Envelope(
            {"jsonrpc": "2.0", "id": request_id, "error": error}, transport_context=LOCAL_FAILURE
        )
    )
    assert type(failed) is kind


@pytest.mark.anyio
async def test_a_peer_saying_it_is_closing_is_a_closed_connection() -> None:
    """answerback's HTTP server answers requests it will not finish, on a session it
    closes or a replica that stopped, with -32000 and the reason ``server_closed``: the
    connection is ending, as if this side had seen it end."""
    error = {
        "code": -32000,
        "message": "Server closed: stopping.",
        "data": {"reason": SERVER_CLOSED},
    }
    failed = await failure_of(
        lambda request_id: Envelope({"jsonrpc": "2.0", "id": request_id, "error": error})
    )
    assert type(failed) is ConnectionClosedError


@pytest.mark.anyio
async def test_a_servers_minus_32000_over_stdio_reaches_the_caller_as_its_own(
    tmp_path: Path,
) -> None:
    server = script_server(tmp_path, "refusing.py", REFUSING_SERVER)
    command = shlex.split(server)
    async with Client(StdioServer(command[0], command[1:])) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("busy", {"code": -32000})
        await client.list_tools()  # the connection is fine
    assert type(caught.value) is MCPError
    assert caught.value.message == "database unavailable, try later"


@pytest.mark.parametrize("code", ["-32000", "-32001"])
def test_call_says_a_server_refused_with_its_own_code_exit_4(tmp_path: Path, code: str) -> None:
    server = script_server(tmp_path, "refusing.py", REFUSING_SERVER)
    done = answerback("call", server, "busy", f"code={code}")
    assert done.returncode == 4, done.stderr
    assert f"refusing refused: database unavailable, try later (error {code})" in done.stderr
    assert "cannot talk to" not in done.stderr


def test_a_refusal_names_its_code_once() -> None:
    """A TypeScript server's message already starts with "MCP error -32602: "."""
    exc = MCPError(-32602, "MCP error -32602: Resource nosuch://x not found")
    said = str(failure(Target(name="everything"), exc))
    assert said == "everything refused: Resource nosuch://x not found (error -32602)"


# -- 2. a server that connects and then never answers -------------------------------------


@pytest.mark.parametrize("command", ["list", "call"])
def test_a_server_that_never_lists_is_given_up_on_saying_how_to_wait_longer(
    tmp_path: Path, command: str
) -> None:
    """``list`` had no ``--timeout`` and waited for ever; ``call`` waited for ever in the
    listing before its call, saying nothing."""
    server = script_server(tmp_path, "mute.py", NEVER_LISTS)
    args = ["greet"] if command == "call" else []
    done = answerback(command, server, *args, "--timeout", "1")
    assert done.returncode == 3, done.stderr
    what = "tools/list" if command == "call" else "its listing (tools, resources, prompts)"
    assert f"mute did not answer {what} within 1 s" in done.stderr
    assert "pass --timeout SECONDS to wait longer" in done.stderr


def test_a_connect_timeout_gives_the_command_lines_advice_not_the_librarys(
    tmp_path: Path,
) -> None:
    silent = script_server(tmp_path, "silent.py", "import sys\nsys.stdin.read()\n")
    done = answerback("list", silent, "--timeout", "1")
    assert done.returncode == 3, done.stderr
    assert "pass --timeout SECONDS to wait longer" in done.stderr
    assert "Client(" not in done.stderr


def test_connect_lists_in_the_background_and_says_when_a_server_never_lists(
    terminal: Terminal,
    tmp_path: Path,
) -> None:
    """One server that never lists kept the prompt, and every server after it, away;
    ``tools`` then showed an empty table for a listing that had timed out. (The tea
    room is served already: its start, on a busy machine, could outlast the second for
    connecting.)"""
    mute = script_server(tmp_path, "mute.py", NEVER_LISTS)
    with served_by_answerback(SERVERS / "terminal_server.py") as tearoom:
        connect(terminal, mute, tearoom, options="--timeout 1")
        terminal.wait_for(f"Connected to {re.escape(urlsplit(tearoom).netloc)}")
        terminal.wait_for(r"Could not list what mute offers: mute did not answer .* within 1 s")
        terminal.type("tools mute")
        screen = terminal.wait_for(
            r"Could not list what mute offers", after="answerback> tools mute"
        )
        assert "(none)" not in screen.rpartition("answerback> tools mute")[2]
        terminal.type("call greet name=Ada")
        terminal.wait_for(r"^Hello, Ada!$")


# -- 3. one bad entry in a config file ------------------------------------------------------


def write_config(tmp_path: Path) -> Path:
    tearoom = {"command": sys.executable, "args": [str(Path(TEAROOM.split()[1]))]}
    servers = {
        "tea": tearoom,
        "old": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
        "envnum": {"command": "x", "env": {"PORT": 8080}},
        "remote": {"type": "streamableHttp", "url": "http://127.0.0.1:9/mcp"},
    }
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return config


def test_an_entry_that_cannot_be_used_leaves_the_others_usable(tmp_path: Path) -> None:
    """An SSE entry, or a number in another entry's ``env``, made every name in the
    file fail, ``logout`` too."""
    config = str(write_config(tmp_path))
    done = answerback("call", "tea", "greet", "name=Ada", "--config", config)
    assert (done.returncode, done.stdout) == (0, "Hello, Ada!\n"), done.stderr
    listed = answerback("list", "tea", "--config", config)
    assert listed.returncode == 0, listed.stderr
    state = {"ANSWERBACK_STATE_DIR": str(tmp_path / "state")}
    out = answerback("logout", "remote", "--config", config, env=state)
    assert out.returncode == 0, out.stderr
    old = answerback("list", "old", "--config", config)
    assert old.returncode == 2
    assert "The server 'old' in" in old.stderr
    assert "old SSE transport" in old.stderr
    env = answerback("list", "envnum", "--config", config)
    assert env.returncode == 2
    assert "The server 'envnum' in" in env.stderr
    assert "'PORT' that is not a string" in env.stderr


def test_a_header_http_cannot_carry_says_what_to_write_in_the_file(tmp_path: Path) -> None:
    entry = {"url": "http://127.0.0.1:9/mcp", "headers": {"X-Note": "caf\u00e9"}}
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"tea": entry}}), encoding="utf-8")
    done = answerback("list", "tea", "--config", str(config))
    assert done.returncode == 2
    assert "The value of the header 'X-Note'" in done.stderr
    assert "percent-encoded" in done.stderr
    assert "urllib" not in done.stderr


# -- 5 and 11. what the command line is given ----------------------------------------------


@pytest.mark.parametrize(
    ("args", "advice"),
    [
        (
            ["call", "python", "tests/servers/terminal_server.py", "greet", "name=Ada"],
            "answerback call 'python tests/servers/terminal_server.py' greet name=Ada",
        ),
        (
            ["list", "python3", "tests/servers/terminal_server.py"],
            "answerback list 'python3 tests/servers/terminal_server.py'",
        ),
        (["call", "python", "-c", "1", "greet"], "answerback call 'python -c 1' greet"),
        (["call", "node", "dist/index.js", "echo"], "answerback call 'node dist/index.js' echo"),
        (["call", "npx", "-y", "@x/server", "echo"], "answerback call 'npx -y @x/server' echo"),
        (["list", "uv", "run", "server.py"], "answerback list 'uv run server.py'"),
    ],
    ids=["call", "list", "option", "node", "npx", "uv-run"],
)
def test_a_command_line_without_quotes_is_refused_saying_how_to_quote_it(
    args: list[str], advice: str
) -> None:
    """It ran ``python`` reading JSON-RPC as a script (a traceback after 30 s), or
    argparse said "unrecognized arguments"."""
    done = answerback(*args)
    assert done.returncode == 2
    assert f"the server's command line must be one TARGET, in quotes: {advice}" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("target", "said"),
    [
        ("python", "'python' on its own starts an interpreter, not a server"),
        ("http:/127.0.0.1:8000/mcp", "did you mean http://127.0.0.1:8000/mcp?"),
        ("https:example.com/mcp", "did you mean https://example.com/mcp?"),
        ("localhost:8000", "did you mean http://localhost:8000/mcp?"),
        ("127.0.0.1:8000/mcp", "did you mean http://127.0.0.1:8000/mcp?"),
    ],
)
def test_a_target_that_is_no_server_is_named_before_anything_runs(target: str, said: str) -> None:
    done = answerback("list", target)
    assert done.returncode == 2
    assert said in done.stderr


def test_version_help_and_a_forgotten_tool() -> None:
    version = answerback("--version")
    assert version.returncode == 0
    assert version.stdout.startswith("answerback ")
    helped = answerback("help", "call")
    assert helped.returncode == 0
    assert "TARGET" in helped.stdout
    assert "a command line in quotes" in helped.stdout
    assert answerback("help").stdout.startswith("usage: answerback")
    forgot = answerback("call", TEAROOM)
    assert forgot.returncode == 2
    assert "call needs a TOOL after the TARGET" in forgot.stderr
    assert "required: TOOL, ARG" not in forgot.stderr


# -- 7 and 15. arguments ------------------------------------------------------------------------


def test_a_word_of_its_own_after_a_value_says_to_quote_the_value() -> None:
    with pytest.raises(ArgumentsError, match=r"'Lovelace' is not key=value.*name=\"Ada Lovelace\""):
        parse_arguments(["name=Ada", "Lovelace"], None)
    with pytest.raises(ArgumentsError) as caught:
        parse_arguments(["Ada"], None)
    assert "in quotes" not in str(caught.value)  # a first word is no cut value


def test_a_quote_left_open_says_how_to_quote() -> None:
    with pytest.raises(ArgumentsError, match=r"No closing quotation.*name=\"O'Brien\""):
        split_arguments("name=O'Brien")
    assert split_arguments('name="O\'Brien"') == ["name=O'Brien"]
    assert split_arguments(' {"a": "b c"}') == [' {"a": "b c"}']


OBJECT_SCHEMA = {
    "type": "object",
    "properties": {
        "addr": {"type": "object"},
        "stops": {"type": ["array", "null"]},
        "note": {"type": ["string", "object"]},
        "count": {"type": "integer"},
    },
}


def test_an_object_or_list_argument_that_is_not_json_is_refused_naming_it() -> None:
    """It was sent as text, and the server's refusal said the tool failed."""
    with pytest.raises(ArgumentsError, match=r"'addr' is an object, .* not valid JSON"):
        parse_arguments(['addr={"zip":02134}'], OBJECT_SCHEMA)
    with pytest.raises(ArgumentsError, match=r"'stops' is a list.*stops='\[\"a\", \"b\"\]'"):
        parse_arguments(["stops=[a,"], OBJECT_SCHEMA)
    # Where text is allowed, or the type is not one JSON alone can write, text it is.
    assert parse_arguments(["note=hi", "count=x"], OBJECT_SCHEMA) == {"note": "hi", "count": "x"}
    assert parse_arguments(['addr={"zip":"02134"}'], OBJECT_SCHEMA) == {"addr": {"zip": "02134"}}


def test_call_refuses_an_object_argument_that_is_not_json_exit_2(tmp_path: Path) -> None:
    server = script_server(tmp_path, "refusing.py", REFUSING_SERVER)
    done = answerback("call", server, "post", 'addr={"street":"Main","zip":02134}')
    assert done.returncode == 2, done.stderr
    assert "The argument 'addr' is an object" in done.stderr


# -- 8 and 13. the session's prompt --------------------------------------------------------------


@pytest.mark.anyio
async def test_lines_pasted_at_once_run_one_after_another(tmp_path: Path) -> None:
    """They were joined into one command ("'call' is not key=value")."""
    session = Session(
        [], Roots([tmp_path]), history=tmp_path / "history", timeout=None, log_level="info"
    )
    session.console = Console(record=True, width=200)
    assert await session.run_line("nonsense\nhelp")
    assert not await session.run_line("help\nquit\nnonsense")
    text = session.console.export_text()
    assert "Unknown command 'nonsense'" in text
    assert text.count("help: this list") == 2
    assert text.count("Unknown command") == 1  # nothing after quit ran


@pytest.mark.anyio
async def test_status_lists_what_is_running(tmp_path: Path) -> None:
    session = Session(
        [Target(name="tearoom")],
        Roots([tmp_path]),
        history=tmp_path / "history",
        timeout=None,
        log_level="info",
    )
    session.console = Console(record=True, width=200)
    session.servers[0].calls[anyio.CancelScope()] = "[3] call order_tea"
    session._status()  # pyright: ignore[reportPrivateUsage]
    assert "1 running: [3] call order_tea" in session.console.export_text()


def test_ctrl_d_with_calls_running_says_so_before_leaving(
    terminal: Terminal,
    tmp_path: Path,
) -> None:
    """Ctrl-D left at once, dropping running calls unsaid; Ctrl-C at the prompt did
    nothing, with no word of ``cancel SERVER``."""
    connect(terminal, script_server(tmp_path, "waiting.py", WAITING_SERVER))
    terminal.type("call wait")
    terminal.wait_for(r"\[1\] waiting: call wait…")
    terminal.keys("C-c")
    terminal.wait_for(r"1 still running \(\[1\] call wait\): Ctrl-C at the prompt stops none")
    terminal.keys("C-d")
    terminal.wait_for(r"1 still running \(\[1\] call wait\): Ctrl-D again \(or quit\) leaves")
    terminal.wait_for(PROMPT, after="Ctrl-D again")
    terminal.keys("C-d")
    terminal.wait_for(r"\[exited 0\]")


WAITING_SERVER = """
import anyio
from answerback.server import MCPServer

mcp = MCPServer("Waiting")


@mcp.tool()
async def wait() -> str:
    await anyio.sleep_forever()
    return "never"


if __name__ == "__main__":
    mcp.run()
"""


# -- 7 and 14. the arguments form and line ---------------------------------------------------------


def test_ctrl_c_on_calls_argument_form_exits_130_saying_cancelled(
    terminal: Terminal,
) -> None:
    """It said "no arguments given" and exited 2, as if the person had declined."""
    terminal.start(f"{shlex.quote(sys.executable)} -m answerback call {shlex.quote(TEAROOM)} greet")
    terminal.wait_for("Ctrl-S accept")
    terminal.keys("C-c")
    screen = terminal.wait_for(r"\[exited 130\]")
    assert "greet was not called: cancelled." in screen
    assert "no arguments given" not in screen


def test_a_line_of_arguments_that_cannot_be_read_is_asked_again(
    terminal: Terminal,
) -> None:
    """At ``answerback call``'s line a mistake ended the command (exit 2)."""
    terminal.start(f"{shlex.quote(sys.executable)} -m answerback call {shlex.quote(TEAROOM)} plan")
    terminal.wait_for(r"^plan arguments:\s*$")
    terminal.type("""stops=["Oslo", "Voss"]""")
    terminal.wait_for(r"The argument 'stops' is a list, .* not valid JSON .* in quotes")
    terminal.wait_for(r"^plan arguments: stops=\[\"Oslo\", \"Voss\"\]\s*$")
    terminal.keys("C-u")
    terminal.type("""stops='["Oslo", "Voss"]'""")
    terminal.wait_for(r"^Oslo -> Voss$")
    terminal.wait_for(r"\[exited 0\]")


# -- 12. listings --------------------------------------------------------------------------------


def test_listings_mark_cut_descriptions_and_templates_and_show_descriptions() -> None:
    console = Console(record=True, width=200, force_terminal=False)
    tools = [Tool(name="paint", description="Paint the walls\nin any colour", input_schema={})]
    resources = [Resource(uri="note://1", name="note", description="A note.\nMore.")]
    templates = [
        ResourceTemplate(uri_template="note://{id}", name="notes", description="Any note.")
    ]
    print_listing(console, "s", tools, resources, templates, [])
    lines = console.export_text().splitlines()
    assert "  paint  Paint the walls …" in lines
    assert "  note://1  A note. …" in lines
    assert "  note://{id}  (template) Any note." in lines


def test_a_text_blob_is_shown_as_text() -> None:
    blob = base64.b64encode(b"Hello\nthere").decode()
    result = ReadResourceResult(
        contents=[
            BlobResourceContents(uri="x://t", mime_type="text/plain", blob=blob),
            BlobResourceContents(uri="x://b", mime_type="image/png", blob=blob),
        ]
    )
    assert read_text(result) == "Hello\nthere\n[resource x://b, image/png, 11 B]"


@pytest.mark.anyio
async def test_reading_a_template_as_written_says_to_fill_it_in(tmp_path: Path) -> None:
    """It was sent, and the server answered "Unknown resource ... %7BresourceId%7D"."""
    session = Session(
        [Target(name="everything")],
        Roots([tmp_path]),
        history=tmp_path / "history",
        timeout=None,
        log_level="info",
    )
    session.console = Console(record=True, width=200)
    server = session.servers[0]
    server.client = cast(Any, object())  # connected, as far as the command is concerned
    server.templates = [ResourceTemplate(uri_template="demo://text/{id}", name="text")]
    assert await session.run_line("read demo://text/{id}")
    assert session.console.export_text().splitlines() == [
        "demo://text/{id} is a resource template: read it with each {...} replaced by a value."
    ]


def test_connect_without_a_terminal_says_so_on_one_line() -> None:
    done = answerback("connect", TEAROOM)
    assert done.returncode == 2
    assert "from a script use `answerback call` or `answerback list`." in done.stderr


def test_lists_help_names_the_clients_own_default_wait() -> None:
    """Parsing does not import the client; the default ``list --help`` names is its."""
    from answerback.cli import _interface
    from answerback.client._client import DEFAULT_CONNECT_TIMEOUT_SECONDS

    assert _interface._DEFAULT_WAIT == DEFAULT_CONNECT_TIMEOUT_SECONDS  # pyright: ignore[reportPrivateUsage]
