"""A test server whose tools ask the client for things: its model, its roots, a name.

It also logs at every level and remembers which of its calls were cancelled, so tests
can see from the outside what happened inside (in-process and over stdio alike).

Run over stdio: ``python tests/servers/asking_server.py``.
"""

from __future__ import annotations

import anyio
from pydantic import BaseModel

from answerback.server import Context, MCPServer
from answerback.types import (
    LoggingLevel,
    SamplingMessage,
    TextContent,
    Tool,
    ToolChoice,
    ToolUseContent,
)

LEVELS: tuple[LoggingLevel, ...] = (
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency",
)  # fmt: skip

WEATHER_TOOL = Tool(
    name="get_weather",
    description="The weather in a city.",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
)

mcp = MCPServer("Asking")

# What happened to each tagged call, readable through the ``history`` tool.
_history: dict[str, list[str]] = {}


class Name(BaseModel):
    name: str


@mcp.tool()
async def ask_model(ctx: Context, question: str = "What is 6 x 7?") -> str:
    """Ask the client's model a question and report who answered what."""
    result = await ctx.session.create_message(
        [SamplingMessage(role="user", content=TextContent(text=question))],
        max_tokens=50,
        system_prompt="Answer in one sentence.",
    )
    content = result.content
    text = content.text if isinstance(content, TextContent) else f"<{type(content).__name__}>"
    return f"{result.model} said: {text}"


@mcp.tool()
async def ask_model_with_tools(ctx: Context) -> str:
    """Offer the client's model a tool and report which tool it wants to call."""
    result = await ctx.session.create_message(
        [SamplingMessage(role="user", content=TextContent(text="Weather in Paris?"))],
        max_tokens=50,
        tools=[WEATHER_TOOL],
        tool_choice=ToolChoice(mode="auto"),
    )
    content = result.content
    blocks = content if isinstance(content, list) else [content]
    uses = [f"{b.name}({b.input})" for b in blocks if isinstance(b, ToolUseContent)]
    return f"tool use: {', '.join(uses)}" if uses else "no tool use"


@mcp.tool()
async def list_my_roots(ctx: Context) -> list[str]:
    """The client's roots as ``name=uri`` strings."""
    result = await ctx.session.list_roots()
    return [f"{root.name}={root.uri}" for root in result.roots]


@mcp.tool()
async def log_every_level(ctx: Context) -> str:
    """Send one log message at each level, lowest first."""
    for level in LEVELS:
        await ctx.log(level, f"a {level} message", logger="asking")
    return "logged"


@mcp.tool()
async def wait_for_name(ctx: Context, tag: str) -> str:
    """Ask for a name and record under ``tag`` whether the call finished or was cancelled."""
    _history.setdefault(tag, []).append("asking")
    try:
        answer = await ctx.elicit("Who is waiting?", schema=Name)
    except anyio.get_cancelled_exc_class():
        _history[tag].append("cancelled")
        raise
    _history[tag].append(answer.action)
    return answer.action


@mcp.tool()
async def greet(ctx: Context, who: str) -> str:
    """Ask for the name to use for ``who`` and greet them by it."""
    answer = await ctx.elicit(f"Name for {who}?", schema=Name)
    if answer.action == "accept":
        return f"Hello, {answer.data.name} ({who})."
    return f"No greeting for {who}."


@mcp.tool()
async def change_tools() -> str:
    """Announce that the tool list changed (to every connected client)."""
    await mcp.notify_tools_changed()
    return "announced"


@mcp.tool()
def history(tag: str) -> list[str]:
    """What ``wait_for_name`` recorded under ``tag``."""
    return _history.get(tag, [])


if __name__ == "__main__":
    mcp.run()
