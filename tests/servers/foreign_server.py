"""A minimal stdio MCP server written without answerback, playing a peer that answerback's
own server will not imitate.

Usage: python foreign_server.py (legacy-only | asks-anyway)

- ``legacy-only``: speaks only the handshake era; ``server/discover`` gets "Method not
  found", as from a server written before 2026-07-28.
- ``asks-anyway``: speaks 2026-07-28 and answers ``tools/call`` with an
  ``InputRequiredResult`` asking for elicitation whatever the request declared (a server
  that does not check the client's capabilities).
"""

from __future__ import annotations

import json
import sys
from typing import Any

VERSION = "2026-07-28"


def answer(request: dict[str, Any], role: str) -> dict[str, Any] | None:
    """The response to one message (``None`` for notifications)."""
    method, request_id = request.get("method"), request.get("id")
    if request_id is None:
        return None
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "foreign", "version": "1"},
        }
    elif method == "server/discover" and role == "asks-anyway":
        result = {
            "supportedVersions": [VERSION],
            "capabilities": {"tools": {}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "foreign", "version": "1"}},
        }
    elif method == "tools/call" and role == "asks-anyway":
        question = {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "Your name?",
                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
            },
        }
        result = {"resultType": "input_required", "inputRequests": {"name": question}}
    else:
        error = {"code": -32601, "message": "Method not found"}
        return {"jsonrpc": "2.0", "id": request_id, "error": error}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def main() -> None:
    role = sys.argv[1]
    for line in sys.stdin:
        response = answer(json.loads(line), role)
        if response is not None:
            sys.stdout.write(json.dumps(response) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
