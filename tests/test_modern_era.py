"""The 2026-07-28 era: one set of callbacks, multi-round-trip requests, sealed state.

The seed's callbacks answer the same Library tool over a legacy and a modern connection
on every transport; a tool author's ``ctx.elicit`` becomes an ``InputRequiredResult`` and
resumes on the retry; the state that carries answers between rounds cannot be altered,
replayed on another request or kept past its expiry; and neither side can make the
other loop for ever.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any

import anyio
import httpx2
import pytest
from http_support import POST_HEADERS, serve
from pydantic import BaseModel, Field, FileUrl
from support import LIBRARY_SERVER, PATIENCE_SECONDS, load_module, peer_pair

from answerback import Client, MCPError, StdioServer
from answerback.client import ClientRequestContext
from answerback.client._session import InputRequiredRoundsExceededError
from answerback.server import Context, MCPServer
from answerback.server import _connection as server_connection
from answerback.types import (
    SUPPORTED_VERSIONS,
    ClientCapabilities,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    Implementation,
    InputRequiredResult,
    ListRootsResult,
    LoggingMessageNotificationParams,
    Root,
    SamplingMessage,
    TextContent,
)

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
INVALID_STATE = "Invalid requestState: it was altered, has expired, or belongs to another request."


async def accept_ada(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada Lovelace"})


class Person(BaseModel):
    name: str


def asking_server(**options: Any) -> MCPServer:
    """A server whose tools ask in several ways, written once for both eras."""
    mcp = MCPServer("Asker", **options)

    @mcp.tool()
    async def greet(ctx: Context, greeting: str = "Hello") -> str:
        """Ask for a name, then greet."""
        answer = await ctx.elicit("Who are you?", schema=Person)
        return f"{greeting}, {answer.data.name}!" if answer.action == "accept" else "Bye."

    @mcp.tool()
    async def everything(ctx: Context) -> str:
        """Elicit, then sample, then list roots: three rounds on a modern connection."""
        person = await ctx.elicit("Who are you?", schema=Person)
        reply = await ctx.session.create_message(
            [SamplingMessage(role="user", content=TextContent(text="Say hi"))], max_tokens=10
        )
        roots = await ctx.session.list_roots()
        name = person.data.name if person.action == "accept" else "?"
        said = reply.content.text if isinstance(reply.content, TextContent) else "?"
        return f"{name} / {said} / {len(roots.roots)} root(s)"

    @mcp.tool()
    async def chatty(ctx: Context) -> str:
        """Log at three levels."""
        await ctx.debug("debug line")
        await ctx.info("info line")
        await ctx.warning("warning line")
        return "logged"

    @mcp.tool()
    async def insatiable(ctx: Context) -> str:
        """Asks one question after another, for ever."""
        number = 0
        while True:
            number += 1
            await ctx.elicit(f"Question {number}?", schema=Person)

    @mcp.tool()
    async def stubborn(ctx: Context) -> InputRequiredResult:
        """Never satisfied: asks the client to retry for ever (state only)."""
        return InputRequiredResult(request_state=f"round-{ctx.request_id}")

    return mcp


class Recorder:
    """Callbacks that answer and count."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        self.calls.append("elicit")
        return ElicitResult(action="accept", content={"name": "Grace"})

    async def sample(
        self, context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult:
        self.calls.append("sample")
        return CreateMessageResult(role="assistant", content=TextContent(text="hi"), model="m")

    async def roots(self, context: ClientRequestContext) -> ListRootsResult:
        self.calls.append("roots")
        return ListRootsResult(roots=[Root(uri=FileUrl("file:///home/grace"))])


@asynccontextmanager
async def library_target(transport: str) -> AsyncGenerator[Any, None]:
    """The seed's Library server, reached in-process, over stdio or over HTTP."""
    if transport == "stdio":
        yield StdioServer(sys.executable, [str(LIBRARY_SERVER)], env=dict(os.environ))
        return
    library = load_module(LIBRARY_SERVER).mcp
    if transport == "memory":
        yield library
        return
    async with serve(library.http_app()) as running:
        yield running.url


# -- the promise: same callbacks, both eras, every transport ---------------------------


@pytest.mark.parametrize("transport", ["memory", "stdio", "http"])
@pytest.mark.parametrize("mode", ["legacy", MODERN, "auto"])
async def test_the_seed_callback_answers_in_both_eras(transport: str, mode: str) -> None:
    """The unchanged seed callback gets Ada's card whatever the era and the transport."""
    async with library_target(transport) as target:
        with anyio.fail_after(PATIENCE_SECONDS):
            async with Client(target, mode=mode, elicitation_callback=accept_ada) as client:
                result = await client.call_tool("issue_card")
                expected = "2025-11-25" if mode == "legacy" else MODERN
                assert client.protocol_version == expected
    assert repr(result.content) == "[TextContent(type='text', text='Card issued to Ada Lovelace.')]"


async def test_each_question_is_a_round_and_each_callback_runs_once() -> None:
    """Three questions in a row take three rounds; earlier answers are not asked again."""
    recorder = Recorder()
    async with Client(
        asking_server(),
        mode=MODERN,
        elicitation_callback=recorder.elicit,
        sampling_callback=recorder.sample,
        list_roots_callback=recorder.roots,
    ) as client:
        result = await client.call_tool("everything")
    assert result.content[0] == TextContent(text="Grace / hi / 1 root(s)")
    assert recorder.calls == ["elicit", "sample", "roots"]


async def test_callbacks_see_the_input_request_key_as_request_id() -> None:
    seen: list[object] = []

    async def remember(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        seen.append(context.request_id)
        return ElicitResult(action="decline")

    async with Client(asking_server(), mode=MODERN, elicitation_callback=remember) as client:
        result = await client.call_tool("greet")
    assert result.content[0] == TextContent(text="Bye.")
    assert len(seen) == 1
    assert isinstance(seen[0], str)
    assert seen[0].startswith("elicit-0-")


# -- rounds by hand, and what the state is bound to -----------------------------------


async def first_round(
    client: Client, arguments: dict[str, Any] | None = None
) -> InputRequiredResult:
    round_one = await client.call_tool_round("greet", arguments)
    assert isinstance(round_one, InputRequiredResult)
    assert round_one.request_state is not None
    return round_one


async def test_rounds_driven_by_hand_complete_with_the_echoed_state() -> None:
    async with Client(asking_server(), mode=MODERN, elicitation_callback=accept_ada) as client:
        needed = await first_round(client)
        answers = await client.answer_input_requests(needed)
        done = await client.call_tool_round(
            "greet", None, input_responses=answers, request_state=needed.request_state
        )
    assert not isinstance(done, InputRequiredResult)
    assert done.content[0] == TextContent(text="Hello, Ada Lovelace!")


async def test_state_survives_between_connections_of_one_server() -> None:
    """The retry needs nothing but what it carries: a new connection completes it."""
    server = asking_server()
    async with Client(server, mode=MODERN, elicitation_callback=accept_ada) as client:
        needed = await first_round(client)
        answers = await client.answer_input_requests(needed)
    async with Client(server, mode=MODERN) as other:
        done = await other.call_tool_round(
            "greet", None, input_responses=answers, request_state=needed.request_state
        )
    assert not isinstance(done, InputRequiredResult)
    assert done.content[0] == TextContent(text="Hello, Ada Lovelace!")


def _altered(state: str) -> str:
    return state[:-3] + ("AAA" if not state.endswith("AAA") else "BBB")


def _extended(state: str) -> str:
    return state + "x"


def _forged(state: str) -> str:
    return "ab1.bm90IGEgc2VhbA"


@pytest.mark.parametrize(
    "spoil",
    [
        pytest.param(_altered, id="altered"),
        pytest.param(_extended, id="extended"),
        pytest.param(_forged, id="forged"),
    ],
)
async def test_tampered_state_is_refused_with_one_fixed_message(
    spoil: Callable[[str], str],
) -> None:
    async with Client(asking_server(), mode=MODERN, elicitation_callback=accept_ada) as client:
        needed = await first_round(client)
        answers = await client.answer_input_requests(needed)
        assert needed.request_state is not None
        with pytest.raises(MCPError) as caught:
            await client.call_tool_round(
                "greet", None, input_responses=answers, request_state=spoil(needed.request_state)
            )
    assert caught.value.code == -32602
    assert caught.value.message == INVALID_STATE


async def test_state_replayed_on_other_arguments_is_refused() -> None:
    async with Client(asking_server(), mode=MODERN, elicitation_callback=accept_ada) as client:
        needed = await first_round(client, {"greeting": "Hello"})
        answers = await client.answer_input_requests(needed)
        with pytest.raises(MCPError) as caught:
            await client.call_tool_round(
                "greet",
                {"greeting": "Goodbye"},
                input_responses=answers,
                request_state=needed.request_state,
            )
    assert (caught.value.code, caught.value.message) == (-32602, INVALID_STATE)


async def test_expired_state_is_refused() -> None:
    async with Client(
        asking_server(state_ttl_seconds=0.05), mode=MODERN, elicitation_callback=accept_ada
    ) as client:
        needed = await first_round(client)
        answers = await client.answer_input_requests(needed)
        await anyio.sleep(0.2)
        with pytest.raises(MCPError) as caught:
            await client.call_tool_round(
                "greet", None, input_responses=answers, request_state=needed.request_state
            )
    assert (caught.value.code, caught.value.message) == (-32602, INVALID_STATE)


async def test_instances_sharing_keys_accept_each_others_state_and_rotation_works() -> None:
    old, new = os.urandom(32), os.urandom(32)
    async with Client(
        asking_server(state_keys=[old]), mode=MODERN, elicitation_callback=accept_ada
    ) as client:
        needed = await first_round(client)
        answers = await client.answer_input_requests(needed)

    async def retry_on(server: MCPServer) -> Any:
        async with Client(server, mode=MODERN) as client:
            return await client.call_tool_round(
                "greet", None, input_responses=answers, request_state=needed.request_state
            )

    rotated = await retry_on(asking_server(state_keys=[new, old]))
    assert rotated.content[0] == TextContent(text="Hello, Ada Lovelace!")
    with pytest.raises(MCPError, match="Invalid requestState"):
        await retry_on(asking_server(state_keys=[new]))


def test_state_keys_must_be_32_bytes() -> None:
    with pytest.raises(ValueError, match="32 random bytes"):
        MCPServer("bad", state_keys=[b"short"])


async def test_an_answer_of_the_wrong_kind_is_refused_naming_the_key() -> None:
    async with Client(asking_server(), mode=MODERN, elicitation_callback=accept_ada) as client:
        needed = await first_round(client)
        assert needed.input_requests is not None
        (key,) = needed.input_requests
        wrong: dict[str, Any] = {key: {"roots": []}}
        with pytest.raises(MCPError) as caught:
            await client.call_tool_round(
                "greet", None, input_responses=wrong, request_state=needed.request_state
            )
    assert caught.value.code == -32602
    assert key in caught.value.message


async def test_answers_to_questions_never_asked_are_ignored_and_asked_again() -> None:
    async with Client(asking_server(), mode=MODERN, elicitation_callback=accept_ada) as client:
        needed = await first_round(client)
        again = await client.call_tool_round(
            "greet",
            None,
            input_responses={"made-up": {"action": "accept", "content": {"name": "Eve"}}},
            request_state=needed.request_state,
        )
    assert isinstance(again, InputRequiredResult)
    assert again.input_requests is not None
    assert set(again.input_requests) == set(needed.input_requests or {})


# -- limits and refusals --------------------------------------------------------------


async def test_a_server_that_never_finishes_hits_the_round_limit() -> None:
    async with Client(asking_server(), mode=MODERN, input_required_max_rounds=3) as client:
        with pytest.raises(InputRequiredRoundsExceededError, match="after 3 rounds"):
            await client.call_tool("stubborn")


async def test_a_round_no_retry_is_left_for_is_not_put_to_anyone() -> None:
    """With 3 rounds allowed, 3 rounds of questions are answered and retried; the
    fourth comes back with the 4th request, whose answers could never be sent, so the
    person is not asked it."""
    asked: list[str] = []

    async def person(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"name": "Grace"})

    async with Client(
        asking_server(), mode=MODERN, elicitation_callback=person, input_required_max_rounds=3
    ) as client:
        with pytest.raises(InputRequiredRoundsExceededError, match="after 3 rounds"):
            await client.call_tool("insatiable")
    assert asked == ["Question 1?", "Question 2?", "Question 3?"]


async def test_a_question_the_client_cannot_answer_is_never_sent() -> None:
    """No elicitation callback: the server refuses with -32021 and names what it needs."""
    async with Client(asking_server(), mode=MODERN) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("greet")
    assert caught.value.code == -32021
    assert caught.value.data == {"requiredCapabilities": {"elicitation": {}}}
    assert caught.value.message.startswith("Elicitation not supported")


async def test_a_refusing_callback_fails_the_call_as_in_the_legacy_era() -> None:
    async def refuse(context: ClientRequestContext, params: ElicitRequestParams) -> Any:
        from answerback.types import ErrorData

        return ErrorData(code=-1, message="No thanks.")

    async with Client(asking_server(), mode=MODERN, elicitation_callback=refuse) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("greet")
    assert (caught.value.code, caught.value.message) == (-1, "No thanks.")


@pytest.mark.parametrize("level", [None, "warning"])
async def test_log_messages_arrive_only_for_requests_that_opt_in(level: Any) -> None:
    received: list[LoggingMessageNotificationParams] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        received.append(params)

    async with Client(
        asking_server(), mode=MODERN, logging_callback=on_log, log_level=level
    ) as client:
        await client.call_tool("chatty")
    expected = [] if level is None else ["warning line"]
    assert [p.data for p in received] == expected


# -- the wire: bad _meta, unknown versions, HTTP headers -------------------------------


def modern_meta(**overrides: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    }
    meta.update(overrides)
    return {key: value for key, value in meta.items() if value is not None}


def body(method: str, params: dict[str, Any], request_id: int = 7) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def headers(method: str, name: str | None = None, version: str = MODERN) -> dict[str, str]:
    sent = {**POST_HEADERS, "mcp-protocol-version": version, "mcp-method": method}
    if name is not None:
        sent["mcp-name"] = name
    return sent


@asynccontextmanager
async def modern_http() -> AsyncGenerator[tuple[httpx2.AsyncClient, str], None]:
    library = load_module(LIBRARY_SERVER).mcp
    async with serve(library.http_app()) as running, httpx2.AsyncClient() as http:
        yield http, running.url


async def test_requests_that_declare_alike_share_one_validated_declaration() -> None:
    seen: list[tuple[ClientCapabilities, Implementation]] = []
    mcp = MCPServer("Declarations")

    @mcp.tool()
    def remember(ctx: Context) -> str:
        seen.append((ctx.session.client_capabilities, ctx.session.client_info))
        return "noted"

    async with Client(mcp, mode=MODERN) as plain:
        await plain.call_tool("remember")
        await plain.call_tool("remember")
    async with Client(mcp, mode=MODERN, elicitation_callback=accept_ada) as asking:
        await asking.call_tool("remember")
    (capabilities, info), again, other = seen
    assert again[0] is capabilities
    assert again[1] is info
    assert other[0] is not capabilities
    assert capabilities.elicitation is None
    assert other[0].elicitation is not None


async def test_a_bad_declaration_is_refused_on_every_request() -> None:
    bad = modern_meta(**{"io.modelcontextprotocol/clientCapabilities": {"elicitation": 5}})
    async with modern_http() as (http, url):
        codes: list[int | None] = []
        for meta in (bad, modern_meta(), bad):
            response = await http.post(
                url, json=body("tools/list", {"_meta": meta}), headers=headers("tools/list")
            )
            answer = response.json()
            codes.append(answer["error"]["code"] if "error" in answer else None)
    assert codes == [-32602, None, -32602]


async def test_the_declarations_kept_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    kept: dict[bytes, object] = {}
    monkeypatch.setattr(server_connection, "_DECLARATIONS_KEPT", 3)
    monkeypatch.setattr(server_connection, "_declarations", kept)
    mcp = MCPServer("Declarations")

    @mcp.tool()
    def who(ctx: Context) -> str:
        return ctx.session.client_info.name

    for number in range(8):
        info = Implementation(name=f"client {number}", version="1")
        async with Client(mcp, mode=MODERN, client_info=info) as client:
            assert (await client.call_tool("who")).structured_content == {
                "result": f"client {number}"
            }
        assert 1 <= len(kept) <= 3


async def test_a_large_declaration_is_validated_each_time_and_not_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kept: dict[bytes, object] = {}
    monkeypatch.setattr(server_connection, "_declarations", kept)
    mcp = MCPServer("Declarations")

    @mcp.tool()
    def who(ctx: Context) -> str:
        return ctx.session.client_info.name

    bulky = "x" * 10_000
    async with Client(mcp, mode=MODERN, client_info=Implementation(name=bulky, version="1")) as c:
        for _ in range(2):
            assert (await c.call_tool("who")).structured_content == {"result": bulky}
    assert kept == {}


def test_a_declaration_that_is_not_json_is_validated_but_not_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kept: dict[bytes, object] = {}
    monkeypatch.setattr(server_connection, "_declarations", kept)
    declare = server_connection._declaration  # pyright: ignore[reportPrivateUsage]
    capabilities, _ = declare(
        {"experimental": {"handle": {"value": object()}}}, {"name": "in-process", "version": "1"}
    )
    assert capabilities.experimental is not None
    assert kept == {}


def test_a_modern_client_dumps_its_declaration_once_and_follows_a_new_one() -> None:
    session = Client(asking_server(), mode=MODERN).session
    session.modern_version = MODERN
    capabilities_key = "io.modelcontextprotocol/clientCapabilities"
    first = session.stamp({"name": "echo"})
    second = session.stamp({"name": "echo"})
    assert first is not None
    assert second is not None
    assert second["_meta"][capabilities_key] is first["_meta"][capabilities_key]
    session.capabilities = ClientCapabilities(experimental={"tracing": {}})
    third = session.stamp(None)
    assert third is not None
    assert third["_meta"][capabilities_key] == {"experimental": {"tracing": {}}}


@pytest.mark.parametrize(
    ("request_headers", "payload", "status", "code"),
    [
        pytest.param(
            headers("tools/list"),
            body(
                "tools/list",
                {"_meta": modern_meta(**{"io.modelcontextprotocol/clientCapabilities": None})},
            ),
            400,
            -32602,
            id="missing-capabilities",
        ),
        pytest.param(
            headers("tools/list"),
            body(
                "tools/list",
                {"_meta": modern_meta(**{"io.modelcontextprotocol/protocolVersion": "2099-01-01"})},
            ),
            400,
            -32020,
            id="header-and-meta-disagree",
        ),
        pytest.param(
            headers("tools/list", version="2099-01-01"),
            body(
                "tools/list",
                {"_meta": modern_meta(**{"io.modelcontextprotocol/protocolVersion": "2099-01-01"})},
            ),
            400,
            -32022,
            id="unsupported-version",
        ),
        pytest.param(
            headers("prompts/list"),
            body("tools/list", {"_meta": modern_meta()}),
            400,
            -32020,
            id="method-header-mismatch",
        ),
        pytest.param(
            headers("tools/call"),
            body("tools/call", {"name": "issue_card", "_meta": modern_meta()}),
            400,
            -32020,
            id="missing-name-header",
        ),
        pytest.param(
            headers("tools/call", name="client_features"),
            body("tools/call", {"name": "issue_card", "_meta": modern_meta()}),
            400,
            -32020,
            id="name-header-mismatch",
        ),
        pytest.param(
            headers("initialize"),
            body("initialize", {"_meta": modern_meta()}),
            404,
            -32601,
            id="removed-method",
        ),
    ],
)
async def test_http_refuses_bad_modern_requests_in_spec_order(
    request_headers: dict[str, str], payload: dict[str, Any], status: int, code: int
) -> None:
    async with modern_http() as (http, url):
        response = await http.post(url, json=payload, headers=request_headers)
    assert response.status_code == status
    answer = response.json()
    assert answer["id"] == payload["id"]
    assert answer["error"]["code"] == code
    if code == -32022:
        assert answer["error"]["data"]["requested"] == "2099-01-01"
        assert MODERN in answer["error"]["data"]["supported"]


@pytest.mark.parametrize(
    ("version", "supported"),
    [("2025-11-25", [MODERN]), ("2099-01-01", list(SUPPORTED_VERSIONS))],
    ids=["handshake-version", "unknown-version"],
)
async def test_a_version_not_spoken_per_request_is_not_listed_as_supported(
    version: str, supported: list[str]
) -> None:
    """Without a session (stdio, in process) as over HTTP: 2025-11-25 per request was
    refused with 2025-11-25 among the versions it listed, so a client following the
    list retried the very request refused."""
    library = load_module(LIBRARY_SERVER).mcp
    meta = modern_meta(**{"io.modelcontextprotocol/protocolVersion": version})
    answer: dict[str, Any] = {}
    with peer_pair() as (server_side, peer):
        async with anyio.create_task_group() as tg:
            tg.start_soon(library.serve_connection, *server_side)
            await peer.send(body("tools/list", {"_meta": meta}))
            with anyio.fail_after(PATIENCE_SECONDS):
                answer = await peer.receive()
            tg.cancel_scope.cancel()
    assert answer["error"]["code"] == -32022
    assert answer["error"]["data"] == {"supported": supported, "requested": version}
    if version == "2025-11-25":
        assert "only in a session opened with initialize" in answer["error"]["message"]


async def test_http_names_are_base64_when_unsafe_and_sessions_are_not_used() -> None:
    async with modern_http() as (http, url):
        encoded = "=?base64?Y2xpZW50X2ZlYXR1cmVz?="  # "client_features"
        response = await http.post(
            url,
            json=body("tools/call", {"name": "client_features", "_meta": modern_meta()}),
            headers={**headers("tools/call", name=encoded), "accept": "application/json"},
        )
        get = await http.get(
            url, headers={"mcp-protocol-version": MODERN, "accept": "text/event-stream"}
        )
    assert response.status_code == 200
    assert "mcp-session-id" not in response.headers
    assert response.json()["result"]["structuredContent"] == {"result": []}
    assert get.status_code == 405


async def test_http_checks_mirrored_parameter_headers() -> None:
    mcp = MCPServer("Regions")

    @mcp.tool()
    def where(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
        """Echo the region."""
        return region

    async with serve(mcp.http_app()) as running, httpx2.AsyncClient() as http:
        call = body(
            "tools/call", {"name": "where", "arguments": {"region": "eu"}, "_meta": modern_meta()}
        )
        plain = {**headers("tools/call", name="where"), "accept": "application/json"}
        missing = await http.post(running.url, json=call, headers=plain)
        wrong = await http.post(running.url, json=call, headers={**plain, "mcp-param-region": "us"})
        right = await http.post(running.url, json=call, headers={**plain, "mcp-param-region": "eu"})
        broken = await http.post(
            running.url, json=call, headers={**plain, "mcp-param-region": "=?base64?ZX?="}
        )
        async with Client(running.url, mode=MODERN) as client:
            result = await client.call_tool("where", {"region": " über "})
    assert [r.status_code for r in (missing, wrong, broken)] == [400, 400, 400]
    assert {r.json()["error"]["code"] for r in (missing, wrong, broken)} == {-32020}
    assert right.status_code == 200
    assert result.content[0] == TextContent(text=" über ")


async def test_http_mirrored_headers_follow_a_tool_replaced_under_its_name() -> None:
    mcp = MCPServer("Regions")

    @mcp.tool(name="where")
    def by_region(
        region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})],
    ) -> str:
        """Echo the region."""
        return region

    def call(region: str, **extra: str) -> Any:
        payload = body(
            "tools/call", {"name": "where", "arguments": {"region": region}, "_meta": modern_meta()}
        )
        sent = {**headers("tools/call", name="where"), "accept": "application/json", **extra}
        return http.post(running.url, json=payload, headers=sent)

    async with serve(mcp.http_app()) as running, httpx2.AsyncClient() as http:
        before = await call("eu", **{"mcp-param-region": "eu"})
        mcp.remove_tool("where")

        @mcp.tool(name="where")
        def by_zone(
            region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Zone"})],
        ) -> str:
            """Echo the region, mirrored as the zone."""
            return region

        old_header = await call("eu", **{"mcp-param-region": "eu"})
        new_header = await call("eu", **{"mcp-param-zone": "eu"})
    assert before.status_code == 200
    assert old_header.status_code == 400
    assert "Mcp-Param-Zone" in old_header.json()["error"]["message"]
    assert new_header.status_code == 200


