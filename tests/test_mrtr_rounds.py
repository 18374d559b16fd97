"""Questions asked from task groups, notifications across rounds, and hand-made rounds.

A 2026-07-28 tool is run again each round, so everything it does before its open
question happens again: the questions of concurrent tasks must still find their own
answers, a question raised inside a task group must still end the round (it arrives
wrapped in an exception group), and the log messages and progress of earlier rounds must
not reach the client twice. Each behaviour is checked against its legacy twin, in-process
and over stdio.
"""

from __future__ import annotations

import os
from typing import Any

import anyio
import pytest
from http_support import serve
from support import PATIENCE_SECONDS, SERVERS, load_module, target

from answerback import Client, MCPError
from answerback.client import ClientRequestContext
from answerback.server import Context, MCPServer
from answerback.types import (
    INTERNAL_ERROR,
    ElicitRequestParams,
    ElicitResult,
    InputRequiredResult,
    LoggingMessageNotificationParams,
    TextContent,
)

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
ROUNDS_SERVER = SERVERS / "rounds_server.py"
ANSWERS: dict[str, dict[str, Any]] = {
    "Your name?": {"name": "Ada"},
    "Your city?": {"city": "London"},
    "First name?": {"name": "Ada"},
    "Second name?": {"name": "Grace"},
    "Third name?": {"name": "Hedy"},
}


@pytest.fixture(params=["memory", "stdio"])
def transport(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(params=["legacy", MODERN])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


class Person:
    """Answers the rounds server's questions and notes what it was asked and told."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.logs: list[Any] = []
        self.progress: list[float] = []

    async def elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        self.asked.append(params.message)
        return ElicitResult(action="accept", content=ANSWERS[params.message])

    async def log(self, params: LoggingMessageNotificationParams) -> None:
        self.logs.append(params.data)

    async def report(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append(progress)

    def client(self, where: Any, mode: str, **options: Any) -> Client:
        return Client(
            where,
            mode=mode,
            elicitation_callback=self.elicit,
            logging_callback=self.log,
            log_level="info",
            **options,
        )


async def runs(client: Client, tool: str) -> int:
    """How often ``tool``'s body has started in the server's process so far."""
    result = await client.call_tool("runs", {"tool": tool})
    assert result.structured_content is not None
    return result.structured_content["result"]


def text(result: Any) -> str:
    assert isinstance(result.content[0], TextContent), result
    return result.content[0].text


# -- questions from task groups ------------------------------------------------------


async def test_concurrent_tasks_each_get_their_own_answer(transport: str, mode: str) -> None:
    """Two tasks ask at once: on 2026-07-28 both questions go out in one round (the
    answer comes in the second), and each is answered once."""
    person = Person()
    with anyio.fail_after(PATIENCE_SECONDS):
        async with person.client(target(transport, ROUNDS_SERVER), mode) as client:
            before = await runs(client, "pair")
            result = await client.call_tool("pair")
            rounds = await runs(client, "pair") - before
    assert text(result) == "Ada of London"
    assert sorted(person.asked) == ["Your city?", "Your name?"]
    assert rounds == (2 if mode == MODERN else 1)


async def test_a_question_two_task_groups_deep_ends_the_round(transport: str, mode: str) -> None:
    person = Person()
    with anyio.fail_after(PATIENCE_SECONDS):
        async with person.client(target(transport, ROUNDS_SERVER), mode) as client:
            result = await client.call_tool("nested")
    assert text(result) == "Hello, Ada."
    assert person.asked == ["Your name?"]


async def test_a_failing_task_wins_over_its_siblings_question(transport: str, mode: str) -> None:
    """Re-running would only meet the failure again: the tool's error is the result."""
    with anyio.fail_after(PATIENCE_SECONDS):
        async with Person().client(target(transport, ROUNDS_SERVER), mode) as client:
            result = await client.call_tool("ask_and_fail")
            assert (await client.call_tool("nested")).is_error is False  # still serving
    assert result.is_error is True
    assert text(result) == "Error executing tool: the shelf is empty"


async def test_a_refusal_inside_a_task_is_a_protocol_error(transport: str, mode: str) -> None:
    """Raised from a task group, the refusal is the same error as raised directly."""
    with anyio.fail_after(PATIENCE_SECONDS):
        async with Person().client(target(transport, ROUNDS_SERVER), mode) as client:
            with pytest.raises(MCPError) as caught:
                await client.call_tool("refused_in_a_task")
    assert caught.value.code == (-32021 if mode == MODERN else -32601)
    assert caught.value.message.startswith("List roots not supported")


async def test_questions_beyond_the_servers_cap_wait_for_the_next_round() -> None:
    person = Person()
    server = load_module(ROUNDS_SERVER).rounds_server(max_input_requests=1)
    async with person.client(server, MODERN) as client:
        before = await runs(client, "pair")
        result = await client.call_tool("pair")
        rounds = await runs(client, "pair") - before
    assert text(result) == "Ada of London"
    assert sorted(person.asked) == ["Your city?", "Your name?"]
    assert rounds == 3


async def test_a_question_rebuilt_with_its_keys_in_another_order_finds_its_answer() -> None:
    """The retry's run may build the same question with its keys in another order (a
    schema made from a set does, in another process): its recorded answer still fits,
    so the call ends in two rounds instead of asking for ever."""
    server = MCPServer("reordering")
    runs = 0

    @server.tool()
    async def who(ctx: Context) -> str:
        nonlocal runs
        runs += 1
        fields = [("name", {"type": "string", "title": "Name"}), ("city", {"type": "string"})]
        ordered = dict(fields if runs % 2 else reversed(fields))
        answer = await ctx.session.elicit_form(
            "Who and where?", {"type": "object", "properties": ordered}
        )
        content = answer.content or {}
        return f"{content['name']} of {content['city']}"

    asked: list[str] = []

    async def answer(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"name": "Ada", "city": "London"})

    with anyio.fail_after(PATIENCE_SECONDS):
        async with Client(server, mode=MODERN, elicitation_callback=answer) as client:
            result = await client.call_tool("who")
    assert text(result) == "Ada of London"
    assert asked == ["Who and where?"]
    assert runs == 2


