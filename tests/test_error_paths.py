"""Misuse gets a clear error that says what to do, on both sides of the connection."""

from __future__ import annotations

import datetime
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
import httpx2
import pytest
from http_support import serve
from pydantic import BaseModel
from support import LIBRARY_SERVER, PATIENCE_SECONDS, RawPeer, peer_pair, server_object

from answerback import Client, MCPError, StdioServer
from answerback.server import Context, FormSchemaError, MCPServer, form_schema
from answerback.types import (
    CompletionArgument,
    InputRequiredResult,
    InvalidParamsError,
    PromptReference,
    ResourceNotFoundError,
    ResourceTemplateReference,
    SamplingCapability,
    TextContent,
    TextResourceContents,
)

pytestmark = pytest.mark.anyio


def handing_back_server() -> MCPServer:
    mcp = MCPServer("Hands back")

    @mcp.tool()
    def by_hand() -> InputRequiredResult:
        """Return a multi-round-trip result by hand (2026-07-28 only)."""
        return InputRequiredResult(request_state="mine")

    @mcp.resource("notes://{name}")
    def note(name: str) -> str:
        return f"note {name}"

    @mcp.tool()
    def first() -> str:
        """One of three tools, for paging."""
        return "1"

    return mcp


def test_an_unknown_mode_names_the_choices() -> None:
    with pytest.raises(ValueError, match=r"Unknown mode 'modern'.*'auto', 'legacy'"):
        Client(MCPServer("x"), mode="modern")


def test_sampling_capabilities_need_a_sampler() -> None:
    with pytest.raises(ValueError, match="needs a sampling_callback"):
        Client(MCPServer("x"), sampling_capabilities=SamplingCapability())


def test_a_target_that_is_not_a_url_says_how_to_start_a_program() -> None:
    with pytest.raises(ValueError, match="StdioServer"):
        Client("python server.py")


def test_a_model_a_form_cannot_render_is_refused_naming_the_field() -> None:
    class Address(BaseModel):
        street: str

    class Person(BaseModel):
        name: str
        home: Address

    with pytest.raises(FormSchemaError, match=r"^Person .*: home: is a nested model"):
        form_schema(Person)


def test_a_template_whose_placeholders_are_not_the_parameters_is_refused() -> None:
    mcp = MCPServer("x")
    with pytest.raises(TypeError, match="must be exactly the function's parameters"):

        @mcp.resource("notes://{name}")
        def note(title: str) -> str:
            return title


async def test_rounds_by_hand_need_a_modern_connection() -> None:
    async with Client(handing_back_server(), mode="legacy") as client:
        with pytest.raises(RuntimeError, match="use call_tool"):
            await client.call_tool_round("first")


async def test_a_hand_made_input_required_result_cannot_reach_a_legacy_client() -> None:
    async with Client(handing_back_server(), mode="legacy") as client:
        with pytest.raises(MCPError, match=r"Ask with ctx\.elicit"):
            await client.call_tool("by_hand")


async def test_input_responses_that_are_not_an_object_are_refused() -> None:
    async with Client(handing_back_server(), mode="2026-07-28") as client:
        with pytest.raises(MCPError) as caught:
            await client.session.request_raw(
                "tools/call", {"name": "by_hand", "inputResponses": None}
            )
    assert caught.value.code == -32602
    assert "inputResponses must be an object" in caught.value.message


