"""The ``answerback`` command from a shell script: ``run``, ``list`` and ``call`` run as
subprocesses with no terminal (stdin from /dev/null), against real servers, checked by
what they print and the exit code (0 ok, 1 tool error, 2 usage, 3 connection, 4 refused).
"""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from http_support import free_port, served_by_answerback
from rich.cells import cell_len
from rich.console import Console
from support import ended

from answerback import Client
from answerback.cli._arguments import ArgumentsError, parse_arguments
from answerback.cli._connect import Session
from answerback.cli._render import LOG_CONTINUED, log_line, read_text
from answerback.cli._targets import Target
from answerback.forms import MAX_TEXT_LENGTH, Form
from answerback.interact import Roots
from answerback.server import Context, MCPServer
from answerback.types import LoggingMessageNotificationParams, ReadResourceResult, Tool

REPO = Path(__file__).resolve().parents[1]
SERVERS = REPO / "tests" / "servers"
TEAROOM = f"{sys.executable} {SERVERS / 'terminal_server.py'}"
ASKING = f"{sys.executable} {SERVERS / 'asking_server.py'}"
ESCAPING = f"{sys.executable} {SERVERS / 'escaping_server.py'}"
CARELESS = f"{sys.executable} {SERVERS / 'careless_server.py'}"
PATIENCE_SECONDS = 60


