"""The stdio floor: a hand-written JSON-RPC echo reading lines on stdin, answering on stdout.

No MCP, no validation, no task per request: the least work a ``tools/call`` echo can cost.
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    stdin = sys.stdin.buffer
    stdout = sys.stdout.buffer
    for line in stdin:
        request = json.loads(line)
        text = request["params"]["arguments"]["text"]
        response = {
            "jsonrpc": "2.0",
            "id": request["id"],
            "result": {"content": [{"type": "text", "text": text}], "isError": False},
        }
        stdout.write(json.dumps(response, separators=(",", ":")).encode() + b"\n")
        stdout.flush()


if __name__ == "__main__":
    main()
