"""The HTTP floor: MCP's streamable HTTP written by hand, one Starlette route under uvicorn.

Both protocol generations on one endpoint, told apart by ``MCP-Protocol-Version``:

- legacy (2025-11-25): ``initialize`` opens a session (``Mcp-Session-Id``) that every
  later POST must carry. ``echo`` is answered with JSON. ``ask`` answers with an SSE
  stream carrying its ``elicitation/create`` request; the client POSTs its answer (202),
  the session hands it to the waiting stream, and the result ends the stream.
- 2026-07-28: no session; the ``Mcp-Method``, ``Mcp-Name`` and ``MCP-Protocol-Version``
  headers must match the body. ``ask`` answers with an ``InputRequiredResult``, its
  retry with the result, both as JSON.

Usage: ``python floor_http.py --http PORT`` (POST http://127.0.0.1:PORT/mcp).
"""

from __future__ import annotations

import argparse
import json
import secrets
from collections.abc import AsyncIterator
from typing import Any

import anyio
import uvicorn
from floor_protocol import (
    LEGACY,
    MODERN,
    VERSION_META,
    Message,
    StateSealer,
    ask_modern,
    dumps,
    elicitation_request,
    greeting,
    response,
    tool_result,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

SESSION = "mcp-session-id"


class _Question:
    """One ``elicitation/create`` sent on a call's stream, until the client answers it."""

    def __init__(self) -> None:
        self.answered = anyio.Event()
        self.answer: Message = {}


class _Session:
    """A legacy session: its open questions by id, so an answer finds its stream."""

    def __init__(self) -> None:
        self.asked: dict[int, _Question] = {}
        self.last_question = 0

    async def ask(self, call_id: Any) -> AsyncIterator[str]:
        """The SSE stream of one ``ask`` call: the question, then (once answered) the result."""
        self.last_question += 1
        question_id = self.last_question
        question = self.asked[question_id] = _Question()
        try:
            yield _event(elicitation_request(question_id))
            await question.answered.wait()
        finally:
            del self.asked[question_id]
        result = tool_result(greeting(question.answer["result"]), modern=False)
        yield _event(response(call_id, result))

    def answer(self, message: Message) -> bool:
        """Hand the client's answer to the stream that asked; False if none did."""
        question = self.asked.get(message["id"])
        if question is None:
            return False
        question.answer = message
        question.answered.set()
        return True


_sessions: dict[str, _Session] = {}
_sealer = StateSealer(secrets.token_bytes(32))


def _event(message: Message) -> str:
    return f"data: {dumps(message)}\n\n"


def _json(message: Message, headers: dict[str, str] | None = None) -> Response:
    return Response(dumps(message), media_type="application/json", headers=headers)


async def endpoint(request: Request) -> Response:
    if request.method == "DELETE":
        ended = _sessions.pop(request.headers.get(SESSION, ""), None)
        return Response(status_code=404 if ended is None else 200)
    message = json.loads(await request.body())
    if request.headers.get("mcp-protocol-version") == MODERN:
        return _modern(request, message)
    return _legacy(request, message)


def _legacy(request: Request, message: Message) -> Response:
    if message.get("method") == "initialize":
        session_id = secrets.token_urlsafe(24)
        _sessions[session_id] = _Session()
        result: Message = {
            "protocolVersion": LEGACY,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "floor", "version": "0"},
        }
        return _json(response(message["id"], result), headers={SESSION: session_id})
    session = _sessions.get(request.headers.get(SESSION, ""))
    if session is None:
        return Response("unknown or missing Mcp-Session-Id", status_code=404)
    if "method" not in message:
        return Response(status_code=202 if session.answer(message) else 404)
    if message["method"].startswith("notifications/"):
        return Response(status_code=202)
    params = message["params"]
    if params["name"] == "echo":
        text = params["arguments"]["text"]
        return _json(response(message["id"], tool_result(text, modern=False)))
    return StreamingResponse(
        session.ask(message["id"]),
        media_type="text/event-stream",
        headers={"cache-control": "no-cache"},
    )


def _modern(request: Request, message: Message) -> Response:
    params = message["params"]
    headers = request.headers
    if (
        headers.get("mcp-method") != message["method"]
        or headers.get("mcp-name") != params["name"]
        or params["_meta"][VERSION_META] != MODERN
    ):
        error = {"code": -32600, "message": "the Mcp-* headers do not match the body"}
        body = {"jsonrpc": "2.0", "id": message.get("id"), "error": error}
        return Response(dumps(body), status_code=400, media_type="application/json")
    if params["name"] == "echo":
        result = tool_result(params["arguments"]["text"], modern=True)
    else:
        result = ask_modern(params, _sealer)
    return _json(response(message["id"], result))


app = Starlette(routes=[Route("/mcp", endpoint, methods=["POST", "DELETE"])])


def main() -> None:
    parser = argparse.ArgumentParser(description="HTTP JSON-RPC floor (echo and ask)")
    parser.add_argument("--http", type=int, metavar="PORT", required=True)
    args = parser.parse_args()
    uvicorn.run(app, host="127.0.0.1", port=args.http, log_level="warning")


if __name__ == "__main__":
    main()