def answerback(
    *args: str, cwd: Path = REPO, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the command as a script would: no terminal, output captured, bounded
    (``env`` is added to this process's environment)."""
    return subprocess.run(
        [sys.executable, "-m", "answerback", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **env} if env is not None else None,
        timeout=PATIENCE_SECONDS,
        check=False,
    )


def script_server(tmp_path: Path, name: str, source: str) -> str:
    """The target (a command line) of a stdio server a test writes as ``name``."""
    script = tmp_path / name
    script.write_text(source, encoding="utf-8")
    return f"{sys.executable} {script}"


# -- call ---------------------------------------------------------------------------


def test_call_prints_the_text_result_and_exits_0() -> None:
    done = answerback("call", TEAROOM, "greet", "name=Ada", "times=2")
    assert (done.returncode, done.stdout) == (0, "Hello, Ada! Hello, Ada!\n")


@pytest.mark.parametrize(
    "args",
    [("call", ESCAPING, "say"), ("call", ESCAPING, "fail"), ("list", ESCAPING)],
    ids=["result-and-log", "error", "listing"],
)
@pytest.mark.parametrize("terminal", [False, True], ids=["pipe", "terminal"])
def test_a_servers_control_characters_are_written_out_not_obeyed(
    args: tuple[str, ...], terminal: bool
) -> None:
    """A server's text could retitle the window, clear the screen or hide itself; the
    command shows its escape sequences instead (rich's own styling aside, on a terminal:
    ``TTY_COMPATIBLE`` makes rich draw as for one)."""
    done = answerback(*args, env={"TTY_COMPATIBLE": "1", "COLUMNS": "300"} if terminal else {})
    output = done.stdout + done.stderr
    assert "\\x1b]0;PWNED\\x07\\x1b[2J\\x1b[8mhidden" in output, output
    for obeyed in ("\x1b]0;", "\x1b[2J", "\x1b[8m", "\x07", "\u202e"):
        assert obeyed not in output
    if not terminal:
        assert "\x1b" not in output
        assert "\r" not in output


def test_resource_contents_of_an_unknown_kind_are_named_not_shown() -> None:
    """Contents with neither text nor a blob (a newer server's kind) are named, beside
    the contents the terminal can show, instead of failing the read."""
    read = ReadResourceResult.model_validate(
        {
            "contents": [
                {"uri": "file:///a.txt", "text": "hello"},
                {"uri": "rtsp://example.com/cam", "mimeType": "video/mp4", "live": True},
            ]
        }
    )
    assert read_text(read) == (
        "hello\n[resource rtsp://example.com/cam, video/mp4, contents of a kind not shown]"
    )


def test_a_log_messages_further_lines_are_marked_as_its_own() -> None:
    """A log message with line breaks (any kind) cannot print a line that looks like the
    client's: each further line starts with the mark, and the logger stays on one line."""
    forged = "ok\n\nlibrary: form accepted\u2028answerback> \r\nTransferred $5,000"
    params = LoggingMessageNotificationParams(level="info", logger="db\nanswerback>", data=forged)
    out = io.StringIO()
    Console(file=out, width=100).print(log_line("library", params), soft_wrap=True)
    assert out.getvalue().splitlines() == [
        "INFO     library/db\\x0aanswerback>: ok",
        f"{LOG_CONTINUED}",
        f"{LOG_CONTINUED}library: form accepted",
        f"{LOG_CONTINUED}answerback> ",
        f"{LOG_CONTINUED}Transferred $5,000",
    ]


def test_a_log_message_wider_than_the_terminal_is_cut_into_marked_rows() -> None:
    """The terminal wrapped a long log line itself, so a message padded to the edge
    started a row with the server's words ("answerback> ..."); each row is cut to the
    width now, and every further row marked, wide characters counted as two cells."""
    padded = "x" * 23 + "answerback> call transfer" + "日本語" * 10
    params = LoggingMessageNotificationParams(level="info", logger=None, data=padded)
    out = io.StringIO()
    Console(file=out, width=40).print(log_line("lib", params, width=40), soft_wrap=True)
    rows = out.getvalue().splitlines()
    assert rows[0] == "INFO     lib: " + "x" * 23 + "ans"
    assert all(row.startswith(LOG_CONTINUED) for row in rows[1:])
    assert all(cell_len(row) <= 40 for row in rows)
    assert (
        "".join(
            [rows[0].removeprefix("INFO     lib: ")]
            + [row.removeprefix(LOG_CONTINUED) for row in rows[1:]]
        )
        == padded
    )


def test_a_call_that_times_out_exits_3_saying_no_answer_came() -> None:
    """It exited 4, "refused", the code for a server that said no. (Served already: a
    stdio server's start, on a busy machine, could outlast the second for connecting.)"""
    with served_by_answerback(SERVERS / "process_server.py") as waiting:
        done = answerback("call", "--timeout", "1", waiting, "wait_forever")
    assert done.returncode == 3, done.stderr
    assert "did not answer in time" in done.stderr
    assert "refused" not in done.stderr


def test_a_tools_arguments_may_follow_calls_options() -> None:
    """argparse alone refused ``greet --timeout 5 name=Ada`` ("unrecognized arguments:
    name=Ada"), though the options may come anywhere else."""
    done = answerback("call", TEAROOM, "greet", "--timeout", "30", "name=Ada", "times=2")
    assert (done.returncode, done.stdout) == (0, "Hello, Ada! Hello, Ada!\n")


def test_call_takes_one_json_object_of_arguments() -> None:
    done = answerback("call", TEAROOM, "greet", '{"name": "007"}')
    assert (done.returncode, done.stdout) == (0, "Hello, 007!\n")


def test_a_string_property_keeps_what_was_typed() -> None:
    """``name=007`` is the string "007" (the schema says string), ``times=2`` a number."""
    done = answerback("call", TEAROOM, "greet", "name=007", "times=1")
    assert (done.returncode, done.stdout) == (0, "Hello, 007!\n")


@pytest.mark.parametrize(
    ("schema", "malformed"),
    [
        ({"properties": ["times"]}, '"properties" is a list, not an object of properties'),
        ({"properties": "times"}, '"properties" is text, not an object of properties'),
        ({"properties": {"times": ["integer"]}}, "the property 'times' is a list, not a schema"),
        ({"properties": {"times": None}}, "the property 'times' is null, not a schema object"),
    ],
    ids=["properties-list", "properties-text", "property-list", "property-null"],
)
def test_a_malformed_tool_schema_is_named_and_json_arguments_still_go_through(
    schema: dict[str, Any], malformed: str
) -> None:
    """A server's schema that cannot say how to read a value (it crashed ``connect``)
    is refused as the server's mistake, saying what to type instead."""
    with pytest.raises(ArgumentsError) as caught:
        parse_arguments(["times=2"], schema)
    message = str(caught.value)
    assert message.startswith(f"The server's tool has a malformed inputSchema: {malformed}")
    assert message.endswith(
        'Give the arguments as one JSON object instead, such as \'{"name": "Ada"}\'.'
    )
    assert parse_arguments(['{"times": 2}'], schema) == {"times": 2}


@pytest.mark.parametrize(
    "schema",
    [None, {}, {"properties": None}, {"properties": {"times": True}}],
    ids=["none", "empty", "properties-null", "boolean-schema"],
)
def test_a_schema_that_types_nothing_reads_values_as_json(schema: dict[str, Any] | None) -> None:
    assert parse_arguments(["times=2", "name=Ada"], schema) == {"times": 2, "name": "Ada"}


def test_call_with_a_malformed_tool_schema_exits_2_saying_so(tmp_path: Path) -> None:
    """Not "cannot talk to the server": the server is fine, its tool's schema is not."""
    target = script_server(
        tmp_path,
        "odd_server.py",
        "from answerback.server import MCPServer\n"
        'mcp = MCPServer("odd")\n'
        '@mcp.tool(input_schema={"type": "object", "properties": ["a"]})\n'
        "def weird(a: int = 0) -> str:\n"
        '    return f"a={a}"\n'
        "mcp.run()\n",
    )
    typed = answerback("call", target, "weird", "a=1")
    assert typed.returncode == 2
    assert 'malformed inputSchema: "properties" is a list' in typed.stderr
    as_json = answerback("call", target, "weird", '{"a": 1}')
    assert (as_json.returncode, as_json.stdout) == (0, "a=1\n")


@pytest.mark.parametrize(
    ("arguments", "complaint"),
    [
        (["name=Ada", "times=1e400"], "The argument 'times' cannot be sent: NaN, Infinity and"),
        (["name=Ada", "times=NaN"], "The argument 'times' cannot be sent: NaN, Infinity and"),
        (['{"name": "Ada", "times": -Infinity}'], "The argument 'times' cannot be sent: NaN"),
        (["name=Ada", "times=" + "9" * 5000], "'times' cannot be sent: an integer of more than"),
        (["name=Ada", "times=" + "[" * 101 + "]" * 101], "'times' cannot be sent: more than 100"),
        (["name=Ada", "times=" + "[" * 9000 + "]" * 9000], "'times' cannot be sent: more than 100"),
        (["name=\udcff"], "'name' cannot be sent: '\\udcff' is a lone surrogate, which JSON"),
        (['{"name": "\\ud800"}'], "'name' cannot be sent: '\\ud800' is a lone surrogate"),
        (['{"name": "Ada", "name": "Bo"}'], "cannot be sent: the key 'name' is given twice"),
        (["name=Ada", "name=Bo"], "The argument 'name' is given twice: give it once."),
    ],
    ids=["huge-float", "nan", "json-infinity", "long-integer", "deep", "deeper-than-python",
         "non-utf8-byte", "json-surrogate", "json-key-twice", "key-twice"],
)  # fmt: skip
def test_arguments_json_cannot_carry_are_refused_naming_them(
    arguments: list[str], complaint: str
) -> None:
    """They failed once sent: as "refused" (exit 4), as a lost connection with a Python
    error (exit 3), or, nested past what the server reads, never answered; a key given
    twice kept the last value silently."""
    done = answerback("call", TEAROOM, "greet", *arguments)
    assert done.returncode == 2, done.stderr
    assert complaint in done.stderr
    assert "Traceback" not in done.stderr


def test_call_json_prints_the_raw_result() -> None:
    done = answerback("call", TEAROOM, "greet", "name=Ada", "--json")
    assert done.returncode == 0
    result = json.loads(done.stdout)
    assert result["content"] == [{"type": "text", "text": "Hello, Ada!"}]
    assert result["isError"] is False


def test_a_failing_tool_exits_1_with_its_message_on_stderr() -> None:
    done = answerback("call", TEAROOM, "broken")
    assert done.returncode == 1
    assert done.stdout == ""
    assert "the kettle is broken" in done.stderr


def test_arguments_the_tool_refuses_are_its_error_exit_1() -> None:
    """As MCP asks, the server reports arguments its tool cannot take as the tool's
    error (``isError``), not as a refused request (exit 4), as the docs said."""
    done = answerback("call", TEAROOM, "greet", "name=Ada", "times=many")
    assert done.returncode == 1
    assert "Invalid arguments for tool 'greet'" in done.stderr


@pytest.mark.parametrize("answers", [False, True], ids=["no-answers", "answers-file"])
@pytest.mark.parametrize(
    ("tool", "said"),
    [
        ("greet", "greet needs the argument name: give it as name=VALUE (or one JSON object)."),
        ("paint", "paint needs the argument colour: give it as colour=VALUE (or one JSON object)."),
    ],
    ids=["greet", "paint"],
)
def test_a_tool_given_none_of_the_arguments_it_requires_is_not_called(
    tool: str, said: str, answers: bool, tmp_path: Path
) -> None:
    """With nobody to ask (no terminal, or an answers file), the call went out without
    them, and the server's refusal ("name: Field required") exited 1 as if the tool had
    run and failed; now nothing is sent and the command says what to give."""
    options: list[str] = []
    if answers:
        (tmp_path / "answers.json").write_text("[]", encoding="utf-8")
        options = ["--answers", str(tmp_path / "answers.json")]
    done = answerback("call", TEAROOM, tool, *options)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines()[-1] == f"answerback: {said}"
    assert "Invalid arguments" not in done.stderr


def test_every_required_argument_missing_is_named_with_how_to_give_it(tmp_path: Path) -> None:
    target = script_server(
        tmp_path,
        "booking_server.py",
        "from answerback.server import MCPServer\n"
        "mcp = MCPServer('booking')\n"
        "@mcp.tool()\n"
        "def book(room: str, night: int, guests: int = 1) -> str:\n"
        "    return f'{room} on {night}'\n"
        "mcp.run()\n",
    )
    done = answerback("call", target, "book")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "answerback: book needs the arguments room and night: give them as room=VALUE "
        "night=VALUE (or one JSON object)."
    )


@pytest.mark.anyio
async def test_many_missing_arguments_are_named_up_to_ten_and_counted() -> None:
    """A name a shell would split is quoted as it must be typed."""
    from answerback.cli import _oneshot

    names = ["first name", *(f"a{number}" for number in range(1, 12))]
    schema: dict[str, Any] = {"type": "object", "properties": {}, "required": names}
    with pytest.raises(_oneshot.CommandFailed) as failed:
        await _oneshot._unsupplied(Tool(name="form", input_schema=schema), None)  # pyright: ignore[reportPrivateUsage]
    assert failed.value.code == 2
    assert str(failed.value) == (
        "form needs the arguments first name, a1, a2, a3, a4, a5, a6, a7, a8, a9 and 2 more: "
        "give them as 'first name=VALUE' a1=VALUE a2=VALUE a3=VALUE a4=VALUE a5=VALUE "
        "a6=VALUE a7=VALUE a8=VALUE a9=VALUE ... (or one JSON object)."
    )


@pytest.mark.anyio
async def test_at_a_terminal_missing_arguments_are_asked_and_declining_calls_nothing() -> None:
    from answerback.cli import _oneshot

    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    tool = Tool(name="greet", input_schema=schema)
    asked: list[str] = []

    async def person(answer: dict[str, Any] | None) -> Any:
        async def ask(tool: Tool) -> dict[str, Any] | None:
            asked.append(tool.name)
            return answer

        return await _oneshot._unsupplied(tool, ask)  # pyright: ignore[reportPrivateUsage]

    assert await person({"name": "Ada"}) == {"name": "Ada"}
    with pytest.raises(_oneshot.CommandFailed) as failed:
        await person(None)
    assert (str(failed.value), failed.value.code) == (
        "greet was not called: no arguments given.",
        2,
    )
    assert asked == ["greet", "greet"]
    optional = Tool(name="greet", input_schema={"type": "object", "properties": {}})
    assert await _oneshot._unsupplied(optional, None) == {}  # pyright: ignore[reportPrivateUsage]


def test_a_malformed_reply_exits_4_saying_so_not_that_the_server_refused(tmp_path: Path) -> None:
    target = script_server(
        tmp_path,
        "malformed_server.py",
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    request = json.loads(line)\n"
        "    method = request.get('method')\n"
        "    if method == 'initialize':\n"
        "        result = {'protocolVersion': request['params']['protocolVersion'],\n"
        "                  'capabilities': {'tools': {}},\n"
        "                  'serverInfo': {'name': 'Malformed', 'version': '1'}}\n"
        "    elif method == 'tools/list':\n"
        "        result = {'tools': [{'name': 'go', 'inputSchema': {'type': 'object'}}]}\n"
        "    elif method == 'tools/call':\n"
        "        result = {'content': [{'type': 'text'}], 'isError': 'maybe'}\n"
        "    else:\n"
        "        continue\n"
        "    answer = {'jsonrpc': '2.0', 'id': request['id'], 'result': result}\n"
        "    print(json.dumps(answer), flush=True)\n",
    )
    done = answerback("call", target, "go")
    assert done.returncode == 4, done.stderr
    assert "malformed reply from malformed_server: The server 'Malformed' 1 sent an " in done.stderr
    assert "refused" not in done.stderr


def test_an_image_is_described_not_dumped() -> None:
    done = answerback("call", TEAROOM, "picture")
    assert (done.returncode, done.stdout) == (0, "[image image/png, 12 KB]\n")


def test_structured_content_is_pretty_json() -> None:
    done = answerback("call", TEAROOM, "menu")
    assert done.returncode == 0
    assert json.loads(done.stdout) == {"green": 2.5, "black": 2.0}


def test_log_messages_go_to_stderr_with_level_and_server() -> None:
    done = answerback("call", TEAROOM, "brew", "steps=2")
    assert (done.returncode, done.stdout) == (0, "brewed\n")
    assert "INFO     terminal_server: brewed step 1" in done.stderr
    assert "brewed step 2" in done.stderr
    quiet = answerback("call", TEAROOM, "brew", "steps=1", "--log-level", "warning")
    assert "brewed step" not in quiet.stderr


def test_headless_declines_a_form_and_says_so() -> None:
    done = answerback("call", TEAROOM, "order_tea")
    assert (done.returncode, done.stdout) == (0, "No order (decline).\n")
    assert (
        "declined the form 'What would you like?' from server terminal_server: no terminal"
        in done.stderr
    )


def test_headless_declines_a_link_and_says_so() -> None:
    done = answerback("call", TEAROOM, "visit", "url=https://example.com/account")
    assert (done.returncode, done.stdout) == (0, "visit: decline\n")
    assert "declined the link 'https://example.com/account'" in done.stderr


@pytest.mark.parametrize("answers", [False, True], ids=["no-answers", "answers-file"])
@pytest.mark.parametrize(
    ("target", "tool", "name"),
    [
        (ASKING, "ask_model", "asking_server"),
        (ASKING, "ask_model_with_tools", "asking_server"),
        (f"{CARELESS} samples-anyway", "ask", "careless_server"),
        (f"{CARELESS} samples-anyway-modern", "ask", "careless_server"),
    ],
    ids=["server-refuses", "server-refuses-tools", "legacy-relays", "modern-asks-anyway"],
)
def test_headless_says_how_to_answer_a_sampling_request(
    target: str, tool: str, name: str, answers: bool, tmp_path: Path
) -> None:
    """Without a terminal the command does not declare sampling. Whoever refused for want
    of it (the server before asking, the client answering a legacy server's request, or
    the client refusing a 2026-07-28 server's question), the words were for a program's
    author ("give the Client a sampling_callback", "pass sampling_callback= to Client"),
    or none at all (a relayed "Sampling not supported"); now they say what a user can do."""
    options: list[str] = []
    if answers:
        (tmp_path / "answers.json").write_text("[]", encoding="utf-8")
        options = ["--answers", str(tmp_path / "answers.json")]
    done = answerback("call", target, tool, *options)
    assert (done.returncode, done.stdout) == (4, ""), done.stderr
    assert (
        f"answerback: {name} asks for a model's reply (sampling), which this command gives "
        "only at a terminal: run it at a terminal (without --answers), where you approve "
        "each reply, typed or drafted by --model-url's model.\n"
    ) == done.stderr


def test_a_server_passing_on_the_sampling_refusal_tells_the_user_what_is_true() -> None:
    """A legacy server that puts the client's refusal in its result shows the person the
    command's reason, not the library's advice to pass sampling_callback= to Client."""
    done = answerback("call", f"{CARELESS} samples-anyway", "tell")
    assert (done.returncode, done.stdout) == (1, ""), done.stderr
    assert done.stderr == (
        "Sampling not supported: the client did not declare the 'sampling' capability: the "
        "answerback command line answers sampling only with a person at a terminal to "
        "approve each reply: in answerback connect, or answerback call run at a terminal "
        "without --answers\n"
    )


def test_answers_file_answers_in_order_and_cancels_what_nothing_matches(tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(
        json.dumps([{"message": "like", "content": {"tea": "green", "cups": 2}}]),
        encoding="utf-8",
    )
    done = answerback("call", TEAROOM, "order_tea", "--answers", str(answers))
    assert (done.returncode, done.stdout) == (0, "Order: 2 x green.\n")
    assert (
        f"accepted the form 'What would you like?' from server terminal_server: from {answers}"
        in done.stderr
    )
    unmatched = answerback(
        "call", TEAROOM, "visit", "url=https://example.com", "--answers", str(answers)
    )
    assert (unmatched.returncode, unmatched.stdout) == (0, "visit: cancel\n")
    assert (
        "cancelled the link 'https://example.com' from server terminal_server" in unmatched.stderr
    )
    assert "no unused answer" in unmatched.stderr


def test_answers_file_can_decline_a_link_by_url(tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps([{"url": "example.com", "action": "decline"}]), encoding="utf-8")
    done = answerback(
        "call", TEAROOM, "visit", "url=https://example.com/a", "--answers", str(answers)
    )
    assert (done.returncode, done.stdout) == (0, "visit: decline\n")


@pytest.mark.parametrize(
    ("content", "complaint"),
    [
        ("{", "not valid JSON"),
        ('{"a": 1}', "must be a JSON list"),
        ('[{"action": "maybe"}]', "action 'maybe'"),
        ('[{"colour": "red"}]', "unknown keys ['colour']"),
    ],
)
def test_a_bad_answers_file_is_a_usage_error(tmp_path: Path, content: str, complaint: str) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(content, encoding="utf-8")
    done = answerback("call", TEAROOM, "order_tea", "--answers", str(answers))
    assert done.returncode == 2
    assert complaint in done.stderr


@pytest.mark.parametrize(
    ("content", "wrong"),
    [
        ({"tea": "green", "cups": 9}, '"cups" must be at most 5'),
        ({"tea": "green", "cups": 1, "sugar": True}, '"sugar" is not a field of this form'),
    ],
    ids=["out-of-range", "unknown-field"],
)
def test_an_answer_that_does_not_fit_its_form_exits_2_naming_it(
    tmp_path: Path, content: dict[str, Any], wrong: str
) -> None:
    """It exited 4, "refused", with advice for whoever wrote the client; the mistake is
    in the answers file. The question is cancelled, and the tool's answer still shown."""
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps([{"url": "example.com"}, {"content": content}]), encoding="utf-8")
    done = answerback("call", TEAROOM, "order_tea", "--answers", str(answers))
    assert (done.returncode, done.stdout) == (2, "No order (cancel).\n"), done.stderr
    assert (
        f"answerback: The answer 2 in {answers} does not fit the form 'What would you like?' "
        f'from server terminal_server: in its "content", {wrong} (the form\'s fields: "tea", '
        '"cups").'
    ) in done.stderr
    assert "refused" not in done.stderr


def test_roots_are_the_current_directory_and_every_root_given(tmp_path: Path) -> None:
    done = answerback("call", ASKING, "list_my_roots", "--root", str(tmp_path), "--json")
    assert done.returncode == 0
    listed = json.loads(done.stdout)["structuredContent"]["result"]
    assert listed == [f"{REPO.name}={REPO.as_uri()}", f"{tmp_path.name}={tmp_path.as_uri()}"]


@pytest.mark.parametrize(
    ("args", "complaint"),
    [
        (["call", TEAROOM, "greet", "name"], "'name' is not key=value"),
        (["call", TEAROOM, "greet", "{nope"], "not valid JSON"),
        (["call", TEAROOM, "greet", "--root", "/no/such/dir"], "/no/such/dir is not a directory"),
        (["call", "ftp://example.com", "greet"], "URLs must be http:// or https://"),
        (["call"], "the following arguments are required"),
        (["fly"], "invalid choice: 'fly'"),
        (["call", TEAROOM, "greet", "--timeout", "-1"], "-1 is not a positive number of"),
        (["call", TEAROOM, "greet", "--timeout", "nan"], "nan is not a positive number of"),
        (["call", TEAROOM, "greet", "--timeout", "soon"], "'soon' is not a number of seconds"),
        (["call", TEAROOM, "greet", "name=Ada", "--bogus"], "unrecognized arguments: --bogus"),
        (["list", TEAROOM, "greet"], "unrecognized arguments: greet"),
    ],
)
def test_usage_errors_exit_2(args: list[str], complaint: str) -> None:
    done = answerback(*args)
    assert done.returncode == 2
    assert complaint in done.stderr


def test_an_unknown_tool_exits_4_naming_the_tools() -> None:
    done = answerback("call", TEAROOM, "espresso")
    assert done.returncode == 4
    assert "has no tool 'espresso'" in done.stderr
    assert "greet" in done.stderr


def test_a_server_that_cannot_start_exits_3() -> None:
    done = answerback("call", "no-such-program-for-answerback --flag", "greet")
    assert done.returncode == 3
    assert "cannot talk to no-such-program-for-answerback" in done.stderr


@pytest.mark.parametrize(
    ("credentials", "shown"),
    [("ada:s3cret", "ada:****"), ("s3cret", "****")],
    ids=["password", "user"],
)
def test_a_urls_credentials_are_not_printed(credentials: str, shown: str) -> None:
    """The error line quoted ``http://user:password@host`` as typed, twice; a user name
    alone is often a token."""
    port = free_port()
    done = answerback("call", f"http://{credentials}@127.0.0.1:{port}/mcp", "greet")
    assert done.returncode == 3
    assert f"cannot talk to 127.0.0.1:{port} (http://{shown}@127.0.0.1:{port}/mcp)" in done.stderr
    assert "s3cret" not in done.stderr


def test_a_url_where_nothing_listens_exits_3() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    done = answerback("call", url, "greet")
    assert done.returncode == 3
    assert "nothing is listening" in done.stderr


# -- config files ---------------------------------------------------------------------


def test_a_config_name_is_a_target(tmp_path: Path) -> None:
    config = tmp_path / "servers.json"
    entry = {"command": sys.executable, "args": [str(SERVERS / "terminal_server.py")]}
    config.write_text(json.dumps({"mcpServers": {"tea": entry}}), encoding="utf-8")
    done = answerback("call", "tea", "greet", "name=Ada", "--config", str(config))
    assert (done.returncode, done.stdout) == (0, "Hello, Ada!\n")
    listed = answerback("list", "tea", "--config", str(config))
    assert listed.stdout.startswith("tea tools:\n")


def test_vs_code_project_config_is_found_by_default(tmp_path: Path) -> None:
    """``.vscode/mcp.json`` names its table ``servers``; the current directory's file is
    searched without ``--config``."""
    (tmp_path / ".vscode").mkdir()
    entry = {
        "type": "stdio",
        "command": sys.executable,
        "args": [str(SERVERS / "terminal_server.py")],
    }
    (tmp_path / ".vscode" / "mcp.json").write_text(json.dumps({"servers": {"tea": entry}}))
    done = answerback("call", "tea", "greet", "name=Bo", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, "Hello, Bo!\n")


@pytest.mark.parametrize("kind", ["http", "streamable-http", "streamableHttp"])
def test_an_http_entrys_type_is_read_as_hosts_spell_it(tmp_path: Path, kind: str) -> None:
    """Read as streamable HTTP: the command tries the URL (where nothing listens)."""
    url = f"http://127.0.0.1:{free_port()}/mcp"
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"servers": {"tea": {"type": kind, "url": url}}}))
    done = answerback("list", "tea", "--config", str(config))
    assert done.returncode == 3, done.stderr
    assert f"cannot talk to tea ({url}): nothing is listening" in done.stderr