async def test_a_malformed_meta_is_refused_in_either_era() -> None:
    """``_meta`` is checked by hand with the params (the model would validate the
    2026-07-28 declaration a second time): a value that is not an object, or a progress
    token that is neither a string nor an integer, is refused saying which; the
    connection goes on serving."""
    not_an_object = "_meta must be an object"
    not_a_token = "progressToken must be a string or an integer"
    refused: list[tuple[object, str]] = [
        (5, not_an_object),
        ("later", not_an_object),
        ({"progressToken": 1.5}, not_a_token),
        ({"progressToken": True}, not_a_token),
    ]
    with anyio.fail_after(PATIENCE_SECONDS):
        async with raw_connection("memory") as peer:
            await peer.send(initialize(1, "2025-11-25"))
            await peer.receive()
            await peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            for request_id, (meta, message) in enumerate(refused, start=2):
                params = {"name": "client_features", "_meta": meta}
                await peer.send(
                    {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
                )
                answer = await peer.receive()
                assert answer["id"] == request_id
                assert answer["error"]["code"] == -32602
                assert message in answer["error"]["message"]
            listing = {"jsonrpc": "2.0", "id": 9, "method": "tools/list"}
            await peer.send({**listing, "params": {"_meta": {"progressToken": "p"}}})
            assert "tools" in (await peer.receive())["result"]
    async with Client(handing_back_server(), mode="2026-07-28") as client:
        with pytest.raises(MCPError) as caught:
            await client.session.request_raw(
                "tools/call", {"name": "first", "_meta": {"progressToken": 1.5}}
            )
        assert caught.value.code == -32602
        assert not_a_token in caught.value.message
        result = await client.session.request_raw(
            "tools/call", {"name": "first", "_meta": {"progressToken": "p"}}
        )
        assert result["content"] == [{"type": "text", "text": "1"}]


@pytest.mark.parametrize(("mode", "code"), [("legacy", -32002), ("2026-07-28", -32602)])
async def test_a_missing_resource_gets_its_generations_code(mode: str, code: int) -> None:
    async with Client(handing_back_server(), mode=mode) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource("elsewhere://nothing")
    assert caught.value.code == code
    assert caught.value.data == {"uri": "elsewhere://nothing"}


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("legacy", ResourceNotFoundError), ("2026-07-28", InvalidParamsError)],
)
@pytest.mark.parametrize("raised_by", ["resource", "tool", "prompt"])
async def test_a_function_says_a_record_is_not_there(
    mode: str, expected: type[MCPError], raised_by: str
) -> None:
    """``ResourceNotFoundError`` from a resource, tool or prompt function goes out as
    the server's own "not found" of the client's generation, not as an internal error,
    and a legacy client raises it back as that class."""
    mcp = MCPServer("Library")

    def look_up(book_id: str) -> str:
        if book_id != "emma":
            raise ResourceNotFoundError(f"books://{book_id}")
        return "Emma"

    mcp.resource("books://{book_id}")(look_up)
    mcp.tool()(look_up)
    mcp.prompt()(look_up)

    async with Client(mcp, mode=mode) as client:

        async def ask(book_id: str) -> object:
            if raised_by == "resource":
                return await client.read_resource(f"books://{book_id}")
            if raised_by == "tool":
                return await client.call_tool("look_up", {"book_id": book_id})
            return await client.get_prompt("look_up", {"book_id": book_id})

        with pytest.raises(MCPError) as caught:
            await ask("nope")
        await ask("emma")  # the connection goes on
    assert type(caught.value) is expected
    assert caught.value.code == (-32002 if mode == "legacy" else -32602)
    assert caught.value.message == "Resource not found: books://nope"
    assert caught.value.data == {"uri": "books://nope"}
    if isinstance(caught.value, ResourceNotFoundError):
        assert caught.value.uri == "books://nope"


