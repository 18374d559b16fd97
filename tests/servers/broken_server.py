"""A stdio "server" with bugs, written without answerback so it can break the rules.

``python tests/servers/broken_server.py`` answers the legacy handshake as "Broken" 6.6
and every ``tools/call`` with a result that breaks the schema. With ``--silent`` it
reads requests and never answers any.
"""

from __future__ import annotations

import json
import sys
from typing import Any

INVALID_TOOL_RESULT = {"content": [{"type": "text"}], "isError": "maybe"}


def main() -> None:
    silent = "--silent" in sys.argv
    for line in sys.stdin:
        message: dict[str, Any] = json.loads(line)
        if silent or "id" not in message:
            continue
        method = message.get("method")
        result: dict[str, Any]
        if method == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "Broken", "version": "6.6"},
            }
        elif method == "tools/call":
            result = INVALID_TOOL_RESULT
        else:
            error = {"code": -32601, "message": f"Method not found: {method!r}"}
            print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}), flush=True)
            continue
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)


if __name__ == "__main__":
    main()