@pytest.mark.parametrize(
    ("content", "complaint"),
    [
        ("{", "is not valid JSON"),
        ('{"servers": []}', "has no server table"),
        ('{"mcpServers": {"tea": {"args": []}}}', 'needs "command"'),
        ('{"mcpServers": {"tea": {"type": "sse", "url": "http://x/sse"}}}', "old SSE transport"),
        ('{"mcpServers": {"tea": {"command": "x", "args": "y"}}}', "not a list of strings"),
        (
            '{"mcpServers": {"tea": {"command": "x", "env": {"PORT": 8080}}}}',
            "\"env\" entry 'PORT' that is not a string: write its value in quotes",
        ),
        (
            '{"mcpServers": {"tea": {"command": "x", "env": {"A=B": "1"}}}}',
            "\"env\" entry 'A=B', which is not a variable name",
        ),
        (
            '{"mcpServers": {"tea": {"command": "x", "env": {"A": "\\u0000"}}}}',
            "\"env\" entry 'A' with a NUL character",
        ),
        (
            '{"mcpServers": {"tea": {"command": "x", "cwd": "/no/such/dir"}}}',
            "\"cwd\" '/no/such/dir', which does not exist",
        ),
        (
            '{"mcpServers": {"tea": {"url": "ftp://example.com/mcp"}}}',
            "\"url\" 'ftp://example.com/mcp': answerback speaks streamable HTTP, so it must",
        ),
        ('{"mcpServers": {"coffee": {"command": "x"}}}', "'tea' is not a server in"),
        (
            '{"mcpServers": {"tea": {"type": "http", "command": "x"}}}',
            '"type": "http", which connects to "url", but it has none: give "url", or, to '
            'run its "command", make "type" "stdio".',
        ),
        (
            '{"mcpServers": {"tea": {"type": "streamable-http", "headers": {}}}}',
            '"type": "streamable-http", which connects to "url", but it has none: give "url".',
        ),
        (
            '{"mcpServers": {"tea": {"type": "stdio", "url": "http://127.0.0.1:9/mcp"}}}',
            '"type": "stdio", which runs "command", but it has none: give "command", or, to '
            'connect to its "url", make "type" "http".',
        ),
        (
            '{"mcpServers": {"tea": {"type": "http", "command": "x", '
            '"url": "http://127.0.0.1:9/mcp"}}}',
            '"type": "http", which connects to "url", and also "command": remove "command" '
            '(or, to run it, make "type" "stdio" and remove "url").',
        ),
        (
            '{"mcpServers": {"tea": {"type": "stdio", "command": "x", '
            '"url": "http://127.0.0.1:9/mcp"}}}',
            '"type": "stdio", which runs "command", and also "url": remove "url" (or, to '
            'connect to it, make "type" "http" and remove "command").',
        ),
        (
            '{"mcpServers": {"tea": {"type": "websocket", "url": "http://127.0.0.1:9/mcp"}}}',
            '"type" "websocket": use "stdio" (with "command") or "http" (with "url"',
        ),
        ('{"mcpServers": {"tea": {"type": 5, "command": "x"}}}', '"type" 5: use "stdio"'),
        (
            '{"mcpServers": {"tea": {"command": "x", "url": "http://127.0.0.1:9/mcp"}}}',
            'has both "command" (a stdio server) and "url" (an HTTP server): keep the one',
        ),
        (
            '{"mcpServers": {"tea": {"url": "http://127.0.0.1:9/mcp", '
            '"headers": {"X-Note": "caf\u00e9"}}}}',
            "a header HTTP cannot send. The value of the header 'X-Note'",
        ),
        (
            '{"mcpServers": {"tea": {"url": "http://127.0.0.1:9/mcp", "headers": {"X Key": "v"}}}}',
            "a header HTTP cannot send. The header name 'X Key'",
        ),
        (
            '{"mcpServers": {"tea": {"url": "http://127.0.0.1:99999/mcp"}}}',
            "has a \"url\" that cannot be used. Cannot connect to 'http://127.0.0.1:99999/mcp'",
        ),
        (
            '{"mcpServers": {"tea": {"url": "http://:8000/mcp"}}}',
            "has a \"url\" that cannot be used. Cannot connect to 'http://:8000/mcp': it is "
            "not a valid URL (it names no host).",
        ),
    ],
)
def test_a_bad_config_is_a_usage_error(tmp_path: Path, content: str, complaint: str) -> None:
    """A variable no environment can hold, a missing ``cwd``, a URL that is not http(s),
    a header HTTP cannot send and a ``type`` its entry contradicts exited 3, blaming the
    connection or the command (or went unnoticed: the url won over the command, and a
    ``type`` over the key it contradicted)."""
    config = tmp_path / "mcp.json"
    config.write_text(content, encoding="utf-8")
    done = answerback("call", "tea", "greet", "--config", str(config))
    assert done.returncode == 2
    assert complaint in done.stderr