async def test_a_2026_declaration_of_the_wrong_shape_is_invalid_params() -> None:
    """The capabilities and client info a 2026-07-28 request declares in ``_meta`` are
    the client's params: the wrong shape is -32602 naming the field."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": "yes, please"},
    }
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}
    with anyio.fail_after(PATIENCE_SECONDS):
        async with raw_connection("memory") as peer:
            await peer.send(request)
            answer = await peer.receive()
    assert answer["error"] == {
        "code": -32602,
        "message": "Invalid params: elicitation: Input should be a valid dictionary or "
        "instance of ElicitationCapability",
    }


class _Count(BaseModel):
    count: int


def misbuilding_server() -> MCPServer:
    """Handlers whose own code fails pydantic validation (a server bug), and a template
    whose parameter a URI can give a value of the wrong type (the client's mistake)."""
    mcp = MCPServer("Misbuilds")

    @mcp.prompt()
    def tally() -> str:
        return f"{_Count.model_validate({'count': 'many'}).count} items"

    @mcp.resource("tally://total")
    def total() -> str:
        return str(_Count.model_validate({}).count)

    @mcp.resource("shelf://{number}")
    def shelf(number: int) -> str:
        return f"shelf {number}"

    @mcp.completion()
    async def complete(ref: Any, argument: Any, context: Any) -> list[str]:
        return [str(_Count.model_validate({"count": None}).count)]

    return mcp


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_validation_error_in_the_servers_own_code_is_an_internal_error(
    mode: str,
) -> None:
    """Not -32602 "Invalid params", which blamed the client for the server's bug (and
    left nothing in the server's log): an internal error naming it, logged there."""
    async with Client(misbuilding_server(), mode=mode) as client:
        for attempt in (
            lambda: client.get_prompt("tally"),
            lambda: client.read_resource("tally://total"),
            lambda: client.complete(
                ResourceTemplateReference(uri="shelf://{number}"),
                CompletionArgument(name="number", value=""),
            ),
        ):
            with pytest.raises(MCPError) as caught:
                await attempt()
            assert caught.value.code == -32603
            assert caught.value.message.startswith(
                "Internal error: ValidationError: 1 validation error for _Count"
            )
        [shelf] = (await client.read_resource("shelf://3")).contents
        assert shelf == TextResourceContents(
            uri="shelf://3", mime_type="text/plain", text="shelf 3"
        )


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_tool_returning_what_its_annotation_does_not_allow_fails_saying_so(
    mode: str,
) -> None:
    """Its annotation is its ``outputSchema``: pydantic dumped the wrong value with only
    a warning, so the client got structured content breaking the tool's own schema."""
    mcp = MCPServer("Counts")

    @mcp.tool()
    def count() -> int:
        return cast(Any, "many")

    @mcp.tool()
    def count_as_text() -> int:
        return cast(Any, "12")

    async with Client(mcp, mode=mode) as client:
        refused = await client.call_tool("count")
        coerced = await client.call_tool("count_as_text")
    assert refused.is_error
    assert refused.content == [
        TextContent(
            text="Tool 'count' returned a value that does not fit its return annotation "
            "(value: Input should be a valid integer, unable to parse string as an "
            "integer): return what the annotation says, or change the annotation."
        )
    ]
    assert refused.structured_content is None
    assert coerced.structured_content == {"result": 12}


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_completion_handler_returning_something_else_is_named(mode: str) -> None:
    mcp = MCPServer("Completes")

    @mcp.prompt()
    def greet(name: str) -> str:
        return f"Hello, {name}"

    @mcp.completion()
    async def complete(ref: Any, argument: Any, context: Any) -> list[str]:
        return cast(Any, 42)

    async with Client(mcp, mode=mode) as client:
        with pytest.raises(MCPError) as caught:
            await client.complete(
                PromptReference(name="greet"), CompletionArgument(name="name", value="")
            )
    assert caught.value.code == -32603
    assert caught.value.message == (
        "Internal error: TypeError: the completion handler returned int; return a list of "
        "strings, a Completion, or None"
    )


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_template_value_of_the_wrong_type_is_invalid_params(mode: str) -> None:
    async with Client(misbuilding_server(), mode=mode) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource("shelf://third")
    assert caught.value.code == -32602
    assert caught.value.message == (
        "Invalid params: 'shelf://third' gives the template's 'number' the value 'third': "
        "Input should be a valid integer, unable to parse string as an integer."
    )


async def test_an_unknown_cursor_is_refused() -> None:
    async with Client(handing_back_server()) as client:
        with pytest.raises(MCPError, match="without a cursor to list from the start"):
            await client.list_tools(cursor="not-a-cursor")


async def test_a_context_outside_2026_has_no_request_state() -> None:
    seen: list[Any] = []
    mcp = MCPServer("x")

    @mcp.tool()
    def peek(ctx: Context) -> str:
        """Look at the hand-made state helpers on a legacy connection."""
        seen.append(ctx.open_state())
        try:
            ctx.seal_state({})
        except RuntimeError as exc:
            seen.append(str(exc))
        return "ok"

    async with Client(mcp, mode="legacy") as client:
        await client.call_tool("peek")
    assert seen == [None, "request state exists only on 2026-07-28 requests"]


async def test_tool_arguments_of_the_wrong_type_are_refused_before_sending() -> None:
    async with Client(handing_back_server()) as client:
        with pytest.raises(TypeError, match="dict of argument names to values, not list"):
            await client.call_tool("first", cast(Any, ["not", "a", "dict"]))
        with pytest.raises(TypeError, match="tool name must be a string, not int"):
            await client.call_tool(cast(Any, 1))
        assert client.session.endpoint.pending_count == 0


async def test_rich_arguments_reach_an_in_process_server_as_json_values() -> None:
    """In-process, the server sees what it would see over stdio or HTTP."""
    seen: list[Any] = []
    mcp = MCPServer("x")

    @mcp.tool()
    def record(when: str, who: dict[str, Any]) -> str:
        """Keep the arguments exactly as they arrived."""
        seen.append((when, who))
        return "ok"

    class Who(BaseModel):
        name: str

    async with Client(mcp) as client:
        when = datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.UTC)
        result = await client.call_tool("record", {"when": when, "who": Who(name="Ada")})
    assert not result.is_error
    assert seen == [("2026-11-30T12:00:00Z", {"name": "Ada"})]


