"""An answerback server that FastMCP's client talks to (``tests/interop/fastmcp_client.py``).

It has tools and one resource but no prompts, so a ``subscriptions/listen`` asking for
prompt list changes or for a URI no resource serves is acknowledged without them. Its
tools return a model (an output schema FastMCP's client applies), ask the client (a live
request on a legacy connection, an ``InputRequiredResult`` on 2026-07-28) for a name, to
open a link, for its roots, or for its model's answer with a tool of ours offered, and
announce changes to listening clients.

Run over stdio: ``python tests/interop/answerback_for_fastmcp.py``.
"""

from __future__ import annotations

from pydantic import BaseModel

from answerback.server import Context, MCPServer

NOTES = "notes://today"

mcp = MCPServer("answerback-peer")


class Forecast(BaseModel):
    city: str
    celsius: int
    summary: str | None = None


class Person(BaseModel):
    name: str


@mcp.tool()
def forecast(city: str) -> Forecast:
    """Tomorrow's weather in a city."""
    return Forecast(city=city, celsius=12, summary="showers")


@mcp.tool()
async def greet(ctx: Context) -> str:
    """Ask for a name, then greet it."""
    answer = await ctx.elicit("What is your name?", schema=Person)
    if answer.action == "accept":
        return f"Hello, {answer.data.name}."
    return f"No name ({answer.action})."


@mcp.tool()
async def sign_in(ctx: Context) -> str:
    """Ask the person to open a sign-in page; say what they answered."""
    answer = await ctx.elicit_url("Sign in to continue.", "https://example.com/login", "login-1")
    return answer.action


@mcp.tool()
async def where(ctx: Context) -> str:
    """The client's roots, by URI."""
    return " ".join(str(root.uri) for root in await ctx.roots())


def weight_of(item: str) -> int:
    """How many grams an item weighs."""
    return {"apple": 180, "pear": 170}.get(item, 0)


@mcp.tool()
async def weigh(ctx: Context) -> str:
    """Ask the client's model, offering it ``weight_of``; report the rounds and answer."""
    sampled = await ctx.sample("How heavy is an apple?", max_tokens=50, tools=[weight_of])
    return f"{sampled.rounds} rounds: {sampled.text}"


@mcp.tool()
async def announce() -> str:
    """Tell listening clients that the tools and the notes changed."""
    await mcp.notify_resource_updated("notes://elsewhere")  # nobody asked: not sent
    await mcp.notify_tools_changed()
    await mcp.notify_resource_updated(NOTES)
    return "announced"


@mcp.resource(NOTES)
def notes() -> str:
    return "Nothing planned."


if __name__ == "__main__":
    mcp.run()