def test_a_config_file_not_in_utf8_is_a_usage_error_and_a_byte_order_mark_is_fine(
    tmp_path: Path,
) -> None:
    """Saved as UTF-16 it was a traceback; an editor's UTF-8 byte order mark made it
    "not valid JSON"."""
    entry = {"command": sys.executable, "args": [str(SERVERS / "terminal_server.py")]}
    text = json.dumps({"mcpServers": {"tea": entry}})
    config = tmp_path / "mcp.json"
    config.write_text(text, encoding="utf-16")
    done = answerback("call", "tea", "greet", "name=Ada", "--config", str(config))
    assert done.returncode == 2
    assert "is not UTF-8 text (byte 0 cannot be read): save it as UTF-8" in done.stderr
    config.write_text(text, encoding="utf-8-sig")
    done = answerback("call", "tea", "greet", "name=Ada", "--config", str(config))
    assert (done.returncode, done.stdout) == (0, "Hello, Ada!\n")


DEV_MODE_SERVER = """
import sys

from answerback.server import MCPServer

mcp = MCPServer("flags")


@mcp.tool()
def dev_mode() -> str:
    return str(sys.flags.dev_mode)


mcp.run()
"""


def test_a_python_file_on_its_own_is_run_by_answerbacks_python(tmp_path: Path) -> None:
    """``answerback call server.py`` tried to start the file as a program: "Permission
    denied ... Check the command and that it is installed and executable"."""
    script = tmp_path / "flags_server.py"
    script.write_text(DEV_MODE_SERVER, encoding="utf-8")
    done = answerback("call", str(script), "dev_mode")
    assert (done.returncode, done.stdout) == (0, "False\n"), done.stderr
    listed = answerback("list", str(script))
    assert listed.stdout.startswith("flags_server tools:\n")


