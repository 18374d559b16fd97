"""Every example in ``examples/`` runs as a program and prints what its docstring promises.

Each script is started the way a user would start it (a subprocess with this
interpreter, from the repository root); most of them start their server as a further
subprocess over stdio, so these are end-to-end runs through real pipes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
# Each script finishes in about a second; this only turns a hang into a failure.
TIMEOUT_SECONDS = 60


def run_example(script: str, *args: str) -> list[str]:
    completed = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        cwd=REPO,
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
        "== Library server (stdio), client without an elicitation callback ==",
        "result:          MethodNotFoundError: Elicitation not supported",
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
