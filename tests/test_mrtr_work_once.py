"""Work a 2026-07-28 eliciting call does once, not twice (issue 17's in-process MRTR row).

Each test counts what a call does with the real client and server in one process: the
server validates a retry's answer when it arrives and hands the tool that model, the
client names the callback behind an answer only when it has to complain about it, and
the sealed state keeps its format, so state sealed before these changes still opens.
"""

from __future__ import annotations

import base64
import inspect
import os
from typing import Any

import pytest
from pydantic import BaseModel

from answerback import Client, MCPError
from answerback.client import ClientRequestContext
from answerback.client import _session as client_session
from answerback.server import Context, MCPServer
from answerback.server import _connection as connection
from answerback.server._request_state import PREFIX, RequestStateSealer
from answerback.types import (
    CallToolRequestParams,
    ElicitRequestParams,
    ElicitResult,
    InputRequiredResult,
    InvalidParamsError,
    ListRootsResult,
)

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"


class Person(BaseModel):
    name: str


def asking_server() -> MCPServer:
    mcp = MCPServer("Asker")

    @mcp.tool()
    async def greet(ctx: Context) -> str:
        answer = await ctx.elicit("Who are you?", schema=Person)
        return f"Hello, {answer.data.name}!" if answer.action == "accept" else "Bye."

    return mcp


async def accept_ada(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada"})


async def test_the_retry_answer_is_validated_once(monkeypatch: pytest.MonkeyPatch) -> None:
    validated: list[Any] = []
    original = ElicitResult.model_validate.__func__  # type: ignore[attr-defined]

    def counting(cls: type[ElicitResult], obj: Any, *args: Any, **kwargs: Any) -> ElicitResult:
        validated.append(obj)
        return original(cls, obj, *args, **kwargs)

    checked_again: list[str] = []
    check = connection._check_input_response  # pyright: ignore[reportPrivateUsage]

    def counting_check(key: str, method: str, response: Any) -> Any:
        checked_again.append(key)
        return check(key, method, response)

    monkeypatch.setattr(ElicitResult, "model_validate", classmethod(counting))
    monkeypatch.setattr(connection, "_check_input_response", counting_check)
    async with Client(asking_server(), mode=MODERN, elicitation_callback=accept_ada) as client:
        result = await client.call_tool("greet", {})
    assert result.text == "Hello, Ada!"
    # On arrival, as part of the request's params (the tool is handed that model): not
    # again as the answer to what was asked, nor when the tool asks.
    assert (validated, checked_again) == ([], [])


async def test_an_answer_of_another_kind_than_asked_is_refused() -> None:
    async with Client(asking_server(), mode=MODERN, elicitation_callback=accept_ada) as client:
        needed = await client.call_tool_round("greet")
        assert isinstance(needed, InputRequiredResult)
        assert needed.input_requests
        (key,) = needed.input_requests
        with pytest.raises(MCPError) as caught:
            await client.call_tool_round(
                "greet",
                input_responses={key: ListRootsResult(roots=[])},
                request_state=needed.request_state,
            )
    assert caught.value.code == -32602
    assert f"inputResponses[{key!r}] is not a valid answer to 'elicitation/create'" in (
        caught.value.message
    )


@pytest.mark.parametrize("mode", ["legacy", MODERN])
async def test_the_callback_is_named_only_for_a_complaint(
    monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    named: list[str] = []
    original = client_session.answerer

    def counting(responder: Any, method: str) -> str:
        named.append(method)
        return original(responder, method)

    monkeypatch.setattr(client_session, "answerer", counting)
    async with Client(asking_server(), mode=mode, elicitation_callback=accept_ada) as client:
        assert (await client.call_tool("greet", {})).text == "Hello, Ada!"
        assert named == []

        async def unfit(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
            return ElicitResult(action="accept", content={"nickname": "Ada"})

        client.session.responder.elicit = unfit  # type: ignore[method-assign]
        with pytest.raises(MCPError, match="does not fit the requested form"):
            await client.call_tool("greet", {})
    assert named == ["elicit"]


def test_state_keeps_its_format_both_ways() -> None:
    """Tokens are unpadded URL-safe base64 of key id, nonce and ciphertext, as before:
    one written by ``base64`` opens, and one sealed now reads back through ``base64``."""
    key = os.urandom(32)
    sealer = RequestStateSealer([key])
    token = sealer.seal({"answers": {"k": 1}}, b"binding")
    assert token.startswith(PREFIX)
    assert "=" not in token
    body = token.removeprefix(PREFIX)
    blob = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    rewritten = PREFIX + base64.urlsafe_b64encode(blob).decode().rstrip("=")
    assert rewritten == token
    assert sealer.open(rewritten, b"binding")["answers"] == {"k": 1}
    with pytest.raises(InvalidParamsError):
        sealer.open(token, b"another binding")
    with pytest.raises(InvalidParamsError):
        sealer.open(PREFIX + "é" + body, b"binding")


async def test_how_a_function_runs_is_decided_when_it_is_registered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``async def`` or not is read from the function once, not by ``inspect`` per call."""
    mcp = asking_server()

    @mcp.tool()
    def plain(text: str) -> str:
        return text.upper()

    asked: list[object] = []
    original = inspect.iscoroutinefunction

    def counting(function: object) -> bool:
        asked.append(function)
        return original(function)

    async with Client(mcp, mode=MODERN, elicitation_callback=accept_ada) as client:
        monkeypatch.setattr(inspect, "iscoroutinefunction", counting)
        assert (await client.call_tool("greet", {})).text == "Hello, Ada!"
        assert (await client.call_tool("plain", {"text": "in a thread"})).text == "IN A THREAD"
    assert asked == []


@pytest.mark.parametrize(
    "response",
    [
        {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m", "action": 1},
        {"roots": [], "action": "x"},
        {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m", "roots": 1},
    ],
    ids=["message with action", "roots with action", "message with roots"],
)
def test_input_responses_with_members_the_schema_allows_are_accepted(
    response: dict[str, Any],
) -> None:
    """Extra members are allowed by the schema's results: an answer is taken as the first
    kind it fits, whatever else it carries."""
    params = CallToolRequestParams.model_validate(
        {"name": "t", "inputResponses": {"k": response}, "requestState": "s"}
    )
    assert params.input_responses is not None
    assert "k" in params.input_responses


def test_an_answer_that_fits_two_kinds_is_taken_as_the_kind_asked() -> None:
    """``{"action": ..., "roots": [...]}`` fits an elicitation's answer first; asked for
    roots, it is checked as a roots list."""
    answer = {"action": "accept", "roots": [{"uri": "file:///tmp"}]}
    params = CallToolRequestParams.model_validate(
        {"name": "t", "inputResponses": {"r": answer}, "requestState": "s"}
    )
    state = {"asked": {"r": "roots/list"}}
    recorded = connection._recorded_state(  # pyright: ignore[reportPrivateUsage]
        state, {"r": answer}, params.input_responses
    )
    checked = recorded[1]["r"]
    assert isinstance(checked, ListRootsResult)
    assert [str(root.uri) for root in checked.roots] == ["file:///tmp"]