def test_an_executable_python_file_keeps_its_own_interpreter(tmp_path: Path) -> None:
    """Its ``#!`` line may name another Python, or ``uv run --script`` with the script's
    own dependencies: it is started as the shell would start it (here its line asks for
    Python's development mode, which the tool reports)."""
    script = tmp_path / "flags_server.py"
    script.write_text(f"#!{sys.executable} -Xdev\n{DEV_MODE_SERVER}", encoding="utf-8")
    script.chmod(0o755)
    done = answerback("call", str(script), "dev_mode")
    assert (done.returncode, done.stdout) == (0, "True\n"), done.stderr


@pytest.mark.parametrize("target", ["python 'server.py", "python server.py\\"])
def test_a_command_the_shell_would_not_run_is_a_usage_error(target: str) -> None:
    done = answerback("list", target)
    assert done.returncode == 2
    assert "is not a command line the shell would run" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_missing_config_file_is_a_usage_error(tmp_path: Path) -> None:
    done = answerback("list", "tea", "--config", str(tmp_path / "none.json"))
    assert done.returncode == 2
    assert "does not exist" in done.stderr


# -- list -----------------------------------------------------------------------------


def test_list_prints_plain_text_when_not_a_terminal() -> None:
    done = answerback("list", f"{sys.executable} examples/library_server.py")
    assert done.returncode == 0
    assert done.stdout.splitlines() == [
        "library_server tools:",
        "  issue_card  Issue a new library card.",
        "  client_features  Which optional features the connected client declared.",
        "library_server resources:",
        "  (none)",
        "library_server prompts:",
        "  (none)",
    ]


