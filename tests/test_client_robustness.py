"""The client facing servers that misbehave, fall silent or change under it.

A result that breaks the schema is the server's bug and says whose; an
``InputRequiredResult`` with nothing to retry with, or too many questions, is refused; a
server that never answers the handshake fails the connection instead of hanging it; a
callback that fails fails the call the same way in both eras; and what the client
learned from the tool list is forgotten when the list changes.
"""

from __future__ import annotations

import re
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Annotated, Any

import anyio
import pydantic
import pytest
from http_support import serve
from pydantic import Field
from support import (
    LIBRARY_SERVER,
    PATIENCE_SECONDS,
    SERVERS,
    HandDrivenServer,
    RawPeer,
    client_with_hand_driven_server,
    target,
)

import answerback.client._pages
from answerback import Client, MCPError, StdioServer
from answerback.client import ClientRequestContext, InvalidServerResultError
from answerback.jsonrpc import JSONObject
from answerback.jsonrpc._endpoint import REQUESTS_IN_FLIGHT
from answerback.server import MCPServer
from answerback.types import (
    BUSY,
    INTERNAL_ERROR,
    REQUEST_TIMEOUT,
    ElicitRequestParams,
    ElicitResult,
    ListRootsResult,
    TextContent,
)

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
REDACTED = r"Internal error; the client logged the details under reference [0-9a-f]{8}\."
BROKEN_SERVER = SERVERS / "broken_server.py"
INVALID_TOOL_RESULT: JSONObject = {"content": [{"type": "text"}], "isError": "maybe"}
NAME_QUESTION: JSONObject = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Name?",
        "requestedSchema": {"type": "object", "properties": {}},
    },
}


@asynccontextmanager
async def hand_driven(
    mode: str, discover_result: JSONObject | None = None, **options: Any
) -> AsyncGenerator[tuple[Client, RawPeer], None]:
    """A connected client whose server ("hand-driven" 0) the test plays by hand; on
    2026-07-28 its ``server/discover`` answers ``discover_result`` if given."""
    if mode == "legacy":
        async with client_with_hand_driven_server(**options) as (client, peer, _):
            yield client, peer
        return
    transport = HandDrivenServer()

    async def discover() -> None:
        request = await transport.peer.receive()
        assert request["method"] == "server/discover", request
        result: JSONObject = discover_result or {
            "supportedVersions": [MODERN],
            "capabilities": {"tools": {}},
            "_meta": {
                "io.modelcontextprotocol/serverInfo": {"name": "hand-driven", "version": "0"}
            },
        }
        await transport.peer.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    async with anyio.create_task_group() as tg:
        tg.start_soon(discover)
        async with Client(transport, mode=MODERN, **options) as client:
            yield client, transport.peer


async def answer_next(peer: RawPeer, method: str, *results: JSONObject) -> None:
    """Answer the next requests for ``method``, one result each."""
    for result in results:
        request = await peer.receive_until(lambda message: message.get("method") == method)
        await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": result})


async def call_against(
    client: Client, peer: RawPeer, *results: JSONObject, by_round: bool = False
) -> Any:
    """Call a tool while the hand-driven server answers with ``results`` in turn (an
    error is raised as it is, not wrapped by the task group)."""
    failure: MCPError | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(answer_next, peer, "tools/call", *results)
        with anyio.fail_after(PATIENCE_SECONDS):
            try:
                if by_round:
                    return await client.call_tool_round("anything")
                return await client.call_tool("anything")
            except MCPError as exc:
                failure = exc
    assert failure is not None
    raise failure


# -- results that break the schema ----------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", MODERN])
async def test_an_invalid_tool_result_names_the_server_and_the_problems(mode: str) -> None:
    async with hand_driven(mode) as (client, peer):
        with pytest.raises(InvalidServerResultError) as caught:
            await call_against(client, peer, INVALID_TOOL_RESULT)
        good = await call_against(client, peer, {"content": []})
    error = caught.value
    assert not isinstance(error, pydantic.ValidationError)
    assert error.code == INTERNAL_ERROR
    assert error.message.startswith(
        "The server 'hand-driven' 0 sent an invalid CallToolResult for 'tools/call': "
    )
    assert "content.0.text.text: Field required" in error.message
    assert "isError: Input should be a valid boolean" in error.message
    assert error.data["server"] == {"name": "hand-driven", "version": "0"}
    assert error.data["method"] == "tools/call"
    assert good.content == []


