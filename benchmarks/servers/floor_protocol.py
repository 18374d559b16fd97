"""What a floor server answers: MCP's ``tools/call`` wire shapes, hand-written with ``json``.

The floors bound what an MCP implementation can reach over a transport, so they do the
protocol work answerback does and nothing else: an ``echo`` tool; an ``ask`` tool that
asks one question, as a real ``elicitation/create`` request on a legacy connection and as
an ``InputRequiredResult`` on 2026-07-28, whose retry carries the answer in
``inputResponses`` and the server's ``requestState`` back. The state is bound to its
request and given an expiry under an HMAC-SHA256 (stdlib), the cheapest protection the
2026-07-28 MRTR rules accept (answerback also encrypts it). There is no validation beyond
what building the answer needs, no task per request and no model objects.

The in-process floor imports this as ``benchmarks.servers.floor_protocol``; the floor
scripts import it as ``floor_protocol`` from their own directory, so a subprocess still
needs nothing from the ``benchmarks`` package.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any

MODERN = "2026-07-28"
"""The protocol version whose tool calls carry ``_meta`` and answer with ``resultType``."""
LEGACY = "2025-11-25"
VERSION_META = "io.modelcontextprotocol/protocolVersion"
QUESTION_KEY = "name"
"""The ``inputRequests`` key of the ``ask`` tool's one question."""
QUESTION: dict[str, Any] = {
    "mode": "form",
    "message": "What is your name?",
    "requestedSchema": {
        "type": "object",
        "title": "Person",
        "properties": {"name": {"type": "string", "title": "Name"}},
        "required": ["name"],
    },
}
STATE_TTL_SECONDS = 600.0

Message = dict[str, Any]


def dumps(message: Message) -> str:
    """``message`` as compact JSON text, as the libraries write it."""
    return json.dumps(message, separators=(",", ":"))


def response(request_id: Any, result: Message) -> Message:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def tool_result(text: str, *, modern: bool) -> Message:
    """A ``CallToolResult`` with one text block (2026-07-28 adds ``resultType``)."""
    result: Message = {"content": [{"type": "text", "text": text}], "isError": False}
    if modern:
        result["resultType"] = "complete"
    return result


def is_modern(params: Message) -> bool:
    return params.get("_meta", {}).get(VERSION_META) == MODERN


def elicitation_request(question_id: int) -> Message:
    """The legacy ``elicitation/create`` request the ``ask`` tool sends its client."""
    return {"jsonrpc": "2.0", "id": question_id, "method": "elicitation/create", "params": QUESTION}


def greeting(answer: Message) -> str:
    """The ``ask`` tool's text for the client's ``ElicitResult``."""
    if answer["action"] == "accept":
        return f"Hello, {answer['content']['name']}."
    return "No name."


class StateSealer:
    """Signs ``requestState`` so a retry is accepted only for the request that got it."""

    def __init__(self, key: bytes) -> None:
        self._key = key

    def seal(self, params: Message) -> str:
        expiry = f"{time.time() + STATE_TTL_SECONDS:.0f}"
        return f"{expiry}.{self._tag(expiry, params)}"

    def opens(self, state: object, params: Message) -> bool:
        """Whether ``state`` was sealed here, for these ``params``, and has not expired."""
        if not isinstance(state, str) or "." not in state:
            return False
        expiry, tag = state.split(".", 1)
        if not expiry.isdigit() or float(expiry) < time.time():
            return False
        return hmac.compare_digest(tag, self._tag(expiry, params))

    def _tag(self, expiry: str, params: Message) -> str:
        arguments = json.dumps(params.get("arguments", {}), sort_keys=True, separators=(",", ":"))
        binding = f"tools/call\n{params['name']}\n{arguments}\n{expiry}".encode()
        digest = hmac.new(self._key, binding, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode()


def ask_modern(params: Message, sealer: StateSealer) -> Message:
    """One round of the ``ask`` tool on 2026-07-28: the question, or the greeting."""
    responses = params.get("inputResponses")
    if responses is None:
        return {
            "resultType": "input_required",
            "inputRequests": {QUESTION_KEY: {"method": "elicitation/create", "params": QUESTION}},
            "requestState": sealer.seal(params),
        }
    if not sealer.opens(params.get("requestState"), params):
        raise ValueError("floor: requestState was altered, expired or belongs to another call")
    return tool_result(greeting(responses[QUESTION_KEY]), modern=True)


class FloorServer:
    """The answer to each message of one connection (in-process or stdio), in order.

    No task per request: a legacy ``ask`` sends its question and remembers which call it
    belongs to; the client's answer, whenever it comes, completes that call. Many calls
    can be waiting at once, each on its own question id.
    """

    def __init__(self, key: bytes) -> None:
        self._sealer = StateSealer(key)
        self._asked: dict[int, Any] = {}
        """Each unanswered question's id -> the id of the call that asked it."""
        self._last_question = 0

    def handle(self, message: Message) -> Message:
        """What to send back for ``message`` (a ``tools/call`` or an answer to a question)."""
        if "method" not in message:
            call_id = self._asked.pop(message["id"])
            return response(call_id, tool_result(greeting(message["result"]), modern=False))
        if message["method"] != "tools/call":
            raise ValueError(f"floor: no method {message['method']!r} here, only tools/call")
        params = message["params"]
        modern = is_modern(params)
        if params["name"] == "echo":
            return response(message["id"], tool_result(params["arguments"]["text"], modern=modern))
        if params["name"] != "ask":
            raise ValueError(f"floor: no tool {params['name']!r} here, only echo and ask")
        if modern:
            return response(message["id"], ask_modern(params, self._sealer))
        self._last_question += 1
        self._asked[self._last_question] = message["id"]
        return elicitation_request(self._last_question)