# -- notifications across rounds -----------------------------------------------------


async def test_concurrent_tasks_log_once_however_they_interleave(transport: str, mode: str) -> None:
    """Each task logs before and after its question; the scheduler decides the order
    and how many rounds it takes, but every message arrives exactly once."""
    person = Person()
    with anyio.fail_after(PATIENCE_SECONDS):
        async with person.client(target(transport, ROUNDS_SERVER), mode) as client:
            result = await client.call_tool("pair_logged")
    assert text(result) == "Ada of London"
    assert sorted(person.logs) == [
        "asking for the city",
        "asking for the name",
        "got the city",
        "got the name",
    ]


async def test_each_notification_reaches_the_client_once(transport: str, mode: str) -> None:
    """Three questions in turn, a log message and a progress report around each: every
    one arrives exactly once and in order, although a 2026 tool runs four times."""
    person = Person()
    with anyio.fail_after(PATIENCE_SECONDS):
        async with person.client(target(transport, ROUNDS_SERVER), mode) as client:
            result = await client.call_tool("narrated", progress_callback=person.report)
    assert text(result) == "Ada, Grace, Hedy"
    assert person.logs == ["starting", "got the first", "got the second", "done"]
    assert person.progress == [1, 2, 3, 4]
    assert person.asked == ["First name?", "Second name?", "Third name?"]


async def test_each_notification_reaches_the_client_once_over_http(mode: str) -> None:
    """Over HTTP each 2026-07-28 round is a POST of its own, with its own stream."""
    person = Person()
    server = load_module(ROUNDS_SERVER).rounds_server()
    async with serve(server.http_app()) as running:
        with anyio.fail_after(PATIENCE_SECONDS):
            async with person.client(running.url, mode) as client:
                result = await client.call_tool("narrated", progress_callback=person.report)
    assert text(result) == "Ada, Grace, Hedy"
    assert person.logs == ["starting", "got the first", "got the second", "done"]
    assert person.progress == [1, 2, 3, 4]


async def test_rounds_on_other_instances_still_send_each_notification_once() -> None:
    """The record of what was sent travels in the sealed state: instances sharing the
    sealing key continue one another's rounds without repeating anything."""
    key = os.urandom(32)
    factory = load_module(ROUNDS_SERVER).rounds_server
    instances = [factory(state_keys=[key]), factory(state_keys=[key])]
    person = Person()
    answers: dict[str, Any] | None = None
    state: str | None = None
    result: Any = None
    for round_number in range(4):
        async with person.client(instances[round_number % 2], MODERN) as client:
            result = await client.call_tool_round(
                "narrated", None, input_responses=answers, request_state=state
            )
            if isinstance(result, InputRequiredResult):
                answers = await client.answer_input_requests(result)
                state = result.request_state
    assert not isinstance(result, InputRequiredResult)
    assert text(result) == "Ada, Grace, Hedy"
    assert person.logs == ["starting", "got the first", "got the second", "done"]


# -- InputRequiredResults built by hand ------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        pytest.param(
            "neither",
            None,
            "returned an InputRequiredResult with neither inputRequests nor requestState",
            id="empty",
        ),
        pytest.param(
            "too_many",
            {"count": 33},
            "returned an InputRequiredResult with 33 input requests; the limit is 32",
            id="too-many",
        ),
        pytest.param("garbled", None, "returned a malformed InputRequiredResult", id="garbled"),
    ],
)
async def test_the_server_refuses_a_bad_hand_made_round(
    transport: str, tool: str, arguments: dict[str, Any] | None, expected: str
) -> None:
    with anyio.fail_after(PATIENCE_SECONDS):
        async with Person().client(target(transport, ROUNDS_SERVER), MODERN) as client:
            with pytest.raises(MCPError) as caught:
                await client.call_tool(tool, arguments)
            alive = await client.call_tool("nested")
    assert caught.value.code == INTERNAL_ERROR
    assert f"Tool {tool!r} {expected}" in caught.value.message
    assert text(alive) == "Hello, Ada."


async def test_a_hand_made_question_the_client_cannot_answer_is_not_sent() -> None:
    """The specification forbids asking what the client did not declare, by hand too."""
    async with Person().client(load_module(ROUNDS_SERVER).mcp, MODERN) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("roots_by_hand")
    assert caught.value.code == -32021
    assert caught.value.data == {"requiredCapabilities": {"roots": {}}}


def test_the_servers_cap_must_allow_a_question() -> None:
    with pytest.raises(ValueError, match="max_input_requests must be positive, got 0"):
        MCPServer("x", max_input_requests=0)


def test_a_negative_cache_lifetime_is_refused_when_the_server_is_built() -> None:
    """Sent as is, every 2026-07-28 list would break the schema (``ttlMs`` 0 or more),
    and clients would fail them: the mistake is the server author's, caught here."""
    with pytest.raises(ValueError, match="cache_ttl_ms must be 0 or more"):
        MCPServer("x", cache_ttl_ms=-1)