async def test_an_invalid_result_over_stdio_names_the_program() -> None:
    broken = StdioServer(sys.executable, [str(BROKEN_SERVER)])
    with anyio.fail_after(PATIENCE_SECONDS):
        async with Client(broken, mode="legacy") as client:
            with pytest.raises(MCPError) as caught:
                await client.call_tool("anything")
    assert isinstance(caught.value, InvalidServerResultError)
    assert caught.value.message.startswith(
        "The server 'Broken' 6.6 sent an invalid CallToolResult for 'tools/call'"
    )


@pytest.mark.parametrize("mode", ["legacy", MODERN])
async def test_a_value_out_of_its_schema_range_is_an_invalid_result(mode: str) -> None:
    """The schema bounds ``priority`` to 0..1: a server sending 2 breaks it, and the call
    fails as for any other invalid result, naming the field and the bound."""
    out_of_range: JSONObject = {
        "content": [{"type": "text", "text": "hi", "annotations": {"priority": 2}}]
    }
    async with hand_driven(mode) as (client, peer):
        with pytest.raises(InvalidServerResultError) as caught:
            await call_against(client, peer, out_of_range)
        good = await call_against(client, peer, {"content": []})
    assert caught.value.message == (
        "The server 'hand-driven' 0 sent an invalid CallToolResult for 'tools/call': "
        "content.0.text.annotations.priority: Input should be less than or equal to 1 "
        "(got 2). The server breaks the MCP schema; report it to its authors."
    )
    assert good.content == []


async def test_a_negative_cache_lifetime_is_an_invalid_result() -> None:
    negative: JSONObject = {"tools": [], "ttlMs": -1}
    async with hand_driven(MODERN) as (client, peer):
        failure: MCPError | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(answer_next, peer, "tools/list", negative)
            with anyio.fail_after(PATIENCE_SECONDS):
                try:
                    await client.list_tools()
                except MCPError as exc:
                    failure = exc
    assert isinstance(failure, InvalidServerResultError)
    assert "invalid ListToolsResult for 'tools/list': ttlMs: Input should be greater" in (
        failure.message
    )


async def test_many_problems_are_summed_up() -> None:
    many: JSONObject = {"content": [{"type": "text"}] * 5}
    async with hand_driven("legacy") as (client, peer):
        with pytest.raises(InvalidServerResultError) as caught:
            await call_against(client, peer, many)
    assert caught.value.message.count("Field required") == 3
    assert "and 2 more" in caught.value.message
    assert len(caught.value.data["problems"]) == 5


# -- InputRequiredResults the client refuses -------------------------------------------


@pytest.mark.parametrize("by_round", [False, True], ids=["call_tool", "call_tool_round"])
async def test_a_round_with_nothing_to_retry_with_is_refused(by_round: bool) -> None:
    async with hand_driven(MODERN) as (client, peer):
        with pytest.raises(InvalidServerResultError) as caught:
            await call_against(client, peer, {"resultType": "input_required"}, by_round=by_round)
    assert caught.value.message.startswith(
        "The server 'hand-driven' 0 answered 'tools/call' with an InputRequiredResult "
        "holding neither inputRequests nor requestState"
    )


