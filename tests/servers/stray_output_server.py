"""A stdio "server" that writes things other than JSON-RPC to stdout, as buggy servers do.

Written without answerback (whose stdio server keeps stdout for the protocol). It prints
a banner when it starts, and before each ``tools/call`` answer a long line of text and a
JSON value that is not a message; it answers the legacy handshake, ``tools/list`` and
``tools/call`` (with the ``text`` argument echoed).
Run: ``python tests/servers/stray_output_server.py``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

LONG_LINE = "progress: " + "#" * 500


def send(message: dict[str, Any]) -> None:
    print(json.dumps(message), flush=True)


def main() -> None:
    print("Starting the stray output server...", flush=True)
    for line in sys.stdin:
        message: dict[str, Any] = json.loads(line)
        if "id" not in message:
            continue
        method = message.get("method")
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "Stray", "version": "1.0"},
            }
        elif method == "tools/list":
            echo: dict[str, Any] = {
                "name": "echo",
                "inputSchema": {"type": "object", "properties": {"text": {}}},
            }
            result = {"tools": [echo]}
        elif method == "tools/call":
            print(LONG_LINE, flush=True)
            print(json.dumps({"debug": "not a message"}), flush=True)
            text = message["params"]["arguments"]["text"]
            result = {"content": [{"type": "text", "text": text}]}
        else:
            error = {"code": -32601, "message": f"Method not found: {method!r}"}
            send({"jsonrpc": "2.0", "id": message["id"], "error": error})
            continue
        send({"jsonrpc": "2.0", "id": message["id"], "result": result})


if __name__ == "__main__":
    main()
