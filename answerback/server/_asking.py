"""How a tool's questions reach the client, in each protocol generation.

A tool author writes ``await ctx.elicit(...)`` once. On a legacy connection the
``LiveAsker`` sends a real ``elicitation/create`` request and waits. On a 2026-07-28
request the ``ReplayAsker`` answers from what the client already supplied; the first
question without an answer stops the tool (``InputNeeded``), the server returns an
``InputRequiredResult`` for it, and the client's retry runs the tool again from the
start, this time with that answer recorded. Questions are keyed by their position and a
digest of their content, so a tool that asks something different on a retry is asked
anew rather than handed a stale answer.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any, Protocol

from answerback.jsonrpc import IncomingRequest, JSONObject

_SHORT_NAMES = {
    "elicitation/create": "elicit",
    "sampling/createMessage": "sample",
    "roots/list": "roots",
}


class InputNeeded(BaseException):
    """Raised inside a tool on a 2026-07-28 request when it asks a new question.

    It derives from ``BaseException`` so that a tool's own ``except Exception`` cannot
    swallow it; the server turns it into an ``InputRequiredResult``.
    """

    def __init__(self, key: str, method: str, params: JSONObject | None) -> None:
        super().__init__(key)
        self.key = key
        self.method = method
        self.params = params

    @property
    def input_request(self) -> JSONObject:
        request: JSONObject = {"method": self.method}
        if self.params is not None:
            request["params"] = self.params
        return request


class Asker(Protocol):
    """Sends one question to the client and returns its raw answer.

    ``permitted`` raises if the client cannot be asked this (an undeclared capability);
    it is called only when the question would really go out.
    """

    async def ask(
        self, method: str, params: JSONObject | None, permitted: Callable[[], None]
    ) -> JSONObject: ...


class LiveAsker:
    """Legacy era: a real server→client request, sent as part of the current request."""

    def __init__(self, request: IncomingRequest) -> None:
        self._request = request

    async def ask(
        self, method: str, params: JSONObject | None, permitted: Callable[[], None]
    ) -> JSONObject:
        permitted()
        return await self._request.request(method, params)


class ReplayAsker:
    """2026-07-28: answers from the retry's recorded responses, or stops the tool."""

    def __init__(self, answers: dict[str, JSONObject]) -> None:
        self._answers = answers
        self._position = 0

    async def ask(
        self, method: str, params: JSONObject | None, permitted: Callable[[], None]
    ) -> JSONObject:
        key = question_key(self._position, method, params)
        self._position += 1
        answer = self._answers.get(key)
        if answer is None:
            permitted()
            raise InputNeeded(key, method, params)
        return answer


def question_key(position: int, method: str, params: Any) -> str:
    """A stable key for the question asked at ``position`` with this content."""
    canonical = json.dumps(params, sort_keys=True, separators=(",", ":"), default=str)
    digest = hashlib.sha256(f"{method}\n{canonical}".encode()).hexdigest()[:10]
    return f"{_SHORT_NAMES.get(method, 'ask')}-{position}-{digest}"
