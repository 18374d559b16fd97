"""The stdio floor: hand-written JSON-RPC lines on stdin, answered on stdout.

No MCP library, no validation, no task per request: the least work a ``tools/call``
(``echo``, or ``ask`` with its ``elicitation/create`` round trip) can cost over stdio.
Questions stay open by id, so a client may have many calls waiting at once.
"""

from __future__ import annotations

import json
import secrets
import sys

from floor_protocol import FloorServer, dumps


def main() -> None:
    server = FloorServer(secrets.token_bytes(32))
    stdout = sys.stdout.buffer
    for line in sys.stdin.buffer:
        stdout.write(dumps(server.handle(json.loads(line))).encode() + b"\n")
        stdout.flush()


if __name__ == "__main__":
    main()
