"""A stdio MCP server written without answerback, playing peers that answerback's own
server will not imitate: one of an older generation, and ones that ask whatever the
client declared.

Usage: python careless_server.py ROLE, where ROLE is

- ``legacy-only``: speaks only the handshake era; ``server/discover`` gets "Method not
  found", as from a server written before 2026-07-28.
- ``elicits-anyway``: speaks 2026-07-28 and answers ``tools/call`` with an
  ``InputRequiredResult`` asking for elicitation, whatever the request declared.
- ``samples-anyway``: speaks the handshake era; its tool ``ask`` sends
  ``sampling/createMessage`` and fails the call with the client's answer if that is an
  error (the official SDK's servers relay a refusal so); ``tell`` does the same but puts
  the refusal's message and reason in an error result, as a server telling its model.
- ``samples-anyway-modern``: speaks 2026-07-28; ``ask`` answers with an
  ``InputRequiredResult`` asking for sampling, so the client refuses the question itself.
- ``newer``: speaks the handshake era as a server written for a later revision would:
  fields and a capability nobody defined yet on its ``initialize`` result, its server
  info and its tool; its tool ``watch`` first sends the client a notification and a
  request of methods nobody defined yet, then answers with the client's reply to that
  request as text, next to a content block of a type nobody defined yet.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

MODERN = "2026-07-28"
MODERN_ROLES = ("elicits-anyway", "samples-anyway-modern")
ASK = {"name": "ask", "description": "Ask the client's model.", "inputSchema": {"type": "object"}}
TELL = {**ASK, "name": "tell", "description": "Ask the client's model; say why not."}
ELICITATION = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Your name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
    },
}
SAMPLING = {
    "method": "sampling/createMessage",
    "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "What is 6 x 7?"}}],
        "maxTokens": 20,
    },
}
SERVER_INFO = {"name": "careless", "version": "1"}
FUTURE = {"com.example/since": "2099-01-01"}
WATCH = {
    "name": "watch",
    "description": "Show a video.",
    "inputSchema": {"type": "object"},
    "rating": "G",
    "_meta": FUTURE,
}
VIDEO = {"type": "video", "uri": "https://example.com/v.mp4", "durationMs": 1200}


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def messages() -> Iterator[dict[str, Any]]:
    for line in sys.stdin:
        yield json.loads(line)


def answer(request: dict[str, Any], role: str, incoming: Iterator[dict[str, Any]]) -> None:
    """Answer one message (notifications get nothing)."""
    method, request_id = request.get("method"), request.get("id")
    if request_id is None:
        return
    result: dict[str, Any]
    if method == "initialize" and role == "newer":
        result = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {"listChanged": False, "paged": True}, "video": {}},
            "serverInfo": {**SERVER_INFO, "vendor": "Example"},
            "greeting": "hello",
            "_meta": FUTURE,
        }
    elif method == "initialize" and role not in MODERN_ROLES:
        result = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": SERVER_INFO,
        }
    elif method == "server/discover" and role in MODERN_ROLES:
        result = {
            "supportedVersions": [MODERN],
            "capabilities": {"tools": {}},
            "_meta": {"io.modelcontextprotocol/serverInfo": SERVER_INFO},
        }
    elif method == "tools/list" and role.startswith("samples-anyway"):
        result = {"tools": [ASK, TELL]}
    elif method == "tools/list" and role == "newer":
        result = {"tools": [WATCH], "_meta": FUTURE}
    elif method == "tools/call" and role == "newer":
        send({"method": "notifications/video/started", "params": {"uri": VIDEO["uri"]}})
        send({"id": "future-1", "method": "video/rate", "params": {"uri": VIDEO["uri"]}})
        reply = next(m for m in incoming if m.get("id") == "future-1" and "method" not in m)
        text = {"type": "text", "text": json.dumps(reply), "lang": "en"}
        result = {"content": [text, VIDEO], "isError": False, "_meta": FUTURE, "views": 3}
    elif method == "tools/call" and role in MODERN_ROLES:
        key, question = ("name", ELICITATION) if role == "elicits-anyway" else ("reply", SAMPLING)
        result = {"resultType": "input_required", "inputRequests": {key: question}}
    elif method == "tools/call" and role == "samples-anyway":
        send({"id": "sampling-1", **SAMPLING})
        reply = next(m for m in incoming if m.get("id") == "sampling-1" and "method" not in m)
        error = reply.get("error")
        if error is not None and request["params"]["name"] == "tell":
            why = f"{error['message']}: {error.get('data', {}).get('reason')}"
            result = {"content": [{"type": "text", "text": why}], "isError": True}
        elif error is not None:
            send({"id": request_id, "error": error})
            return
        else:
            result = {"content": [{"type": "text", "text": json.dumps(reply["result"])}]}
    else:
        send({"id": request_id, "error": {"code": -32601, "message": "Method not found"}})
        return
    send({"id": request_id, "result": result})


def main() -> None:
    role = sys.argv[1]
    incoming = messages()
    for request in incoming:
        answer(request, role, incoming)


if __name__ == "__main__":
    main()