@pytest.mark.parametrize("by_round", [False, True], ids=["call_tool", "call_tool_round"])
async def test_a_round_with_too_many_questions_is_refused(by_round: bool) -> None:
    asked: list[object] = []

    async def answer(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        asked.append(context.request_id)
        return ElicitResult(action="decline")

    three: JSONObject = {
        "resultType": "input_required",
        "inputRequests": {f"q{i}": NAME_QUESTION for i in range(3)},
    }
    async with hand_driven(MODERN, elicitation_callback=answer, max_input_requests=2) as (
        client,
        peer,
    ):
        with pytest.raises(InvalidServerResultError) as caught:
            await call_against(client, peer, three, by_round=by_round)
    assert "asked 3 questions in one round of 'tools/call'" in caught.value.message
    assert "at most 2" in caught.value.message
    assert asked == []


async def test_a_round_of_questions_that_are_not_questions_is_refused() -> None:
    odd: JSONObject = {"resultType": "input_required", "inputRequests": {"q": {"method": "nope"}}}
    async with hand_driven(MODERN) as (client, peer):
        with pytest.raises(InvalidServerResultError, match="invalid InputRequiredResult"):
            await call_against(client, peer, odd)


async def test_questions_up_to_the_limit_are_answered() -> None:
    two: JSONObject = {
        "resultType": "input_required",
        "inputRequests": {f"q{i}": NAME_QUESTION for i in range(2)},
    }

    async def answer(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action="decline")

    async with hand_driven(MODERN, elicitation_callback=answer, max_input_requests=2) as (
        client,
        peer,
    ):
        result = await call_against(client, peer, two, {"content": []})
    assert result.content == []


# -- paging that does not end -------------------------------------------------------------


def listed_item(key: str, number: int) -> JSONObject:
    """The smallest valid item of the ``key`` list (``tools``, ``prompts``...)."""
    name = f"item {number}"
    if key == "tools":
        return {"name": name, "inputSchema": {"type": "object"}}
    if key == "resources":
        return {"name": name, "uri": f"note://{number}"}
    if key == "resourceTemplates":
        return {"name": name, "uriTemplate": f"note://{number}/{{x}}"}
    return {"name": name}


async def serve_pages(peer: RawPeer, method: str, key: str, cursors: list[str | None]) -> None:
    """Answer ``method`` once per cursor in ``cursors``, one item a page, each page
    pointing to the next cursor given (``None``: the last page)."""
    for number, cursor in enumerate(cursors):
        request = await peer.receive_until(lambda message: message.get("method") == method)
        result: JSONObject = {key: [listed_item(key, number)]}
        if cursor is not None:
            result["nextCursor"] = cursor
        await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": result})


async def listing_failure(
    method: str, key: str, lister: str, cursors: list[str | None]
) -> InvalidServerResultError:
    """How listing fails against pages that point to ``cursors`` in turn."""
    failure: InvalidServerResultError | None = None
    async with hand_driven("legacy") as (client, peer), anyio.create_task_group() as tg:
        tg.start_soon(serve_pages, peer, method, key, cursors)
        with anyio.fail_after(PATIENCE_SECONDS):
            try:
                await getattr(client, lister)()
            except InvalidServerResultError as exc:
                failure = exc
        tg.cancel_scope.cancel()
    assert failure is not None
    return failure


LISTINGS = [
    pytest.param("tools/list", "tools", "list_all_tools", id="tools"),
    pytest.param("prompts/list", "prompts", "list_all_prompts", id="prompts"),
    pytest.param("resources/list", "resources", "list_all_resources", id="resources"),
    pytest.param(
        "resources/templates/list",
        "resourceTemplates",
        "list_all_resource_templates",
        id="templates",
    ),
]


@pytest.mark.parametrize(("method", "key", "lister"), LISTINGS)
async def test_every_page_is_collected(method: str, key: str, lister: str) -> None:
    async with hand_driven("legacy") as (client, peer), anyio.create_task_group() as tg:
        tg.start_soon(serve_pages, peer, method, key, ["b", "c", None])
        with anyio.fail_after(PATIENCE_SECONDS):
            items = await getattr(client, lister)()
        assert [item.name for item in items] == ["item 0", "item 1", "item 2"]


@pytest.mark.parametrize(("method", "key", "lister"), LISTINGS)
async def test_a_cursor_sent_twice_ends_the_listing(method: str, key: str, lister: str) -> None:
    """A server that hands back a cursor it gave before would be listed for ever
    (a gigabyte in fifteen seconds with 200 tools a page)."""
    failure = await listing_failure(method, key, lister, ["b", "c", "b"])
    assert f"sent the {method!r} cursor 'b' a second time, after 2 pages" in failure.message
    assert "round in circles" in failure.message
    assert failure.data["method"] == method


async def test_a_listing_stops_after_its_page_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(answerback.client._pages, "MAX_PAGES", 3)
    failure = await listing_failure("tools/list", "tools", "list_all_tools", ["b", "c", "d"])
    assert "listed 'tools/list' past 3 pages (3 items)" in failure.message
    assert "fetch its pages yourself with list_tools(cursor=...)" in failure.message


async def serve_endless(peer: RawPeer, method: str, key: str, per_page: int, pad: int) -> None:
    """Answer every ``method`` with ``per_page`` fresh items, each with a description
    of ``pad`` characters, and a cursor to yet another page: a hostile listing."""
    page = 0
    while True:
        request = await peer.receive_until(lambda message: message.get("method") == method)
        items = [
            {**listed_item(key, page * per_page + i), "description": "x" * pad}
            for i in range(per_page)
        ]
        page += 1
        result: JSONObject = {key: items, "nextCursor": f"page {page}"}
        await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": result})


async def endless_listing_failure(
    method: str, key: str, lister: str, per_page: int, pad: int
) -> InvalidServerResultError:
    failure: InvalidServerResultError | None = None
    async with hand_driven("legacy") as (client, peer), anyio.create_task_group() as tg:
        tg.start_soon(serve_endless, peer, method, key, per_page, pad)
        with anyio.fail_after(PATIENCE_SECONDS):
            try:
                await getattr(client, lister)()
            except InvalidServerResultError as exc:
                failure = exc
        tg.cancel_scope.cancel()
    assert failure is not None
    return failure


ONE_PAGE = {
    "list_all_tools": "list_tools",
    "list_all_prompts": "list_prompts",
    "list_all_resources": "list_resources",
    "list_all_resource_templates": "list_resource_templates",
}


@pytest.mark.parametrize(("method", "key", "lister"), LISTINGS)
async def test_an_endless_listing_stops_at_its_item_bound(
    monkeypatch: pytest.MonkeyPatch, method: str, key: str, lister: str
) -> None:
    """A server whose pages never end grew the client by each page's items for a
    thousand pages; the listing now stops past ``MAX_ITEMS`` items, naming the server,
    the bound, and how to page by hand."""
    monkeypatch.setattr(answerback.client._pages, "MAX_ITEMS", 250)
    failure = await endless_listing_failure(method, key, lister, per_page=100, pad=0)
    assert failure.message.startswith("The server 'hand-driven' 0 listed")
    assert f"listed {method!r} past 250 items or" in failure.message
    assert "(300 items," in failure.message
    assert "in 3 pages)" in failure.message
    assert f"with {ONE_PAGE[lister]}(cursor=...)" in failure.message
    assert failure.data["method"] == method


async def test_a_listing_of_huge_items_stops_at_its_byte_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A few items of a megabyte each pass the item bound; the bytes stop them."""
    monkeypatch.setattr(answerback.client._pages, "MAX_BYTES", 10_000)
    failure = await endless_listing_failure(
        "tools/list", "tools", "list_all_tools", per_page=1, pad=4_000
    )
    assert "listed 'tools/list' past 10000 items or 10000 bytes (3 items," in failure.message


# -- a flooding server -------------------------------------------------------------------


async def test_a_server_asking_past_the_bound_is_refused_and_the_rest_are_answered() -> None:
    """A server that sends question after question while none is answered gets a
    refusal past the bound, not a task per question for as long as the connection lasts;
    the questions within it are all answered once the person does."""
    asked = 0
    person_ready = anyio.Event()

    async def person(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        nonlocal asked
        asked += 1
        await person_ready.wait()
        return ElicitResult(action="decline")

    flood = REQUESTS_IN_FLIGHT + 1
    # Questions for the person are bounded lower by default (max_input_requests):
    # raised here so the engine's own bound is the one met.
    options: dict[str, Any] = {"elicitation_callback": person, "max_input_requests": flood + 1}
    async with hand_driven("legacy", **options) as (_, peer):
        for n in range(flood):
            await peer.send({"jsonrpc": "2.0", "id": n, **NAME_QUESTION})
        refused = await peer.receive()
        assert refused["id"] == REQUESTS_IN_FLIGHT
        assert refused["error"]["code"] == BUSY
        assert f"{REQUESTS_IN_FLIGHT} of your requests" in refused["error"]["message"]
        person_ready.set()
        answers = [await peer.receive() for _ in range(REQUESTS_IN_FLIGHT)]
    assert sorted(answer["id"] for answer in answers) == list(range(REQUESTS_IN_FLIGHT))
    assert all(answer["result"]["action"] == "decline" for answer in answers)
    assert asked == REQUESTS_IN_FLIGHT


# -- a silent server ------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", MODERN, "auto"])
async def test_a_silent_server_fails_the_connection(mode: str) -> None:
    """Nothing answers: the setup request times out with what to do about it."""
    with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(MCPError) as caught:
        async with Client(HandDrivenServer(), mode=mode, connect_timeout_seconds=0.05):
            pass
    method = "server/discover" if mode == MODERN else "initialize"
    assert caught.value.code == REQUEST_TIMEOUT
    assert caught.value.message.startswith(f"The server did not answer {method!r} within 0.05 s")
    assert "Client(connect_timeout_seconds=...)" in caught.value.message


async def test_a_silent_program_fails_the_connection() -> None:
    silent = StdioServer(sys.executable, [str(BROKEN_SERVER), "--silent"])
    with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(MCPError) as caught:
        async with Client(silent, mode="legacy", connect_timeout_seconds=0.2):
            pass
    assert caught.value.code == REQUEST_TIMEOUT
    assert "did not answer 'initialize'" in caught.value.message


async def silent_http(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """An ASGI app that takes every request and never answers (until the client leaves)."""
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    while (await receive())["type"] != "http.disconnect":
        pass


@pytest.mark.parametrize("mode", ["legacy", MODERN])
async def test_a_silent_http_server_fails_the_connection(mode: str) -> None:
    async with serve(silent_http) as running:
        with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(MCPError) as caught:
            async with Client(running.url, mode=mode, connect_timeout_seconds=0.2):
                pass
    assert caught.value.code == REQUEST_TIMEOUT


def test_the_connect_timeout_has_a_default() -> None:
    assert Client(MCPServer("x")).connect_timeout_seconds == 30.0


# -- failing callbacks, both eras -------------------------------------------------------


async def crash(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    raise RuntimeError("the form renderer crashed")


async def sloppy(context: ClientRequestContext, params: ElicitRequestParams) -> Any:
    return {"action": "accept", "content": {"name": "Ada Lovelace"}}


@pytest.mark.parametrize("transport", ["memory", "stdio"])
@pytest.mark.parametrize(
    ("callback", "message"),
    [
        pytest.param(crash, "Internal error: RuntimeError: the form renderer crashed", id="raises"),
        pytest.param(
            sloppy,
            "Internal error: WrongAnswerType: elicitation_callback returned dict; it must return "
            "ElicitResult or ErrorData.",
            id="wrong-type",
        ),
    ],
)
@pytest.mark.parametrize("mode", ["legacy", MODERN])
async def test_a_failing_callback_fails_the_call_in_both_eras(
    transport: str, callback: Any, message: str, mode: str
) -> None:
    """An internal error in both eras, and the connection carries on. On 2026-07-28 it
    stays in this process and says what went wrong; in the handshake era it went to the
    server, which got only a reference to the client's log, unless the mistake is a wrong
    return type, which answerback names in words of its own (function and type names)."""
    with anyio.fail_after(PATIENCE_SECONDS):
        async with Client(
            target(transport, LIBRARY_SERVER), mode=mode, elicitation_callback=callback
        ) as client:
            with pytest.raises(MCPError) as caught:
                await client.call_tool("issue_card")
            features = await client.call_tool("client_features")
    assert caught.value.code == INTERNAL_ERROR
    if mode == MODERN or callback is sloppy:
        assert caught.value.message == message
    else:
        assert re.fullmatch(REDACTED, caught.value.message), caught.value.message
    assert features.structured_content == {"result": ["elicitation"]}


async def test_on_2026_the_callbacks_own_exception_is_kept_as_the_cause() -> None:
    """The callback ran in this process: its traceback is not lost."""
    async with Client(
        target("memory", LIBRARY_SERVER), mode=MODERN, elicitation_callback=crash
    ) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("issue_card")
    assert isinstance(caught.value.__cause__, RuntimeError)


# -- the tool list changes --------------------------------------------------------------


class CountingListings:
    """ASGI middleware counting the 2026-07-28 ``tools/list`` requests that reach ``app``."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.listings = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and (b"mcp-method", b"tools/list") in scope["headers"]:
            self.listings += 1
        await self.app(scope, receive, send)


def mirrored(name: str) -> Any:
    return Field(json_schema_extra={"x-mcp-header": name})


async def test_a_changed_tool_list_is_listed_again_for_its_headers() -> None:
    """Which arguments a tool mirrors into headers may change with the list; after
    ``tools/list_changed`` the client lists again instead of sending stale headers."""
    mcp = MCPServer("Regions")

    @mcp.tool()
    def where(region: Annotated[str, mirrored("Region")], city: str) -> str:
        """Mirrors the region."""
        return f"{city}, {region}"

    counting = CountingListings(mcp.http_app())
    async with serve(counting) as running, Client(running.url, mode=MODERN) as client:
        first = await client.call_tool("where", {"region": "eu", "city": "Paris"})
        async with client.listen(tools_list_changed=True) as notifications:
            mcp.remove_tool("where")

            @mcp.tool(name="where")
            def where_now(region: str, city: Annotated[str, mirrored("City")]) -> str:
                """Mirrors the city instead."""
                return f"{city} ({region})"

            await mcp.notify_tools_changed()
            with anyio.fail_after(PATIENCE_SECONDS):
                await notifications.receive()
        second = await client.call_tool("where", {"region": "eu", "city": "Paris"})
    assert first.content == [TextContent(text="Paris, eu")]
    assert second.content == [TextContent(text="Paris (eu)")]
    assert counting.listings == 2


async def test_an_unknown_tool_lists_the_tools_once_until_the_list_changes() -> None:
    mcp = MCPServer("Regions")

    @mcp.tool()
    def where(region: Annotated[str, mirrored("Region")]) -> str:
        """Mirrors the region."""
        return region

    counting = CountingListings(mcp.http_app())
    async with serve(counting) as running, Client(running.url, mode=MODERN) as client:
        for _ in range(3):
            with pytest.raises(MCPError, match="Unknown tool 'missing'"):
                await client.call_tool("missing")
        listed_while_unknown = counting.listings
        async with client.listen(tools_list_changed=True) as notifications:

            @mcp.tool()
            def missing() -> str:
                """Here now."""
                return "found"

            await mcp.notify_tools_changed()
            with anyio.fail_after(PATIENCE_SECONDS):
                await notifications.receive()
        found = await client.call_tool("missing")
    assert listed_while_unknown == 1
    assert counting.listings == 2
    assert found.content == [TextContent(text="found")]


async def test_a_listing_forgets_that_a_name_was_unknown() -> None:
    """A tool that appears without a notification is found by listing by hand."""
    mcp = MCPServer("Quiet")
    async with serve(mcp.http_app()) as running, Client(running.url, mode=MODERN) as client:
        with pytest.raises(MCPError, match="Unknown tool"):
            await client.call_tool("late")

        @mcp.tool()
        def late(region: Annotated[str, mirrored("Region")]) -> str:
            """Registered after the first listing."""
            return region

        assert [tool.name for tool in await client.list_all_tools()] == ["late"]
        result = await client.call_tool("late", {"region": "eu"})
    assert result.content == [TextContent(text="eu")]


async def test_roots_list_changed_is_not_sent_where_the_version_lacks_it() -> None:
    """2026-07-28 has no ``notifications/roots/list_changed``: announcing a change sends
    nothing, and the next message the server sees is the next request."""

    async def no_roots(context: ClientRequestContext) -> ListRootsResult:
        return ListRootsResult(roots=[])

    async with hand_driven(MODERN, list_roots_callback=no_roots) as (client, peer):
        await client.send_roots_list_changed()
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.ping)
            first = await peer.receive()
            assert first["method"] == "ping"
            await peer.send({"jsonrpc": "2.0", "id": first["id"], "result": {}})
