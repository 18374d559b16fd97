"""An MCP server built with FastMCP 4.2.3 (``fastmcp`` on PyPI), a real peer in tests.

answerback's client talks to it in ``tests/test_interop_fastmcp.py``: tools with output
schemas, tools that elicit with each of FastMCP's response types on a handshake-era
(legacy) connection, where ``ctx.elicit`` sends a real request, and a guard tool for
2026-07-28, where a tool asks by returning an ``InputRequiredResult`` and reads the
answers from ``ctx.input_responses`` when the client calls again (forms in one, a
model's answer, the roots and a URL-mode elicitation in another). FastMCP has no
``subscriptions/listen``; it refuses it.

Usage:
    python fastmcp_server.py              # stdio
    python fastmcp_server.py --http PORT  # streamable HTTP on http://127.0.0.1:PORT/mcp
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Literal

import mcp_types
from fastmcp import Context, FastMCP
from pydantic import BaseModel

mcp = FastMCP("fastmcp-peer")


class Reading(BaseModel):
    city: str
    celsius: int
    note: str | None = None


class Guest(BaseModel):
    name: str
    seats: int
    table: Literal["window", "garden"] = "window"


@mcp.tool
def reading(city: str) -> Reading:
    """One model: FastMCP lists its schema as the output schema."""
    return Reading(city=city, celsius=14)


@mcp.tool
def readings() -> list[Reading]:
    """A list, wrapped as ``{"result": [...]}``."""
    return [Reading(city="Oslo", celsius=14), Reading(city="Bergen", celsius=11, note="rain")]


@mcp.tool
def total(a: int, b: int) -> int:
    return a + b


def _told(answer: Any) -> str:
    """What the client answered, as text the test compares."""
    if answer.action != "accept":
        return answer.action
    data = answer.data
    return json.dumps(data.model_dump() if isinstance(data, BaseModel) else data)


@mcp.tool
async def ask_guest(ctx: Context) -> str:
    return _told(await ctx.elicit("Who is coming?", Guest))


@mcp.tool
async def ask_count(ctx: Context) -> str:
    return _told(await ctx.elicit("How many seats?", int))


@mcp.tool
async def ask_sure(ctx: Context) -> str:
    return _told(await ctx.elicit("Book it?", bool))


@mcp.tool
async def ask_table(ctx: Context) -> str:
    return _told(await ctx.elicit("Which table?", ["window", "garden"]))


@mcp.tool
async def ask_titled_table(ctx: Context) -> str:
    tables = {"w": {"title": "By the window"}, "g": {"title": "In the garden"}}
    return _told(await ctx.elicit("Which table?", tables))


@mcp.tool
async def ask_dishes(ctx: Context) -> str:
    """An untitled multi-select: FastMCP writes its items without ``"type"``."""
    return _told(await ctx.elicit("Which dishes?", [["soup", "fish", "cake"]]))


@mcp.tool
async def ask_titled_dishes(ctx: Context) -> str:
    dishes = {"s": {"title": "Soup"}, "f": {"title": "Fish"}}
    return _told(await ctx.elicit("Which dishes?", [dishes]))


@mcp.tool
async def book_table(ctx: Context) -> str | mcp_types.InputRequiredResult:
    """2026-07-28 guard: ask for a guest and dishes in one round, then book."""
    answers = ctx.input_responses
    if answers is None:
        dishes = {"type": "array", "items": {"enum": ["soup", "fish", "cake"]}}
        return mcp_types.InputRequiredResult(
            input_requests={
                "guest": mcp_types.ElicitRequest(
                    params=mcp_types.ElicitRequestFormParams(
                        message="Who is coming?", requested_schema=Guest.model_json_schema()
                    )
                ),
                "dishes": mcp_types.ElicitRequest(
                    params=mcp_types.ElicitRequestFormParams(
                        message="Which dishes?",
                        requested_schema={
                            "type": "object",
                            "properties": {"dishes": dishes},
                            "required": ["dishes"],
                        },
                    )
                ),
            },
            request_state="first-round",
        )
    told = {key: answer.model_dump(exclude_none=True) for key, answer in sorted(answers.items())}
    return json.dumps({"state": ctx.request_state, "answers": told}, sort_keys=True)


@mcp.tool
async def plan_trip(ctx: Context) -> str | mcp_types.InputRequiredResult:
    """2026-07-28 guard: ask for a model's answer, the roots and a visit to a link in
    one round, then report the answers."""
    answers = ctx.input_responses
    if answers is None:
        question = mcp_types.SamplingMessage(
            role="user", content=mcp_types.TextContent(type="text", text="Where to?")
        )
        return mcp_types.InputRequiredResult(
            input_requests={
                "model": mcp_types.CreateMessageRequest(
                    params=mcp_types.CreateMessageRequestParams(messages=[question], max_tokens=20)
                ),
                "roots": mcp_types.ListRootsRequest(),
                "login": mcp_types.ElicitRequest(
                    params=mcp_types.ElicitRequestURLParams(
                        message="Sign in to book.",
                        url="https://example.com/login",
                        elicitation_id="trip-1",
                    )
                ),
            },
            request_state="trip",
        )
    told = {
        key: answer.model_dump(mode="json", by_alias=True, exclude_none=True)
        for key, answer in sorted(answers.items())
    }
    return json.dumps({"state": ctx.request_state, "answers": told}, sort_keys=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Serve FastMCP's peer for the tests.")
    parser.add_argument("--http", type=int, metavar="PORT", help="serve HTTP on this port")
    port = parser.parse_args().http
    if port is None:
        mcp.run(show_banner=False)
    else:
        mcp.run(transport="http", host="127.0.0.1", port=port, path="/mcp", show_banner=False)
