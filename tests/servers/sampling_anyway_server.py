"""A stdio MCP server written without answerback that asks for sampling whatever the
client declared (answerback's own server checks first, and never does).

Usage: python sampling_anyway_server.py (legacy | modern)

- ``legacy``: speaks only the handshake era; its tool ``ask`` sends
  ``sampling/createMessage`` and fails the call with the client's answer if that is an
  error (the official SDK's servers relay a refusal so); ``tell`` does the same but puts
  the refusal's message and reason in an error result, as a server telling its model.
- ``modern``: speaks 2026-07-28; ``ask`` answers with an ``InputRequiredResult`` asking
  for sampling, so the client refuses the question itself.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

MODERN = "2026-07-28"
ASK = {"name": "ask", "description": "Ask the client's model.", "inputSchema": {"type": "object"}}
TELL = {**ASK, "name": "tell", "description": "Ask the client's model; say why not."}
SAMPLING = {
    "method": "sampling/createMessage",
    "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "What is 6 x 7?"}}],
        "maxTokens": 20,
    },
}


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def messages() -> Iterator[dict[str, Any]]:
    for line in sys.stdin:
        yield json.loads(line)


def answer(request: dict[str, Any], era: str, incoming: Iterator[dict[str, Any]]) -> None:
    method, request_id = request.get("method"), request.get("id")
    if request_id is None:
        return
    result: dict[str, Any]
    if method == "initialize" and era == "legacy":
        result = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "sampling_anyway", "version": "1"},
        }
    elif method == "server/discover" and era == "modern":
        result = {
            "supportedVersions": [MODERN],
            "capabilities": {"tools": {}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "anyway", "version": "1"}},
        }
    elif method == "tools/list":
        result = {"tools": [ASK, TELL]}
    elif method == "tools/call" and era == "modern":
        result = {"resultType": "input_required", "inputRequests": {"reply": SAMPLING}}
    elif method == "tools/call":
        send({"id": "sampling-1", **SAMPLING})
        reply = next(m for m in incoming if m.get("id") == "sampling-1" and "method" not in m)
        error = reply.get("error")
        if error is not None and request["params"]["name"] == "tell":
            why = f"{error['message']}: {error.get('data', {}).get('reason')}"
            result = {"content": [{"type": "text", "text": why}], "isError": True}
            send({"id": request_id, "result": result})
            return
        if error is not None:
            send({"id": request_id, "error": error})
            return
        result = {"content": [{"type": "text", "text": json.dumps(reply["result"])}]}
    else:
        send({"id": request_id, "error": {"code": -32601, "message": "Method not found"}})
        return
    send({"id": request_id, "result": result})


def main() -> None:
    era = sys.argv[1]
    incoming = messages()
    for request in incoming:
        answer(request, era, incoming)


if __name__ == "__main__":
    main()
