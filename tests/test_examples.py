"""Every example in ``examples/`` runs as a program and prints what its docstring promises.

Each script is started the way a user would start it (a subprocess with this
interpreter, from the repository root); most of them start their server as a further
subprocess over stdio, so these are end-to-end runs through real pipes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from support import load_module

from answerback.server import MCPServer

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
# Each script finishes in about a second; this only turns a hang into a failure.
TIMEOUT_SECONDS = 60


def run_example(script: str, *args: str, env: dict[str, str] | None = None) -> list[str]:
    completed = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
        check=False,
    )
    assert completed.returncode == 0, (
        f"{script} exited with {completed.returncode}\n"
        f"--- stdout ---\n{completed.stdout}\n--- stderr ---\n{completed.stderr}"
    )
    return completed.stdout.splitlines()


def test_library_client_over_stdio() -> None:
    assert run_example("library_client.py") == [
        "[TextContent(type='text', text='Card issued to Ada Lovelace.')]"
    ]


def test_client_features_declarations() -> None:
    assert run_example("client_features.py") == [
        "{'result': ['elicitation']}",
        "{'result': ['elicitation', 'sampling', 'roots']}",
        "{'result': []}",
    ]


@pytest.mark.parametrize("args", [(), ("--in-process",)], ids=["stdio", "in-process"])
def test_sampling_and_roots(args: tuple[str, ...]) -> None:
    assert run_example("sampling_and_roots.py", *args) == [
        "model my-llm said: The answer is 42.",
        "{'result': ['notebooks: file:///home/ada/notebooks']}",
    ]


def test_sampling_with_a_model_says_why_it_skips_without_an_endpoint() -> None:
    env = {name: value for name, value in os.environ.items() if name != "OPENAI_BASE_URL"}
    assert run_example("sampling_with_a_model.py", env=env) == [
        "Skipping: set OPENAI_BASE_URL (and OPENAI_API_KEY, OPENAI_MODEL if needed) "
        "to answer sampling with a real model."
    ]


@pytest.mark.parametrize("args", [(), ("--in-process",)], ids=["stdio", "in-process"])
def test_roots_guard(args: tuple[str, ...]) -> None:
    """Refused: '..' out of the root, a link out of it, a path outside; allowed once the
    directory is a root, refused again once it is not, in both generations."""
    expected: list[str] = []
    for mode in ("legacy", "2026-07-28"):
        expected += [
            f"{mode}, roots: work",
            "  notes/today.md: Tea at four.",
            "  ../shared/plan.md: Refusing '../shared/plan.md': it climbs out of its root "
            "through '..'",
            "  shortcut/plan.md: Refusing 'shortcut/plan.md': it goes through a symbolic link "
            "that leads outside every root",
            f"{mode}, roots: work, shared",
            "  shared/plan.md: Ship on Friday.",
            "  shortcut/plan.md: Ship on Friday.",
            f"{mode}, roots: work",
            "  shared/plan.md: Refusing 'shared/plan.md': it is outside every root",
        ]
    assert run_example("roots_guard.py", *args) == expected


def test_library_server_lists_its_tools_over_stdio() -> None:
    """The server script on its own answers a client that only lists its tools."""
    code = (
        "import sys, anyio\n"
        "from answerback import Client, StdioServer\n"
        "async def main():\n"
        "    server = StdioServer(sys.executable, ['examples/library_server.py'])\n"
        "    async with Client(server) as client:\n"
        "        print(sorted(tool.name for tool in await client.list_all_tools()))\n"
        "anyio.run(main)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines() == ["['client_features', 'issue_card']"]


def test_demo_shows_both_ends_of_every_conversation() -> None:
    lines = [line.strip() for line in run_example("demo.py")]
    expected_in_order = [
        "== Library server (stdio): a tool that asks for a name ==",
        "client → server: tools/call issue_card",
        "server → client: elicitation/create 'What name should go on the card?' (form mode)",
        "client → server: accept {'name': 'Ada Lovelace'}",
        "result:          [TextContent(type='text', text='Card issued to Ada Lovelace.')]",
        "== Library server (in-process): a tool that asks for a name ==",
        "result:          [TextContent(type='text', text='Card issued to Ada Lovelace.')]",
        "== Library server (stdio), 2026-07-28: the same callback, no server→client request ==",
        "client → server: accept {'name': 'Ada Lovelace'}",
        "client → server: tools/call issue_card again, with the answers and state",
        "result:          [TextContent(type='text', text='Card issued to Ada Lovelace.')]",
        "== Library server (stdio), client without an elicitation callback ==",
        "result:          MCPError: Elicitation not supported (code -32601)",
        "result:          structured_content == {'result': ['elicitation']}",
        "result:          structured_content == {'result': ['elicitation', 'sampling', 'roots']}",
        "result:          structured_content == {'result': []}",
        "== Sampling and roots (stdio): the server borrows the model and asks for folders ==",
        "server → client: sampling/createMessage user: 'What is six times seven?' (max_tokens=100)",
        "client → server: assistant: 'The answer is 42.' (model my-llm)",
        "result:          model my-llm said: The answer is 42.",
        "server → client: roots/list",
        "client → server: notebooks=file:///home/ada/notebooks",
        "result:          structured_content == {'result': "
        "['notebooks: file:///home/ada/notebooks']}",
        "== Sampling and roots (in-process): the server borrows the model and asks for folders ==",
        "result:          model my-llm said: The answer is 42.",
    ]
    position = 0
    for wanted in expected_in_order:
        try:
            position = lines.index(wanted, position) + 1
        except ValueError:
            pytest.fail(
                f"demo output lacks (in this order) the line {wanted!r}:\n" + "\n".join(lines)
            )


def test_two_eras_same_callback_in_process_and_over_stdio() -> None:
    card = "[TextContent(type='text', text='Card issued to Ada Lovelace.')]"
    assert run_example("two_eras.py") == [
        f"in-process mode='legacy'     protocol 2025-11-25: {card}",
        f"in-process mode='2026-07-28' protocol 2026-07-28: {card}",
        f"stdio      mode='legacy'     protocol 2025-11-25: {card}",
        f"stdio      mode='2026-07-28' protocol 2026-07-28: {card}",
    ]


def test_rounds_by_hand_across_two_client_processes() -> None:
    lines = run_example("rounds_by_hand.py")
    assert len(lines) == 4, lines
    assert lines[0].startswith(
        "process 1: the server asks 'What name should go on the card?' (key elicit-0-"
    )
    assert lines[1] == "process 1: saved the question and its sealed request_state to pending.json"
    assert lines[2].startswith("process 2: answered {'elicit-0-")
    assert lines[2].endswith("{'action': 'accept', 'content': {'name': 'Ada Lovelace'}}}")
    assert lines[3] == "process 2: [TextContent(type='text', text='Card issued to Ada Lovelace.')]"


def test_http_server_and_library_client_in_both_generations() -> None:
    card = "[TextContent(type='text', text='Card issued to Ada Lovelace.')]"
    assert run_example("http_server_and_client.py") == [
        "== library_client.main, unchanged (mode='legacy') ==",
        card,
        "== library_client's callback, mode='2026-07-28' ==",
        f"protocol 2026-07-28: {card}",
        "== library_client's callback, mode='auto' ==",
        f"protocol 2026-07-28: {card}",
    ]


def test_answering_layer() -> None:
    """A typo in a form is asked again with the field named; a link is judged first."""
    assert run_example("answering_layer.py") == [
        "asked again: The answer does not fit the form: email: is not a valid email "
        "address: There must be something after the @-sign.",
        "link https://example.com/confirm judged OK",
        "{'result': 'ada@example.com: DeclinedElicitation'}",
    ]


def test_icons_and_meta_reach_the_client_in_both_generations() -> None:
    described = [
        "  icons: https://example.com/library.png (image/png, 48x48)",
        "  tool lend: icon image/svg+xml, _meta {'com.example/cost': 'free'}",
        "  prompt review: icon image/png, _meta {'com.example/kind': 'review'}",
        "  resource catalogue: icon image/png, _meta {'com.example/rows': 120}",
    ]
    assert run_example("icons_and_meta.py") == [
        "legacy: Library (The Library): Lends books. https://example.com/library",
        *described,
        "2026-07-28: Library (The Library): Lends books. https://example.com/library",
        *described,
        "refused: Invalid argument for mcp.tool(): meta has the key "
        "'io.modelcontextprotocol/cost', whose prefix 'io.modelcontextprotocol/' the MCP "
        "specification reserves for MCP itself (its second label is 'modelcontextprotocol'). "
        "Use a prefix of your own, in reverse DNS, such as 'com.example/'.",
    ]


def test_icons_and_meta_prints_a_hostile_servers_words_written_out(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """It printed a server's title as sent: an escape sequence retitled the window, a
    bidi override reordered the line, a line break started a line of the server's."""
    example = load_module(EXAMPLES / "icons_and_meta.py")
    evil = "\x1b]0;PWNED\x07\u202eevil\nlegacy: Bank"
    hostile = MCPServer("hostile", title=evil, description=evil, website_url="https://a.example")
    anyio.run(example.show, hostile)
    written_out = "\\x1b]0;PWNED\\x07\\u202eevil\\x0alegacy: Bank"
    assert capsys.readouterr().out.splitlines() == [
        f"{mode}: hostile ({written_out}): {written_out} https://a.example"
        for mode in ("legacy", "2026-07-28")
    ]


