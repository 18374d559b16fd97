"""A client built with FastMCP 4.2.3 (``fastmcp`` on PyPI), a real peer in tests.

It plays these scenarios at once against ``tests/interop/answerback_for_fastmcp.py``
(one stdio process each, started with the Python running this script) and prints one
JSON object of what each saw, by name:

- ``listen``: 2026-07-28; opens ``subscriptions/listen`` (with the ``mcp`` SDK's
  ``listen``, on FastMCP's session) for tool list changes, prompt list changes and two
  URIs, records what the server honoured, calls ``announce`` and records the events;
- ``elicit legacy``, ``elicit 2026-07-28``: answers the server's form with a name and
  records the tool's text;
- ``structured legacy``, ``structured 2026-07-28``: records the structured content and
  FastMCP's parsed data of a tool with an output schema;
- ``asks legacy``, ``asks 2026-07-28``: answers a URL-mode elicitation, a roots request
  and two sampling requests (the model calls the server's tool, then answers with its
  result), recording what each request carried and each tool's text.

Any failure prints one line to stderr and exits 1.

Usage:
    python fastmcp_client.py
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from fastmcp import Client
from fastmcp.client.elicitation import ElicitResult
from fastmcp.client.transports import StdioTransport
from mcp.client.subscriptions import listen
from mcp.types import (
    CreateMessageRequestParams,
    CreateMessageResultWithTools,
    ElicitRequestURLParams,
    SamplingCapability,
    SamplingMessage,
    SamplingToolsCapability,
    TextContent,
    ToolResultContent,
    ToolUseContent,
)

SERVER = Path(__file__).with_name("answerback_for_fastmcp.py")
LIMIT_SECONDS = 20.0


def transport() -> StdioTransport:
    # The whole environment, so the server imports the answerback under test.
    return StdioTransport(sys.executable, [str(SERVER)], env=dict(os.environ), keep_alive=False)


async def answer(message: str, response_type: Any, params: Any, context: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Grace Hopper"})


async def listening() -> dict[str, Any]:
    async with (
        Client(transport(), mode="2026-07-28") as client,
        listen(
            client.session,
            tools_list_changed=True,
            prompts_list_changed=True,
            resource_subscriptions=["notes://today", "notes://nowhere"],
        ) as subscription,
    ):
        honoured = subscription.honored.model_dump(by_alias=True, exclude_none=True)
        await client.call_tool("announce", {})
        events: list[str] = []
        async for event in subscription:
            fields = dataclasses.asdict(event)
            events.append(" ".join([type(event).__name__, *map(str, fields.values())]))
            if len(events) == 2:
                break
    return {"honoured": honoured, "events": events}


async def eliciting(mode: str) -> dict[str, Any]:
    async with Client(transport(), mode=mode, elicitation_handler=answer) as client:
        result = await client.call_tool("greet", {})
        texts = [item.text for item in result.content if isinstance(item, TextContent)]
        return {"version": client.protocol_version, "text": " ".join(texts)}


async def structured(mode: str) -> dict[str, Any]:
    async with Client(transport(), mode=mode) as client:
        result = await client.call_tool("forecast", {"city": "Oslo"})
        data = result.data
        return {
            "structured": result.structured_content,
            "data": [type(data).__name__, data.city, data.celsius, data.summary],
        }


def texts(content: Any) -> str:
    """The text items of a tool's content, joined: what the test compares."""
    return " ".join(item.text for item in content if isinstance(item, TextContent))


class Asked:
    """Answers the server's link, roots and sampling requests, recording each request."""

    def __init__(self) -> None:
        self.links: list[dict[str, Any]] = []
        self.sampled: list[dict[str, Any]] = []

    async def follow(self, message: str, response_type: Any, params: Any, context: Any) -> Any:
        assert isinstance(params, ElicitRequestURLParams), params
        self.links.append(params.model_dump(by_alias=True, exclude_none=True))
        return ElicitResult(action="accept")

    async def model(
        self, messages: list[SamplingMessage], params: CreateMessageRequestParams, context: Any
    ) -> Any:
        """A scripted model: calls ``weight_of`` first, then answers with what it got."""
        self.sampled.append(
            {
                "tools": [tool.name for tool in params.tools or []],
                "toolChoice": params.tool_choice.mode if params.tool_choice else None,
                "last": [item.type for item in messages[-1].content_as_list],
            }
        )
        (last,) = messages[-1].content_as_list
        if isinstance(last, ToolResultContent):
            return f"An apple weighs {texts(last.content)} g."
        return CreateMessageResultWithTools(
            role="assistant",
            model="scripted",
            content=[
                ToolUseContent(type="tool_use", name="weight_of", id="w1", input={"item": "apple"})
            ],
            stop_reason="toolUse",
        )


TOOLS_THAT_ASK = ("sign_in", "where", "weigh")


async def asking(mode: str) -> dict[str, Any]:
    asked = Asked()
    async with Client(
        transport(),
        mode=mode,
        elicitation_handler=asked.follow,
        roots=["file:///srv/project"],
        sampling_handler=asked.model,
        sampling_capabilities=SamplingCapability(tools=SamplingToolsCapability()),
    ) as client:
        told = {name: texts((await client.call_tool(name, {})).content) for name in TOOLS_THAT_ASK}
    return {"told": told, "links": asked.links, "sampled": asked.sampled}


async def run() -> dict[str, Any]:
    seen: dict[str, Any] = {}

    async def record(name: str, scenario: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        seen[name] = await scenario()

    with anyio.fail_after(LIMIT_SECONDS):
        async with anyio.create_task_group() as tg:
            tg.start_soon(record, "listen", listening)
            for mode in ("legacy", "2026-07-28"):
                tg.start_soon(record, f"elicit {mode}", functools.partial(eliciting, mode))
                tg.start_soon(record, f"structured {mode}", functools.partial(structured, mode))
                tg.start_soon(record, f"asks {mode}", functools.partial(asking, mode))
    return seen


def main() -> int:
    argparse.ArgumentParser(description="Play FastMCP's client against answerback.").parse_args()
    try:
        seen = anyio.run(run)
    except (Exception, BaseExceptionGroup) as exc:
        print(f"fastmcp_client: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(seen, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
