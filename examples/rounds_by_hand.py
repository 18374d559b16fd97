"""Drive a 2026-07-28 tool call round by round, across two client processes.

On a 2026-07-28 connection a tool that needs input answers with an
``InputRequiredResult``: its questions plus a sealed ``requestState``. ``call_tool`` runs
the rounds for you; ``call_tool_round`` and ``answer_input_requests`` let you run them
yourself, so the call can outlive the process that started it. Here:

1. this script serves the Library server (``library_server.py``) over streamable HTTP
   on a free port of 127.0.0.1;
2. a first client process calls ``issue_card``, gets the question back, saves what the
   next round needs to a JSON file, and exits;
3. a second client process reads the file, answers the question with the Library client's
   callback, and sends the next round, echoing ``requestState`` unchanged.

Run it::

    python examples/rounds_by_hand.py

Or run the two client steps yourself against a Library server that is already serving
HTTP (``python examples/library_server.py --http``)::

    python examples/rounds_by_hand.py start http://127.0.0.1:8000/mcp pending.json
    python examples/rounds_by_hand.py finish http://127.0.0.1:8000/mcp pending.json
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import anyio
from library_client import handle_elicitation
from library_server import mcp

from answerback import Client
from answerback.transports.http import uvicorn_server
from answerback.types import InputRequiredResult

MODE = "2026-07-28"


async def start(url: str, path: Path) -> None:
    """Process one: send the first round and save the server's question."""
    # Every round declares the client's capabilities afresh, so this process registers
    # the elicitation callback too, although it never answers anything itself.
    async with Client(url, mode=MODE, elicitation_callback=handle_elicitation) as client:
        first = await client.call_tool_round("issue_card")
        if not isinstance(first, InputRequiredResult):
            raise SystemExit(f"expected a question, got a result: {first.content}")
        for key, request in (first.input_requests or {}).items():
            question = getattr(request.params, "message", request.method)
            print(f"process 1: the server asks {question!r} (key {key})")
        saved = {"tool": "issue_card", "arguments": None, "pending": first.to_wire()}
        await anyio.Path(path).write_text(json.dumps(saved, indent=2))
        print(f"process 1: saved the question and its sealed request_state to {path.name}")


async def finish(url: str, path: Path) -> None:
    """Process two: load the question, answer it, and send the next round."""
    saved = json.loads(await anyio.Path(path).read_text())
    pending = InputRequiredResult.model_validate(saved["pending"])
    async with Client(url, mode=MODE, elicitation_callback=handle_elicitation) as client:
        answers = await client.answer_input_requests(pending)
        print(f"process 2: answered {answers}")
        result = await client.call_tool_round(
            saved["tool"],
            saved["arguments"],
            input_responses=answers,
            request_state=pending.request_state,  # echoed back exactly as received
        )
        if isinstance(result, InputRequiredResult):
            raise SystemExit("the server asked again; run another round")
        print(f"process 2: {result.content}")


async def demo() -> None:
    """Serve the Library over HTTP and run both client steps as separate processes."""
    server = uvicorn_server(mcp.http_app(), host="127.0.0.1", port=0)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        while not server.started:  # noqa: ASYNC110 (uvicorn offers no event to await)
            await anyio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        url = f"http://127.0.0.1:{port}/mcp"
        try:
            with tempfile.TemporaryDirectory() as folder:
                state_file = str(Path(folder, "pending.json"))
                for step in ("start", "finish"):
                    done = await anyio.run_process(
                        [sys.executable, __file__, step, url, state_file], stderr=None
                    )
                    print(done.stdout.decode(), end="")
        finally:
            server.should_exit = True


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] in ("start", "finish"):
        step = start if sys.argv[1] == "start" else finish
        anyio.run(step, sys.argv[2], Path(sys.argv[3]))
    elif len(sys.argv) == 1:
        anyio.run(demo)
    else:
        raise SystemExit(__doc__)
