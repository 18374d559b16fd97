"""The client facing a server newer than it: what it does not know yet is kept or
refused, clearly, and the connection goes on.

A server written for a later revision (or careless, or with an extension) sends fields,
capabilities, content types, notifications and requests this answerback has never
heard of. Unknown fields are kept on every model; a content block of an unknown type is
kept as ``UnknownContent`` beside the blocks the client knows instead of failing the
whole result; an unknown notification is dropped and an unknown request refused with
-32601; a question the client cannot answer (an unknown elicitation mode, a form field
or sampling content it does not know) is refused naming what it did not know; and a
server that speaks only versions this answerback does not know fails the connection
saying so, instead of connecting and failing every request after.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from pydantic import ValidationError
from support import (
    PATIENCE_SECONDS,
    SERVERS,
    HandDrivenServer,
    RawPeer,
)
from test_client_robustness import hand_driven

from answerback import Client, MCPError, StdioServer
from answerback.client import ClientRequestContext, InvalidServerResultError
from answerback.jsonrpc import JSONObject
from answerback.types import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
    Annotations,
    BlobResourceContents,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    EmbeddedResource,
    Icon,
    ResourceContents,
    TextContent,
    TextResourceContents,
    ToolExecution,
    UnknownContent,
    UnsupportedProtocolVersionError,
)

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
ERAS = ["legacy", MODERN]
NEWER = "2099-01-01"
CARELESS_SERVER = SERVERS / "careless_server.py"
FUTURE_META: JSONObject = {"com.example/since": NEWER}
VIDEO: JSONObject = {"type": "video", "uri": "https://example.com/v.mp4", "durationMs": 1200}
TEXT: JSONObject = {"type": "text", "text": "Here it is.", "lang": "en"}
SERVER_INFO: JSONObject = {"name": "hand-driven", "version": "0"}


def discovered(versions: list[str], **extra: Any) -> JSONObject:
    """A ``server/discover`` result listing ``versions``."""
    return {
        "supportedVersions": versions,
        "capabilities": {"tools": {}},
        "_meta": {"io.modelcontextprotocol/serverInfo": SERVER_INFO},
        **extra,
    }


async def answered(
    mode: str, method: str, result: JSONObject, call: Callable[[Client], Awaitable[Any]]
) -> Any:
    """What ``call`` returns while the hand-driven server answers ``method`` with
    ``result`` (an error is raised as it is, not wrapped by the task group)."""
    failure: MCPError | None = None
    async with hand_driven(mode) as (client, peer):
        try:
            return await answered_on(client, peer, method, result, call)
        except MCPError as exc:
            failure = exc  # raised out here, not wrapped by the connection's task group
    raise failure


async def answered_on(
    client: Client,
    peer: RawPeer,
    method: str,
    result: JSONObject,
    call: Callable[[Client], Awaitable[Any]],
) -> Any:
    async def serve() -> None:
        request = await peer.receive_until(lambda message: message.get("method") == method)
        await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    failure: MCPError | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
        with anyio.fail_after(PATIENCE_SECONDS):
            try:
                return await call(client)
            except MCPError as exc:
                failure = exc
    assert failure is not None
    raise failure


# -- what a newer server adds to its results ---------------------------------------------


@pytest.mark.parametrize("mode", ERAS)
async def test_an_unknown_content_type_is_kept_beside_the_known_ones(mode: str) -> None:
    sent: JSONObject = {"content": [TEXT, VIDEO], "isError": False}
    result = await answered(mode, "tools/call", sent, lambda client: client.call_tool("watch"))
    text, video = result.content
    assert isinstance(text, TextContent)
    assert text.text == "Here it is."
    assert isinstance(video, UnknownContent)
    assert video.type == "video"
    assert video.model_extra == {"uri": "https://example.com/v.mp4", "durationMs": 1200}
    assert result.to_wire() == sent


@pytest.mark.parametrize("mode", ERAS)
async def test_a_prompt_message_of_an_unknown_content_type_is_kept(mode: str) -> None:
    sent: JSONObject = {
        "messages": [
            {"role": "user", "content": {"type": "text", "text": "Watch this:"}},
            {"role": "user", "content": VIDEO},
        ]
    }
    result = await answered(mode, "prompts/get", sent, lambda client: client.get_prompt("p"))
    assert isinstance(result.messages[0].content, TextContent)
    assert isinstance(result.messages[1].content, UnknownContent)
    assert result.to_wire() == sent


@pytest.mark.parametrize("mode", ERAS)
async def test_a_known_block_that_breaks_its_schema_still_fails(mode: str) -> None:
    """Only the type decides: a text block without text is the server's bug, as before,
    and a block without a type is named as such."""
    broken: JSONObject = {"content": [{"type": "text"}, {"text": "no type"}, VIDEO]}
    with pytest.raises(InvalidServerResultError) as caught:
        await answered(mode, "tools/call", broken, lambda client: client.call_tool("watch"))
    assert "content.0.text.text: Field required" in caught.value.message
    assert 'content.1: A content block needs a "type" string' in caught.value.message
    assert "content.2" not in caught.value.message


@pytest.mark.parametrize("mode", ERAS)
async def test_unknown_fields_are_kept_everywhere(mode: str) -> None:
    tools: JSONObject = {
        "tools": [
            {
                "name": "watch",
                "inputSchema": {"type": "object"},
                "rating": "G",
                "annotations": {"readOnlyHint": True, "sleepyHint": False},
                "_meta": FUTURE_META,
            }
        ],
        "_meta": FUTURE_META,
    }
    contents: JSONObject = {
        "contents": [
            {"uri": "file:///a.txt", "text": "a", "language": "en"},
            {"uri": "file:///b.bin", "blob": "AA==", "checksum": "x"},
        ],
        "expires": NEWER,
    }
    embedded: JSONObject = {
        "content": [
            {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "a", "v": 2}}
        ],
        "views": 3,
    }
    async with hand_driven(mode) as (client, peer):
        listed = await answered_on(client, peer, "tools/list", tools, lambda c: c.list_tools())
        read = await answered_on(
            client, peer, "resources/read", contents, lambda c: c.read_resource("file:///a.txt")
        )
        called = await answered_on(client, peer, "tools/call", embedded, lambda c: c.call_tool("t"))
    tool = listed.tools[0]
    assert tool.model_extra == {"rating": "G"}
    assert tool.meta == FUTURE_META
    assert tool.annotations is not None
    assert tool.annotations.model_extra == {"sleepyHint": False}
    assert listed.to_wire() == tools
    assert read.to_wire() == contents
    assert isinstance(read.contents[0], TextResourceContents)
    assert read.contents[0].model_extra == {"language": "en"}
    block = called.content[0]
    assert isinstance(block, EmbeddedResource)
    assert block.resource.model_extra == {"v": 2}
    assert called.model_extra == {"views": 3}


# -- values newer than today's lists, on hints --------------------------------------------

SEPIA_ICON: JSONObject = {"src": "https://example.com/i.png", "theme": "sepia"}
DARK_ICON: JSONObject = {"src": "https://example.com/d.png", "theme": "dark"}
ICONED_SERVER_INFO: JSONObject = {**SERVER_INFO, "icons": [SEPIA_ICON, DARK_ICON]}


@asynccontextmanager
async def introduced_as(mode: str, server_info: JSONObject) -> AsyncGenerator[Client, None]:
    """A client connected to a hand-driven server that introduces itself as
    ``server_info`` (in ``initialize``, or in the ``server/discover`` result's ``_meta``)."""
    if mode != "legacy":
        result = discovered([MODERN], _meta={"io.modelcontextprotocol/serverInfo": server_info})
        async with hand_driven(mode, result) as (client, _):
            yield client
        return
    transport = HandDrivenServer()
    peer = transport.peer

    async def handshake() -> None:
        request = await peer.receive()
        assert request["method"] == "initialize", request
        result = {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {},
            "serverInfo": server_info,
        }
        await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    with anyio.fail_after(PATIENCE_SECONDS):
        async with anyio.create_task_group() as tg:
            tg.start_soon(handshake)
            async with Client(transport, mode="legacy") as client:
                yield client


@pytest.mark.parametrize("mode", ERAS)
async def test_an_icon_theme_newer_than_light_and_dark_connects_and_is_kept(mode: str) -> None:
    async with introduced_as(mode, ICONED_SERVER_INFO) as client:
        info = client.server_info
    assert info.icons is not None
    sepia, dark = info.icons
    assert sepia.theme == "sepia"
    assert dark.theme == "dark"
    assert info.to_wire() == ICONED_SERVER_INFO
    # Loosened to "today's values or any other string": not to anything at all.
    with pytest.raises(ValidationError, match="theme"):
        Icon.model_validate({"src": "x", "theme": 1})
    with pytest.raises(ValidationError, match="audience"):
        Annotations.model_validate({"audience": [None]})
    with pytest.raises(ValidationError, match="taskSupport"):
        ToolExecution.model_validate({"taskSupport": True})


@pytest.mark.parametrize("mode", ERAS)
async def test_newer_hint_values_on_a_tool_and_its_content_are_kept(mode: str) -> None:
    """A tool's icon theme, and (in the era that has it) its task support, and the
    audience of a content block: a value newer than today's list is kept as it came
    instead of failing the whole listing or result, and known values stay as they are."""
    tool: JSONObject = {
        "name": "watch",
        "inputSchema": {"type": "object"},
        "icons": [SEPIA_ICON],
    }
    if mode == "legacy":
        tool["execution"] = {"taskSupport": "preferred"}
    tools: JSONObject = {"tools": [tool, {**tool, "name": "plain", "icons": [DARK_ICON]}]}
    annotated: JSONObject = {
        "content": [
            {**TEXT, "annotations": {"audience": ["user", "auditor"], "priority": 0.5}},
            {"type": "text", "text": "b", "annotations": {"audience": ["assistant"]}},
        ],
        "isError": False,
    }
    async with hand_driven(mode) as (client, peer):
        listed = await answered_on(client, peer, "tools/list", tools, lambda c: c.list_tools())
        called = await answered_on(
            client, peer, "tools/call", annotated, lambda c: c.call_tool("t")
        )
    watch, plain = listed.tools
    assert watch.icons is not None
    assert watch.icons[0].theme == "sepia"
    assert plain.icons is not None
    assert plain.icons[0].theme == "dark"
    if mode == "legacy":
        assert watch.execution is not None
        assert watch.execution.task_support == "preferred"
    assert listed.to_wire() == tools
    first, second = called.content
    assert isinstance(first, TextContent)
    assert first.annotations is not None
    assert first.annotations.audience == ["user", "auditor"]
    assert isinstance(second, TextContent)
    assert second.annotations is not None
    assert second.annotations.audience == ["assistant"]
    assert called.to_wire() == annotated


@pytest.mark.parametrize("mode", ERAS)
async def test_resource_contents_of_an_unknown_kind_are_kept(mode: str) -> None:
    """Contents with neither ``text`` nor ``blob`` (a newer server's kind) are kept as the
    common ``ResourceContents``, every field in place, beside the contents the client
    knows: in a read, and inside an embedded resource of a tool result."""
    stream: JSONObject = {"uri": "rtsp://example.com/cam", "mimeType": "video/mp4", "live": True}
    read_sent: JSONObject = {
        "contents": [{"uri": "file:///a.txt", "text": "a"}, stream, {"uri": "b", "blob": "AA=="}]
    }
    call_sent: JSONObject = {
        "content": [TEXT, {"type": "resource", "resource": stream, "annotations": {}}],
        "isError": False,
    }
    async with hand_driven(mode) as (client, peer):
        read = await answered_on(
            client, peer, "resources/read", read_sent, lambda c: c.read_resource("rtsp://x")
        )
        called = await answered_on(
            client, peer, "tools/call", call_sent, lambda c: c.call_tool("t")
        )
    text, unknown, blob = read.contents
    assert isinstance(text, TextResourceContents)
    assert isinstance(blob, BlobResourceContents)
    assert type(unknown) is ResourceContents
    assert (unknown.uri, unknown.mime_type) == ("rtsp://example.com/cam", "video/mp4")
    assert unknown.model_extra == {"live": True}
    assert read.to_wire() == read_sent
    embedded = called.content[1]
    assert isinstance(embedded, EmbeddedResource)
    assert type(embedded.resource) is ResourceContents
    assert embedded.resource.model_extra == {"live": True}
    assert called.to_wire() == call_sent


@pytest.mark.parametrize("mode", ERAS)
async def test_text_or_blob_contents_that_break_their_schema_still_fail(mode: str) -> None:
    """Only the field present decides: contents with a ``text`` that is no string are
    the server's bug, as before, not contents of an unknown kind."""
    broken: JSONObject = {"contents": [{"uri": "file:///a.txt", "text": 5}]}
    with pytest.raises(InvalidServerResultError) as caught:
        await answered(
            mode, "resources/read", broken, lambda client: client.read_resource("file:///a.txt")
        )
    assert "contents.0.text.text: Input should be a valid string" in caught.value.message


# -- a newer server over stdio -------------------------------------------------------------


async def test_a_newer_server_over_stdio_is_used_as_far_as_the_client_knows_it() -> None:
    """The ``newer`` careless server: extra fields and an unknown capability on its
    handshake, an unknown notification and request in the middle of a call, and an
    unknown content block in its result. The client keeps what it does not know,
    refuses the request with -32601, drops the notification, and goes on."""
    notified: list[object] = []

    async def message_handler(message: object) -> None:
        notified.append(message)

    newer = StdioServer(sys.executable, [str(CARELESS_SERVER), "newer"])
    with anyio.fail_after(PATIENCE_SECONDS):
        async with Client(newer, mode="legacy", message_handler=message_handler) as client:
            assert client.server_capabilities.model_extra == {"video": {}}
            assert client.server_capabilities.tools is not None
            assert client.server_capabilities.tools.model_extra == {"paged": True}
            assert client.server_info.model_extra == {"vendor": "Example"}
            (tool,) = await client.list_all_tools()
            assert tool.model_extra == {"rating": "G"}
            result = await client.call_tool("watch")
    text, video = result.content
    assert isinstance(text, TextContent)
    assert f'"code": {METHOD_NOT_FOUND}' in text.text
    assert "video/rate" in text.text
    assert isinstance(video, UnknownContent)
    assert video.to_wire() == VIDEO
    assert result.model_extra == {"views": 3}
    assert notified == []


@pytest.mark.parametrize("mode", ERAS)
async def test_an_unknown_notification_and_request_leave_the_client_working(mode: str) -> None:
    """Unknown notifications are dropped; in the handshake era, where the server may
    ask, an unknown request gets -32601 and the connection goes on."""
    async with hand_driven(mode) as (client, peer):
        await peer.send({"jsonrpc": "2.0", "method": "notifications/video/started"})
        if mode == "legacy":
            await peer.send({"jsonrpc": "2.0", "id": "f1", "method": "video/rate", "params": {}})
            refused = await peer.receive()
            assert refused["id"] == "f1"
            assert refused["error"]["code"] == METHOD_NOT_FOUND
            assert "video/rate" in refused["error"]["message"]
        result = await answered_on(
            client, peer, "tools/call", {"content": [TEXT]}, lambda c: c.call_tool("t")
        )
    assert result.content[0].type == "text"


# -- questions the client does not know how to ask --------------------------------------

ELICIT_VIDEO: JSONObject = {
    "method": "elicitation/create",
    "params": {"mode": "video", "message": "Watch this, then go on.", "uri": "https://x"},
}
ELICIT_FILE_FIELD: JSONObject = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Your photo?",
        "requestedSchema": {"type": "object", "properties": {"photo": {"type": "file"}}},
    },
}
SAMPLE_VIDEO: JSONObject = {
    "method": "sampling/createMessage",
    "params": {"maxTokens": 20, "messages": [{"role": "user", "content": VIDEO}]},
}