def test_list_json() -> None:
    done = answerback("list", TEAROOM, "--json")
    assert done.returncode == 0
    listed = json.loads(done.stdout)
    assert listed["server"] == "terminal_server"
    assert {tool["name"] for tool in listed["tools"]} >= {"greet", "order_tea", "vanish"}
    greet = next(tool for tool in listed["tools"] if tool["name"] == "greet")
    assert greet["inputSchema"]["required"] == ["name"]


# -- run ------------------------------------------------------------------------------


def test_run_serves_a_file_over_stdio() -> None:
    """The file's own ``__main__`` block does not run; the usual name ``mcp`` is found."""
    served = f"{sys.executable} -m answerback run {SERVERS / 'terminal_server.py'}"
    done = answerback("call", served, "greet", "name=Ada")
    assert (done.returncode, done.stdout) == (0, "Hello, Ada!\n")


@pytest.mark.parametrize(
    ("number", "code"),
    [(signal.SIGINT, 130), (signal.SIGTERM, 0), (signal.SIGHUP, 0)],
    ids=["ctrl-c", "sigterm", "sighup"],
)
def test_run_over_http_shows_its_url_and_stops_cleanly_on_a_signal(
    number: signal.Signals, code: int
) -> None:
    """Port 0 picks a free port; the start-up line (written once listening) says which.
    SIGHUP (the terminal closed) ended the process on the spot, its sessions cut off;
    now it stops as SIGTERM does, as a supervisor's request to stop (status 0), and
    Ctrl-C as shells report an interrupted program (130)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "answerback", "run", "examples/library_server.py", "--http", "0"],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    try:
        first = process.stderr.readline()
        found = re.search(r"serving MCP at (http://127\.0\.0\.1:\d+/mcp) \(Ctrl-C to stop\)", first)
        assert found, first
        listed = answerback("list", found[1])
        assert listed.returncode == 0, listed.stderr
    finally:
        process.send_signal(number)
        out, err = process.communicate(timeout=PATIENCE_SECONDS)
    assert (process.returncode, out, err) == (code, "", "answerback: stopped\n")


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc to see a process's state")
@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGHUP], ids=lambda n: n.name)
def test_sigterm_or_sighup_closes_the_server_as_ctrl_c_does(
    number: signal.Signals, tmp_path: Path
) -> None:
    """The server's helper ends with it: the client stopped it in order (its process
    group is its own, so only the client can). Python's default would have ended the
    command on the spot and left the helper running."""
    pidfile = tmp_path / "helper.pid"
    process = subprocess.Popen(
        [sys.executable, "-m", "answerback", "call", TEAROOM, "leave_a_helper",
         f"pidfile={pidfile}"],
        cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + PATIENCE_SECONDS
        while not pidfile.exists() or not pidfile.read_text():
            assert time.monotonic() < deadline, "the tool never started its helper"
            time.sleep(0.05)
        process.send_signal(number)
        out, err = process.communicate(timeout=PATIENCE_SECONDS)
    finally:
        process.kill()
    assert process.returncode == 128 + number, err
    assert "Traceback" not in err + out
    helper = int(pidfile.read_text())
    while not ended(helper):
        assert time.monotonic() < deadline + PATIENCE_SECONDS, "the helper outlived the call"
        time.sleep(0.05)


@pytest.mark.parametrize(
    "command",
    [
        ("list", TEAROOM),
        ("call", TEAROOM, "greet", "name=Ada"),
        ("list", TEAROOM, "--json"),
        ("call", TEAROOM, "greet", "name=Ada", "--json"),
    ],
    ids=["list", "call", "list-json", "call-json"],
)
def test_output_whose_reader_has_gone_exits_141_saying_nothing(command: tuple[str, ...]) -> None:
    """``answerback list ... | head -1``: rich's exit code for it, 1, says "the tool
    failed" here. The command exits as a shell reports a program SIGPIPE ended."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has gone before anything is written
    try:
        done = subprocess.run(
            [sys.executable, "-m", "answerback", *command],
            stdin=subprocess.DEVNULL, stdout=write_end, stderr=subprocess.PIPE, text=True,
            cwd=REPO, timeout=PATIENCE_SECONDS, check=False,
        )  # fmt: skip
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (141, "")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="/dev/full is a Linux device")
@pytest.mark.parametrize(
    ("command", "lost"),
    [
        (("list", TEAROOM), "The listing"),
        (("list", TEAROOM, "--json"), "The listing"),
        (("call", TEAROOM, "greet", "name=Ada"), "The tool was called, but its result"),
    ],
    ids=["list", "list-json", "call"],
)
def test_output_that_cannot_be_written_exits_6_saying_why(
    command: tuple[str, ...], lost: str
) -> None:
    """``answerback list ... > /dev/full`` (a full disk) was a traceback and exit 1."""
    with Path("/dev/full").open("w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "answerback", *command],
            stdin=subprocess.DEVNULL, stdout=full, stderr=subprocess.PIPE, text=True,
            cwd=REPO, timeout=PATIENCE_SECONDS, check=False,
        )  # fmt: skip
    assert done.returncode == 6
    assert done.stderr == (
        f"answerback: {lost} could not be written to standard output: No space left on device.\n"
    )