def test_still_there_pings_only_where_the_protocol_lets_a_server_ask() -> None:
    assert run_example("still_there.py") == [
        "legacy: 3 batches, the client answered 3 pings",
        "2026-07-28: 3 batches, unchecked: Ping not supported",
    ]


def test_retiring_features_tells_clients_of_both_generations() -> None:
    lines: list[str] = []
    for mode in ("legacy", "2026-07-28"):
        lines += [
            f"{mode}: told the tools, prompts, resources changed",
            f"{mode}: now lists tools ['search'], prompts [], resources []",
            f"{mode}: calling lend fails: Unknown tool 'lend'",
        ]
    assert run_example("retiring_features.py") == lines


def test_trace_context_reaches_the_tool_in_both_generations() -> None:
    trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    assert run_example("trace_context.py") == [
        f"legacy: the tool ran under trace {trace}",
        f"2026-07-28: the tool ran under trace {trace}",
    ]


def test_one_listen_loop_hears_in_both_generations() -> None:
    lines: list[str] = []
    for mode in ("legacy", "2026-07-28"):
        lines += [
            f"{mode}: heard notifications/tools/list_changed",
            f"{mode}: heard notifications/resources/updated for library://news",
        ]
    assert run_example("listen_both_eras.py") == lines


def test_a_missing_resource_is_caught_as_not_found_in_both_generations() -> None:
    assert run_example("missing_resource.py") == [
        "legacy: Emma, by Jane Austen",
        "legacy: no such book: {'uri': 'books://nope'} (ResourceNotFoundError -32002)",
        "2026-07-28: Emma, by Jane Austen",
        "2026-07-28: no such book: {'uri': 'books://nope'} (InvalidParamsError -32602)",
    ]