async def test_http_reads_a_tools_mirrored_headers_from_its_schema_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    modern_server = importlib.import_module("answerback.transports.http._modern_server")
    original = modern_server.header_parameters
    walks: list[object] = []

    def counted(schema: dict[str, Any]) -> dict[str, tuple[str, ...]]:
        walks.append(schema)
        return original(schema)

    monkeypatch.setattr(modern_server, "header_parameters", counted)
    mcp = MCPServer("Regions")

    @mcp.tool()
    def where(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
        """Echo the region."""
        return region

    async with serve(mcp.http_app()) as running, Client(running.url, mode=MODERN) as client:
        for region in ("eu", "us", "ap"):
            result = await client.call_tool("where", {"region": region})
            assert result.content[0] == TextContent(text=region)
    assert len(walks) == 1


# -- interop with the official SDK in its default (auto) mode --------------------------


@pytest.mark.interop
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_the_official_client_drives_our_multi_round_trip_tool(transport: str) -> None:
    from pathlib import Path

    official_client = Path(__file__).parent / "interop" / "official_client.py"
    async with library_target(transport) as target:
        where = f"stdio:{sys.executable} {LIBRARY_SERVER}" if transport == "stdio" else target
        with anyio.fail_after(PATIENCE_SECONDS * 2):
            done = await anyio.run_process(
                [sys.executable, str(official_client), "auto", where], check=False
            )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode() == "Card issued to Ada Lovelace.\n"


@pytest.mark.interop
async def test_our_client_drives_an_official_multi_round_trip_server() -> None:
    from pathlib import Path

    official_server = Path(__file__).parent / "interop" / "official_server.py"
    recorder = Recorder()
    target = StdioServer(sys.executable, [str(official_server)], env=dict(os.environ))
    with anyio.fail_after(PATIENCE_SECONDS * 2):
        async with Client(
            target,
            elicitation_callback=recorder.elicit,
            sampling_callback=recorder.sample,
            list_roots_callback=recorder.roots,
        ) as client:
            assert client.protocol_version == MODERN
            name = await client.call_tool("ask_name_mrtr")
            model = await client.call_tool("ask_model_mrtr")
            roots = await client.call_tool("list_my_roots_mrtr")
    assert name.content[0] == TextContent(text="Hello, Grace.")
    assert isinstance(model.content[0], TextContent)
    assert model.content[0].text == "hi"
    assert roots.structured_content == {"result": ["file:///home/grace"]}
    assert recorder.calls == ["elicit", "sample", "roots"]