def test_a_url_target_is_named_as_written() -> None:
    done = answerback("list", "http://[::1]:9/mcp")
    assert done.returncode == 3, done.stderr
    assert "cannot talk to [::1]:9 (http://[::1]:9/mcp)" in done.stderr
    assert "nothing is listening" in done.stderr


@pytest.mark.parametrize("command", [["list"], ["logout"], ["call", "greet"], ["connect"]])
@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://127.0.0.1:99999/mcp", "port 99999 is not 1 to 65535"),
        ("http://127.0.0.1:abc/mcp", "Invalid port: 'abc'"),
        ("http://[::1/mcp", "it is not a valid URL"),
        ("http://:8000/mcp", "(it names no host)"),
        ("http:///mcp", "(it names no host)"),
    ],
    ids=["port-out-of-range", "port-not-a-number", "bracket-left-open", "no-host", "empty"],
)
def test_a_url_no_client_can_connect_to_is_a_usage_error(
    command: list[str], url: str, problem: str, tmp_path: Path
) -> None:
    """A port out of range or not a number was a traceback (from naming the target), then
    a connection failure (exit 3) for every command but ``logout``; a bracket left open
    still was a traceback. A URL without a host failed to connect (exit 3) saying it was
    "missing an 'http://' or 'https://' protocol", and ``logout`` said it had no tokens."""
    done = answerback(command[0], url, *command[1:], env={"HOME": str(tmp_path)})
    assert done.returncode == 2, done.stderr
    assert f"Cannot connect to {url!r}: it is not a valid URL" in done.stderr
    assert problem in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("option", "content", "complaint"),
    [
        ("--answers", b"\xff\xfe[]", "is not UTF-8 text (byte 0 cannot be read)"),
        ("--answers", b"[" * 100_000 + b"]" * 100_000, "nests its values too deeply"),
        ("--config", b"[" * 100_000 + b"]" * 100_000, "nests its values too deeply"),
    ],
)
def test_a_json_file_that_cannot_be_read_is_a_usage_error(
    tmp_path: Path, option: str, content: bytes, complaint: str
) -> None:
    """Not UTF-8, or nested past the parser's recursion: both were tracebacks."""
    named = tmp_path / "file.json"
    named.write_bytes(content)
    target = "tea" if option == "--config" else TEAROOM  # a name is read from the config
    done = answerback("call", target, "order_tea", option, str(named))
    assert done.returncode == 2, done.stderr
    assert complaint in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("args", "env", "complaint"),
    [
        (["run", "examples/library_server.py", "--http", "0", "--path", "mcp"], {},
         "the endpoint's path starts with /"),
        (["list", "http://127.0.0.1:9/mcp", "--token", "caf\u00e9"], {},
         "holds a character a bearer token cannot"),
        (["list", "http://127.0.0.1:9/mcp"], {"ANSWERBACK_TOKEN": "a\x01b"},
         "holds a character a bearer token cannot"),
    ],
)  # fmt: skip
def test_options_that_cannot_work_are_usage_errors(
    args: list[str], env: dict[str, str], complaint: str
) -> None:
    """A path without its slash was an AssertionError; a token HTTP cannot carry failed
    as a connection error (exit 3)."""
    done = answerback(*args, env=env)
    assert done.returncode == 2, done.stderr
    assert complaint in done.stderr
    assert "Traceback" not in done.stderr