# -- one handshake per connection ---------------------------------------------------------


def initialize(request_id: int, version: str) -> dict[str, Any]:
    params = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    }
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}


def output_schema_of(listing: dict[str, Any], name: str) -> Any:
    return next(t for t in listing["result"]["tools"] if t["name"] == name).get("outputSchema")


@asynccontextmanager
async def raw_connection(transport: str) -> AsyncGenerator[RawPeer, None]:
    """A hand-driven client connected to the Library server in-process or over stdio."""
    if transport == "stdio":
        async with StdioServer(sys.executable, [str(LIBRARY_SERVER)]).connect() as streams:
            try:
                yield RawPeer(*streams)
            finally:
                for stream in streams:
                    stream.close()
        return
    with peer_pair() as (server_side, peer):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server_object(LIBRARY_SERVER).serve_connection, *server_side)
            yield peer
            peer.write_stream.close()


async def test_a_call_before_initialize_is_refused_and_one_sent_with_it_is_answered() -> None:
    """A call that comes first is refused, saying what to send. One sent right behind
    ``initialize``, without waiting for its answer (a file of requests fed to a server),
    is answered: both are handled at once, and trio starts them in any order, so the
    call once began before ``initialize`` had and was refused (about half the time)."""
    call: dict[str, Any] = {"name": "client_features", "arguments": {}}
    with anyio.fail_after(PATIENCE_SECONDS):
        async with raw_connection("memory") as peer:
            await peer.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call})
            refused = await peer.receive()
            assert refused["error"]["code"] == -32600
            assert "before initialization: send 'initialize' first" in refused["error"]["message"]
        for _ in range(20):  # each a new connection, initialized once
            async with raw_connection("memory") as peer:
                await peer.send(initialize(1, "2025-11-25"))
                await peer.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
                answers = {m["id"]: m for m in [await peer.receive(), await peer.receive()]}
                assert "result" in answers[1], answers[1]
                assert answers[2]["result"]["isError"] is False, answers[2]


