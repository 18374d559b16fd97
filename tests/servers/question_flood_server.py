"""A legacy stdio server that floods the client with questions, written without
answerback so it can send what it likes.

``python tests/servers/question_flood_server.py N LIMIT`` answers the handshake as "Flood"
1.0; on ``tools/call`` it sends N ``elicitation/create``, N ``ping`` and N ``roots/list``
requests at once, and answers the call once every ping and roots request has its answer
and every question an answer or a refusal, but for LIMIT questions, which a person may
still be answering. The call's text is a JSON object:
``busy`` (questions refused as busy), ``answered`` (the others that got an answer before
the call was answered), ``pings`` and ``roots`` (answers), and ``refusal`` (the first
busy message).
"""

from __future__ import annotations

import json
import sys
from typing import Any

QUESTION = {
    "mode": "form",
    "message": "Your name?",
    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
}


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def main() -> None:
    n, limit = int(sys.argv[1]), int(sys.argv[2])
    call_id: Any = None
    seen: dict[str, Any] = {"busy": 0, "answered": 0, "pings": 0, "roots": 0, "refusal": None}
    for line in sys.stdin:
        message: dict[str, Any] = json.loads(line)
        method = message.get("method")
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "Flood", "version": "1.0"},
            }
            send({"id": message["id"], "result": result})
        elif method == "tools/call":
            call_id = message["id"]
            for k in range(n):
                send({"id": f"q{k}", "method": "elicitation/create", "params": QUESTION})
                send({"id": f"p{k}", "method": "ping"})
                send({"id": f"r{k}", "method": "roots/list"})
        elif method is None and isinstance(message.get("id"), str):
            kind = message["id"][0]
            error = message.get("error")
            if kind == "q" and error is not None and error["code"] == -32010:
                seen["busy"] += 1
                seen["refusal"] = seen["refusal"] or error["message"]
            elif kind == "q":
                seen["answered"] += 1
            elif kind == "p" and "result" in message:
                seen["pings"] += 1
            elif kind == "r" and "result" in message:
                seen["roots"] += 1
            heard = seen["busy"] + seen["answered"]
            if call_id is not None and seen["pings"] == seen["roots"] == n and heard >= n - limit:
                text = json.dumps(seen)
                send({"id": call_id, "result": {"content": [{"type": "text", "text": text}]}})
                call_id = None
        elif method is not None and "id" in message:
            error = {"code": -32601, "message": f"Method not found: {method!r}"}
            send({"id": message["id"], "error": error})


if __name__ == "__main__":
    main()
