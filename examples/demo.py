"""``make demo``: every example, run for real, with both ends of the conversation shown.

Each section connects to an example server (over stdio, the server running as a
subprocess, and in-process where that is natural) using the example's own client
callbacks, wrapped so that every question the server asks and every answer the client
gives is printed as it crosses the connection:

    server → client   a request the server sent while a tool was running
    client → server   what the client's callback answered
    result            what the tool call finally returned to the client
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, cast

import anyio
import client_features
import library_client
import library_server
import sampling_and_roots

from answerback import Client, MCPError, StdioServer
from answerback.client import ClientRequestContext
from answerback.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
    InputRequiredResult,
    ListRootsResult,
    TextContent,
)

HERE = Path(__file__).resolve().parent


def heading(title: str) -> None:
    print()
    print(f"== {title} ==")


def show(label: str, text: str) -> None:
    print(f"  {label:<16} {text}")


def text_of(content: object) -> str:
    blocks = cast("list[object]", content) if isinstance(content, list) else [content]
    return " ".join(b.text if isinstance(b, TextContent) else repr(b) for b in blocks)


# -- the examples' callbacks, wrapped to print what crosses the connection ------------------


async def traced_elicitation(
    context: ClientRequestContext, params: ElicitRequestParams
) -> ElicitResult | ErrorData:
    show("server → client:", f"elicitation/create {params.message!r} ({params.mode} mode)")
    if params.mode == "form":
        show("", f"requested schema: {params.requested_schema}")
    answer = await library_client.handle_elicitation(context, params)
    show("client → server:", f"{answer.action} {answer.content}")
    return answer


async def traced_sampling(
    context: ClientRequestContext, params: CreateMessageRequestParams
) -> CreateMessageResult | ErrorData:
    asked = " / ".join(f"{m.role}: {text_of(m.content)!r}" for m in params.messages)
    show("server → client:", f"sampling/createMessage {asked} (max_tokens={params.max_tokens})")
    answer = await sampling_and_roots.handle_sampling(context, params)
    show("client → server:", f"{answer.role}: {text_of(answer.content)!r} (model {answer.model})")
    return answer


async def traced_list_roots(context: ClientRequestContext) -> ListRootsResult | ErrorData:
    show("server → client:", "roots/list")
    answer = await sampling_and_roots.handle_list_roots(context)
    show("client → server:", ", ".join(f"{root.name}={root.uri}" for root in answer.roots))
    return answer


def stdio(script: str, *args: str) -> StdioServer:
    return StdioServer(sys.executable, [str(HERE / script), *args])


# -- the sections ---------------------------------------------------------------------------


async def library(target: Any, how: str) -> None:
    heading(f"Library server ({how}): a tool that asks for a name")
    async with Client(target, mode="legacy", elicitation_callback=traced_elicitation) as client:
        show("client → server:", "tools/call issue_card")
        result = await client.call_tool("issue_card")
        show("result:", repr(result.content))


async def library_modern(target: Any, how: str) -> None:
    heading(f"Library server ({how}), 2026-07-28: the same callback, no server→client request")
    async with Client(target, mode="2026-07-28", elicitation_callback=traced_elicitation) as client:
        show("client → server:", "tools/call issue_card")
        first = await client.call_tool_round("issue_card")
        if isinstance(first, InputRequiredResult):
            keys = ", ".join(first.input_requests or {})
            show("server → client:", f"InputRequiredResult (input requests: {keys}; sealed state)")
            answers = await client.answer_input_requests(first)
            show("client → server:", "tools/call issue_card again, with the answers and state")
            result = await client.call_tool_round(
                "issue_card", input_responses=answers, request_state=first.request_state
            )
        else:
            result = first
        if isinstance(result, InputRequiredResult):
            raise RuntimeError("issue_card asked again after its questions were answered")
        show("result:", repr(result.content))


async def library_without_callback() -> None:
    heading("Library server (stdio), client without an elicitation callback")
    async with Client(stdio("library_server.py"), mode="legacy") as client:
        show("client → server:", "tools/call issue_card")
        try:
            await client.call_tool("issue_card")
        except MCPError as exc:
            show("result:", f"MCPError: {exc} (code {exc.code})")


async def features() -> None:
    heading("client_features (stdio): the callbacks are the capability declaration")
    cases: list[tuple[str, dict[str, Any]]] = [
        ("elicitation_callback only", {"elicitation_callback": traced_elicitation}),
        (
            "all three callbacks",
            {
                "elicitation_callback": traced_elicitation,
                "sampling_callback": traced_sampling,
                "list_roots_callback": traced_list_roots,
            },
        ),
        ("no callbacks", {}),
    ]
    for label, callbacks in cases:
        async with Client(stdio("library_server.py"), mode="legacy", **callbacks) as client:
            declared = client.session.capabilities.model_dump(by_alias=True, exclude_none=True)
            show("client declares:", f"{declared}  ({label})")
            result = await client.call_tool("client_features")
            show("result:", f"structured_content == {result.structured_content}")


async def sampling_roots(target: Any, how: str) -> None:
    heading(f"Sampling and roots ({how}): the server borrows the model and asks for folders")
    async with Client(
        target,
        mode="legacy",
        sampling_callback=traced_sampling,
        list_roots_callback=traced_list_roots,
    ) as client:
        show("client → server:", "tools/call ask_the_model")
        asked = await client.call_tool("ask_the_model", {"question": "What is six times seven?"})
        show("result:", text_of(asked.content))
        show("client → server:", "tools/call workspace")
        roots = await client.call_tool("workspace")
        show("result:", f"structured_content == {roots.structured_content}")


async def main() -> None:
    print("answerback demo: the server asks, the client answers back.")
    await library(stdio("library_server.py"), "stdio")
    await library(library_server.mcp, "in-process")
    await library_modern(stdio("library_server.py"), "stdio")
    await library_without_callback()
    await features()
    await sampling_roots(stdio("sampling_and_roots.py", "--serve"), "stdio")
    await sampling_roots(sampling_and_roots.mcp, "in-process")
    print()
    print(f"The examples themselves are in {HERE.name}/; each runs on its own, e.g.")
    for module in (library_client, client_features, sampling_and_roots):
        print(f"  python {HERE.name}/{Path(module.__file__ or '').name}")


if __name__ == "__main__":
    anyio.run(main)
