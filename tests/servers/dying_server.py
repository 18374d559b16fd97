"""A stdio "server" that dies in the middle of things, written without answerback.

``python tests/servers/dying_server.py HOW`` answers the legacy handshake, then:

- ``half-line``: answers the first ``tools/call`` with the first half of a result line
  (no newline) and exits with code 7;
- ``at-once``: exits with code 9 as soon as the handshake is done, reading nothing more;
- ``leaving-a-helper``: at the first ``tools/call`` starts a helper that inherits its
  stdin, stdout and stderr (as ``subprocess.Popen`` does by default) and exits with code
  5; the helper holds them open until the client closes the server's stdin.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any


def main() -> None:
    how = sys.argv[1]
    for line in sys.stdin:
        message: dict[str, Any] = json.loads(line)
        if message.get("method") == "notifications/initialized" and how == "at-once":
            os._exit(9)
        if "id" not in message:
            continue
        if message.get("method") == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "Dying", "version": "1.0"},
            }
            print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
        elif message.get("method") == "tools/call" and how == "half-line":
            result = {"content": [{"type": "text", "text": "never finished"}]}
            answer = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result})
            sys.stdout.write(answer[: len(answer) // 2])
            sys.stdout.flush()
            os._exit(7)
        elif message.get("method") == "tools/call" and how == "leaving-a-helper":
            subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.buffer.read()"])
            os._exit(5)


if __name__ == "__main__":
    main()