def test_call_with_stdout_closed_says_the_result_would_be_lost() -> None:
    """It exited 0, printing nothing anywhere."""
    command = f"{shlex.quote(sys.executable)} -m answerback call {shlex.quote(TEAROOM)} greet"
    done = subprocess.run(
        f"{command} name=Ada >&-", shell=True, stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True, cwd=REPO, timeout=PATIENCE_SECONDS, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "standard output is closed, so the result would be lost" in done.stderr


def test_timeout_bounds_connecting_too(tmp_path: Path) -> None:
    """A program that never answers ``initialize`` held the command for the client's
    30 s default, whatever ``--timeout`` said."""
    silent = tmp_path / "silent.sh"
    silent.write_text("#!/bin/sh\nexec sleep 600\n", encoding="utf-8")
    silent.chmod(0o755)
    done = answerback("call", str(silent), "anything", "--timeout", "1")
    assert done.returncode == 3
    assert "then up to 1 s for each request" in " ".join(done.stderr.split())


def test_connect_needs_a_terminal() -> None:
    done = answerback("connect", TEAROOM)
    assert done.returncode == 2
    assert "answerback connect needs a terminal" in done.stderr


def test_run_finds_the_only_server_or_the_one_named(tmp_path: Path) -> None:
    script = tmp_path / "two.py"
    script.write_text(
        "from answerback.server import Context, MCPServer\n"
        "alpha = MCPServer('alpha')\n"
        "beta = MCPServer('beta')\n"
        "@beta.tool()\n"
        "def hello() -> str:\n"
        "    return 'beta says hello'\n",
        encoding="utf-8",
    )
    several = answerback("run", str(script))
    assert several.returncode == 2
    assert "defines several MCPServers (alpha, beta)" in several.stderr
    assert f"{script}:NAME" in several.stderr
    served = f"{sys.executable} -m answerback run {script}:beta"
    done = answerback("call", served, "hello")
    assert (done.returncode, done.stdout) == (0, "beta says hello\n")


@pytest.mark.parametrize(
    ("source", "spec", "complaint"),
    [
        ("x = 1\n", "", "defines no MCPServer"),
        ("x = 1\n", ":x", "is a int, not an MCPServer"),
        ("x = 1\n", ":y", "is not defined"),
        ("x = 1\ndef f(:\n", "", "server.py:2: invalid syntax: fix the file's syntax"),
    ],
)
def test_run_says_what_is_wrong_with_the_file(
    tmp_path: Path, source: str, spec: str, complaint: str
) -> None:
    script = tmp_path / "server.py"
    script.write_text(source, encoding="utf-8")
    done = answerback("run", f"{script}{spec}")
    assert done.returncode == 2
    assert complaint in done.stderr


def test_run_refuses_a_bad_http_address() -> None:
    done = answerback("run", "examples/library_server.py", "--http", "localhost:http")
    assert done.returncode == 2
    assert "give a port" in done.stderr


def test_python_dash_m_and_the_script_are_the_same_command() -> None:
    script = Path(sys.executable).parent / "answerback"
    if not script.exists():
        pytest.skip(f"{script} is not installed (pip install -e . creates it)")
    done = subprocess.run(
        [str(script), "--help"],
        capture_output=True,
        text=True,
        timeout=PATIENCE_SECONDS,
        check=False,
    )
    assert done.returncode == 0
    assert "connect" in done.stdout


# -- roots ----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_roots_changes_are_announced_and_listed(tmp_path: Path) -> None:
    """Adding a root announces the change to every watcher; the server's next
    ``roots/list`` has it; adding it again announces nothing."""
    server = MCPServer("roots")
    changes: list[str] = []

    @server.tool()
    async def my_roots(ctx: Context) -> list[str]:
        result = await ctx.session.list_roots()
        return [str(root.uri) for root in result.roots]

    roots = Roots([REPO])

    async def announced() -> None:
        changes.append("changed")

    roots.watch(announced)
    async with Client(server, list_roots_callback=roots.list_roots) as client:
        stop = roots.watch(client.send_roots_list_changed)
        await roots.add(tmp_path)
        await roots.add(tmp_path)
        first = await client.call_tool("my_roots")
        await roots.remove(REPO)
        stop()
        second = await client.call_tool("my_roots")
    assert first.structured_content == {"result": [REPO.as_uri(), tmp_path.as_uri()]}
    assert second.structured_content == {"result": [tmp_path.as_uri()]}
    assert changes == ["changed", "changed"]
    with pytest.raises(ValueError, match="is not a root"):
        await roots.remove(REPO)
    with pytest.raises(ValueError, match="is not a directory"):
        await roots.add(tmp_path / "missing")


def test_the_librarys_warnings_are_printed_as_the_commands_own() -> None:
    """A server that prints on stdout: the call still works, and the diagnostic reads as
    the command's warning, not as a bare line from nowhere."""
    stray = f"{sys.executable} {SERVERS / 'stray_output_server.py'}"
    done = answerback("call", stray, "echo", "text=still here")
    assert done.returncode == 0
    assert done.stdout == "still here\n"
    warnings = [line for line in done.stderr.splitlines() if "not JSON-RPC" in line]
    assert warnings
    assert all(line.startswith("answerback: WARNING: ") for line in warnings)


def test_a_servers_stderr_log_is_set_aside_once_it_grows_too_large(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``answerback connect`` appends each stdio server's stderr to its log across
    sessions; a log past the limit is moved to ``NAME.log.1`` (replacing the one before)
    when the next session starts, so it cannot grow without bound."""
    from answerback.cli import _connect

    monkeypatch.setenv("ANSWERBACK_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(_connect, "LOG_BYTES_KEPT", 100)
    log = _connect.server_log("tearoom")
    assert log == tmp_path / "state" / "logs" / "tearoom.log"
    assert log.read_bytes() == b""  # made: it can be written
    log.write_text("small\n")
    assert _connect.server_log("tearoom") == log
    assert log.read_text() == "small\n"  # under the limit: kept, appended to
    set_aside = log.with_name("tearoom.log.1")
    set_aside.write_text("older\n")
    log.write_text("x" * 101)
    assert _connect.server_log("tearoom") == log
    assert log.read_bytes() == b""
    assert set_aside.read_text() == "x" * 101


@pytest.mark.anyio
async def test_a_command_that_fails_unforeseen_says_why_and_the_session_carries_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever a command raises (a bug, or an answer nobody foresaw), the interactive
    session says so on one line and goes on, as it does for a usage error."""
    session = Session(
        [], Roots([tmp_path]), history=tmp_path / "history", timeout=None, log_level="info"
    )
    session.console = Console(record=True, width=200)

    async def broken(name: str, words: list[str], line: str) -> None:
        raise RuntimeError("the kettle is broken")

    assert await session.run_line("nonsense")
    monkeypatch.setattr(session, "command", broken)
    assert await session.run_line("tools")
    assert not await session.run_line("quit")
    assert session.console.export_text().splitlines() == [
        "Unknown command 'nonsense': type help for the commands.",
        "tools failed (RuntimeError: the kettle is broken); the session carries on. This is "
        "a bug in answerback: please report it.",
    ]


@pytest.mark.anyio
async def test_the_arguments_form_shows_a_long_tool_description_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A megabyte of description above the arguments form is cut, saying how much, and
    the call the person chose goes on (it froze the form before)."""
    from answerback.cli import _ask_arguments, _connect

    shown: list[str] = []

    async def ask_form(form: Form, *, title: str, message: str, server: str) -> str:
        shown.append(message)
        return "decline"

    monkeypatch.setattr(_ask_arguments, "ask_form", ask_form)
    session = Session(
        [], Roots([tmp_path]), history=tmp_path / "history", timeout=None, log_level="info"
    )
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    tool = Tool(name="greet", description="z" * 1_000_000, input_schema=schema)
    server = _connect.Server(target=Target(name="tearoom"))
    assert await session._ask_arguments(server, tool) is None  # pyright: ignore[reportPrivateUsage]
    assert shown == ["z" * MAX_TEXT_LENGTH + "… (description cut: 934,464 characters not shown)"]