class Callbacks:
    """Callbacks that record being asked; nothing here should reach them."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def elicit(self, context: ClientRequestContext, params: ElicitRequestParams) -> Any:
        self.asked.append("elicit")
        return ElicitResult(action="decline")

    async def sample(
        self, context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult:
        self.asked.append("sample")
        return CreateMessageResult(role="assistant", content=TextContent(text="42"), model="m")

    def options(self) -> dict[str, Any]:
        return {"elicitation_callback": self.elicit, "sampling_callback": self.sample}


async def asked_in_legacy(question: JSONObject) -> JSONObject:
    """The error a legacy client answers ``question`` with; it then still works."""
    callbacks = Callbacks()
    async with hand_driven("legacy", **callbacks.options()) as (client, peer):
        await peer.send({"jsonrpc": "2.0", "id": "q1", **question})
        reply = await peer.receive()
        result = await answered_on(
            client, peer, "tools/call", {"content": [TEXT]}, lambda c: c.call_tool("t")
        )
    assert result.content[0].type == "text"
    assert callbacks.asked == []
    assert reply["id"] == "q1"
    error: JSONObject = reply["error"]
    return error


async def asked_in_modern(question: JSONObject) -> MCPError:
    """The error a 2026-07-28 call fails with when its round asks ``question``."""
    callbacks = Callbacks()
    needed: JSONObject = {"resultType": "input_required", "inputRequests": {"q": question}}
    async with hand_driven(MODERN, **callbacks.options()) as (client, peer):
        with pytest.raises(MCPError) as caught:
            await answered_on(client, peer, "tools/call", needed, lambda c: c.call_tool("t"))
        result = await answered_on(
            client, peer, "tools/call", {"content": [TEXT]}, lambda c: c.call_tool("t")
        )
    assert result.content[0].type == "text"
    assert callbacks.asked == []
    return caught.value


async def test_an_unknown_elicitation_mode_is_refused_naming_it() -> None:
    error = await asked_in_legacy(ELICIT_VIDEO)
    assert error["code"] == INVALID_PARAMS
    assert error["message"] == (
        "Elicitation mode 'video' not supported: this client knows only the 'form' and "
        "'url' modes. Ask only in a mode the client declared."
    )


async def test_an_unknown_elicitation_mode_in_a_round_fails_the_call_naming_it() -> None:
    failure = await asked_in_modern(ELICIT_VIDEO)
    assert isinstance(failure, InvalidServerResultError)
    assert (
        'inputRequests.q.elicitation/create.params: The elicitation "mode" must be "form" '
        'or "url"' in failure.message
    )
    assert "'mode': 'video'" in failure.message


async def test_a_form_field_of_an_unknown_type_is_refused_naming_it() -> None:
    error = await asked_in_legacy(ELICIT_FILE_FIELD)
    assert error["code"] == INVALID_PARAMS
    assert 'photo: has type "file"' in error["message"]
    failure = await asked_in_modern(ELICIT_FILE_FIELD)
    assert failure.code == INVALID_PARAMS
    assert 'photo: has type "file"' in failure.message


async def test_sampling_content_of_an_unknown_type_is_refused_naming_it() -> None:
    """A model cannot be given content nobody can read to it, so sampling stays strict."""
    error = await asked_in_legacy(SAMPLE_VIDEO)
    assert error["code"] == INVALID_PARAMS
    assert "Input tag 'video'" in error["message"]
    failure = await asked_in_modern(SAMPLE_VIDEO)
    assert isinstance(failure, InvalidServerResultError)
    assert "Input tag 'video'" in failure.message


# -- versions the client does not know ---------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_handshake_in_a_newer_version_fails_saying_the_server_is_newer(
    mode: str,
) -> None:
    transport = HandDrivenServer()
    peer = transport.peer

    async def serve() -> None:
        while True:
            request = await peer.receive()
            if request["method"] == "server/discover":
                error = {"code": METHOD_NOT_FOUND, "message": "Method not found"}
                await peer.send({"jsonrpc": "2.0", "id": request["id"], "error": error})
                continue
            assert request["method"] == "initialize", request
            result = {"protocolVersion": NEWER, "capabilities": {}, "serverInfo": SERVER_INFO}
            await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": result})
            return

    failure: MCPError | None = None
    with anyio.fail_after(PATIENCE_SECONDS):
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve)
            with pytest.raises(MCPError) as caught:
                async with Client(transport, mode=mode):
                    pass
            failure = caught.value
    assert failure is not None
    assert failure.message == (
        f"The server chose protocol version '{NEWER}', which answerback does not speak "
        "(2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05). The server is newer than this "
        "answerback (its versions are all later than 2026-07-28): upgrade answerback to "
        "talk to it."
    )


@pytest.mark.parametrize("mode", [MODERN, "auto"])
async def test_a_discovery_listing_only_newer_versions_fails_the_connection(mode: str) -> None:
    """The server answered ``server/discover`` yet lists no version this answerback
    speaks: the connection fails at once saying so, not at the first request with the
    server's bare refusal."""
    transport = HandDrivenServer()
    peer = transport.peer
    methods: list[str] = []

    async def serve() -> None:
        while True:
            try:
                request = await peer.receive()
            except anyio.ClosedResourceError:
                return  # the client gave up and closed the connection
            methods.append(request["method"])
            if request["method"] == "server/discover":
                result = discovered([NEWER])
                await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": result})
            else:
                error = {
                    "code": UNSUPPORTED_PROTOCOL_VERSION,
                    "message": "Unsupported protocol version",
                    "data": {"supported": [NEWER], "requested": MODERN},
                }
                await peer.send({"jsonrpc": "2.0", "id": request["id"], "error": error})

    failure: MCPError | None = None
    with anyio.fail_after(PATIENCE_SECONDS):
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve)
            with pytest.raises(UnsupportedProtocolVersionError) as caught:
                async with Client(transport, mode=mode) as client:
                    await client.list_tools()
            failure = caught.value
    assert failure is not None
    assert methods == ["server/discover"]
    assert failure.message.startswith(f"The server supports protocol versions ['{NEWER}']")
    assert "upgrade answerback" in failure.message
    assert failure.data == {"supported": [NEWER], "requested": MODERN}


async def test_a_discovery_listing_a_newer_and_a_legacy_version_falls_back_in_auto() -> None:
    """Probing, a server that lists a newer version and a handshake one is spoken to in
    the handshake era, as when it refuses the probe with those versions."""
    transport = HandDrivenServer()
    peer = transport.peer

    async def serve() -> None:
        request = await peer.receive()
        assert request["method"] == "server/discover", request
        result = discovered([NEWER, "2025-11-25"])
        await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": result})
        await peer.answer_initialize()

    with anyio.fail_after(PATIENCE_SECONDS):
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve)
            async with Client(transport, mode="auto") as client:
                assert client.protocol_version == "2025-11-25"


async def test_an_unknown_elicitation_mode_to_a_client_without_elicitation_is_the_refusal() -> None:
    """A client that declared no elicitation refuses every elicitation alike, whatever
    its mode: the words programs match on, not a complaint about the mode."""
    async with hand_driven("legacy") as (_, peer):
        await peer.send({"jsonrpc": "2.0", "id": "q1", **ELICIT_VIDEO})
        reply = await peer.receive()
    assert reply["error"]["code"] == METHOD_NOT_FOUND
    assert reply["error"]["message"] == "Elicitation not supported"