@pytest.mark.parametrize("transport", ["memory", "stdio"])
async def test_a_second_initialize_is_refused_and_changes_nothing(transport: str) -> None:
    """Renegotiating mid-connection is refused; the first handshake's version holds
    (2025-11-25 lists output schemas, the 2025-03-26 asked for the second time would not)."""
    with anyio.fail_after(PATIENCE_SECONDS):
        async with raw_connection(transport) as peer:
            await peer.send(initialize(1, "2025-11-25"))
            first = await peer.receive()
            await peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            await peer.send(initialize(2, "2025-03-26"))
            again = await peer.receive()
            await peer.send({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
            listing = await peer.receive()
    assert first["result"]["protocolVersion"] == "2025-11-25"
    assert again["id"] == 2
    assert again["error"]["code"] == -32600
    assert again["error"]["message"].startswith("Invalid request: already initialized.")
    assert output_schema_of(listing, "client_features") is not None


async def test_a_second_initialize_in_an_http_session_is_refused() -> None:
    headers = {"accept": "application/json", "content-type": "application/json"}
    library = server_object(LIBRARY_SERVER)
    async with serve(library.http_app()) as running, httpx2.AsyncClient() as http:
        opened = await http.post(running.url, json=initialize(1, "2025-11-25"), headers=headers)
        session = {
            **headers,
            "mcp-session-id": opened.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-11-25",
        }
        done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await http.post(running.url, json=done, headers=session)
        again = await http.post(running.url, json=initialize(2, "2025-11-25"), headers=session)
        listing = await http.post(
            running.url, json={"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, headers=session
        )
    assert opened.json()["result"]["protocolVersion"] == "2025-11-25"
    assert again.json()["error"]["code"] == -32600
    assert "already initialized" in again.json()["error"]["message"]
    assert output_schema_of(listing.json(), "client_features") is not None


# -- a client's malformed answer to the server's question --------------------------------


@pytest.mark.parametrize(
    ("tool", "answer", "words"),
    [
        ("ask_name", {"action": "bogus"}, ["ElicitResult", "action", "'bogus'"]),
        ("count_roots", {"roots": "x"}, ["ListRootsResult", "roots", "'x'"]),
        ("count_roots", {"roots": [{"uri": 5}] * 5}, ["roots.0.uri", "and 2 more"]),
    ],
)
async def test_a_malformed_answer_reaches_the_tool_as_an_error_naming_the_problems(
    tool: str, answer: dict[str, Any], words: list[str]
) -> None:
    """It reached the tool as pydantic's raw report, with a traceback in the log."""
    mcp = MCPServer("Asks")
    seen: list[MCPError] = []

    class Name(BaseModel):
        name: str

    @mcp.tool()
    async def ask_name(ctx: Context) -> str:
        try:
            await ctx.elicit("Your name?", schema=Name)
        except MCPError as exc:
            seen.append(exc)
        return "asked"

    @mcp.tool()
    async def count_roots(ctx: Context) -> str:
        try:
            await ctx.roots()
        except MCPError as exc:
            seen.append(exc)
        return "counted"

    with peer_pair() as (server_side, peer), anyio.fail_after(PATIENCE_SECONDS):
        async with anyio.create_task_group() as tg:
            tg.start_soon(mcp.serve_connection, *server_side)
            opening = initialize(1, "2025-11-25")
            opening["params"]["capabilities"] = {"elicitation": {}, "roots": {}}
            await peer.send(opening)
            await peer.receive()
            await peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            call: dict[str, Any] = {"name": tool, "arguments": {}}
            await peer.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
            question = await peer.receive_until(lambda message: "method" in message)
            await peer.send({"jsonrpc": "2.0", "id": question["id"], "result": answer})
            await peer.receive_until(lambda message: message.get("id") == 2)
            peer.write_stream.close()
    [error] = seen
    method = "elicitation/create" if tool == "ask_name" else "roots/list"
    assert error.code == -32602
    assert error.message.startswith(f"The client answered {method!r} with an invalid")
    assert all(word in error.message for word in words), error.message
    assert "report it to its authors" in error.message
    assert error.data["problems"]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
@pytest.mark.parametrize(
    ("ref", "argument", "message"),
    [
        (
            PromptReference(name="nope"),
            "name",
            "Unknown prompt 'nope'; call prompts/list to see the prompts available.",
        ),
        (
            ResourceTemplateReference(uri="nope://{x}"),
            "x",
            "Unknown resource template 'nope://{x}'; give a URI template as "
            "resources/templates/list lists it.",
        ),
        (
            ResourceTemplateReference(uri="shelf://1"),
            "number",
            "Unknown resource template 'shelf://1'; give a URI template as "
            "resources/templates/list lists it.",
        ),
        (
            PromptReference(name="greet"),
            "nickname",
            "Prompt 'greet' has no argument 'nickname'; its arguments are 'name'.",
        ),
        (
            ResourceTemplateReference(uri="shelf://{number}"),
            "row",
            "Resource template 'shelf://{number}' has no argument 'row'; its "
            "arguments are 'number'.",
        ),
    ],
    ids=[
        "unknown prompt",
        "unknown template",
        "a URI, not its template",
        "prompt argument",
        "template argument",
    ],
)
async def test_a_completion_for_what_the_server_does_not_have_is_invalid_params(
    mode: str, ref: PromptReference | ResourceTemplateReference, argument: str, message: str
) -> None:
    """The specification asks servers to validate completion inputs (-32602 for an
    unknown prompt); the handler would otherwise suggest values nothing can use."""
    mcp = MCPServer("Completes")
    asked: list[object] = []

    @mcp.prompt()
    def greet(name: str) -> str:
        return f"Hello, {name}"

    @mcp.resource("shelf://{number}")
    def shelf(number: int) -> str:
        return f"shelf {number}"

    @mcp.completion()
    async def complete(ref: Any, argument: Any, context: Any) -> list[str]:
        asked.append(ref)
        return ["alice"]

    async with Client(mcp, mode=mode) as client:
        with pytest.raises(MCPError) as caught:
            await client.complete(ref, CompletionArgument(name=argument, value=""))
        valid = await client.complete(
            PromptReference(name="greet"), CompletionArgument(name="name", value="")
        )
    assert (caught.value.code, caught.value.message) == (-32602, message)
    assert valid.values == ["alice"]
    assert asked == [PromptReference(name="greet")], "the handler was asked only the valid one"
