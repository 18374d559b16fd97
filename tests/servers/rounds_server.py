"""A test server for multi-round questions: tools that ask from task groups, tools that
narrate between questions, and tools that build ``InputRequiredResult``s by hand, some
of them wrong.

``RUNS`` counts how often each tool body started, so a test can tell rounds from the
outside (the ``runs`` tool reports it, in-process and over stdio alike).

Run over stdio: ``python tests/servers/rounds_server.py``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import anyio
from pydantic import BaseModel

from answerback.server import Context, MCPServer
from answerback.types import (
    ElicitRequest,
    ElicitRequestFormParams,
    InputRequiredResult,
    ListRootsRequest,
)

RUNS: Counter[str] = Counter()


class Name(BaseModel):
    name: str


class City(BaseModel):
    city: str


def question(message: str) -> ElicitRequest:
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    return ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))


def rounds_server(**options: Any) -> MCPServer:
    """A fresh server (tests that need two instances sharing keys build two)."""
    mcp = MCPServer("Rounds", version="1.0", **options)

    @mcp.tool()
    def runs(tool: str) -> int:
        """How many times ``tool``'s body has started in this process."""
        return RUNS[tool]

    @mcp.tool()
    async def pair(ctx: Context) -> str:
        """Two tasks of one task group each ask their own question at once."""
        RUNS["pair"] += 1
        found: dict[str, str] = {}

        async def ask_name() -> None:
            answer = await ctx.elicit("Your name?", schema=Name)
            found["name"] = answer.data.name if answer.action == "accept" else "-"

        async def ask_city() -> None:
            answer = await ctx.elicit("Your city?", schema=City)
            found["city"] = answer.data.city if answer.action == "accept" else "-"

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask_name)
            tg.start_soon(ask_city)
        return f"{found['name']} of {found['city']}"

    @mcp.tool()
    async def pair_logged(ctx: Context) -> str:
        """Two tasks each log, then ask; how they interleave is up to the scheduler."""
        found: dict[str, str] = {}

        async def ask_name() -> None:
            await ctx.info("asking for the name")
            answer = await ctx.elicit("Your name?", schema=Name)
            await ctx.info("got the name")
            found["name"] = answer.data.name if answer.action == "accept" else "-"

        async def ask_city() -> None:
            await ctx.info("asking for the city")
            answer = await ctx.elicit("Your city?", schema=City)
            await ctx.info("got the city")
            found["city"] = answer.data.city if answer.action == "accept" else "-"

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask_name)
            tg.start_soon(ask_city)
        return f"{found['name']} of {found['city']}"

    @mcp.tool()
    async def nested(ctx: Context) -> str:
        """A question asked two task groups deep."""

        async def inner() -> None:
            async with anyio.create_task_group() as tg:
                tg.start_soon(ask)

        async def ask() -> None:
            answer = await ctx.elicit("Your name?", schema=Name)
            found.append(answer.data.name if answer.action == "accept" else "-")

        found: list[str] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(inner)
        return f"Hello, {found[0]}."

    @mcp.tool()
    async def ask_and_fail(ctx: Context) -> str:
        """One task asks while its sibling fails: the failure is the answer."""

        async def fail() -> None:
            raise ValueError("the shelf is empty")

        async def ask() -> None:
            await ctx.elicit("Your name?", schema=Name)

        async with anyio.create_task_group() as tg:
            tg.start_soon(fail)
            tg.start_soon(ask)
        return "unreachable"

    @mcp.tool()
    async def refused_in_a_task(ctx: Context) -> str:
        """Ask for roots from a task, of a client that has none to give."""

        async def roots() -> None:
            await ctx.session.list_roots()

        async with anyio.create_task_group() as tg:
            tg.start_soon(roots)
        return "unreachable"

    @mcp.tool()
    async def narrated(ctx: Context) -> str:
        """Log and report progress around three questions asked in turn."""
        await ctx.info("starting")
        await ctx.report_progress(1, 4)
        first = await ctx.elicit("First name?", schema=Name)
        await ctx.info("got the first")
        await ctx.report_progress(2, 4)
        second = await ctx.elicit("Second name?", schema=Name)
        await ctx.info("got the second")
        await ctx.report_progress(3, 4)
        third = await ctx.elicit("Third name?", schema=Name)
        await ctx.info("done")
        await ctx.report_progress(4, 4)
        names = [a.data.name if a.action == "accept" else "-" for a in (first, second, third)]
        return ", ".join(names)

    @mcp.tool()
    def neither() -> InputRequiredResult:
        """A round with no questions and no state."""
        return InputRequiredResult()

    @mcp.tool()
    def too_many(count: int) -> InputRequiredResult:
        """A round asking ``count`` questions at once."""
        return InputRequiredResult(
            input_requests={f"q{i}": question(f"Question {i}?") for i in range(count)}
        )

    @mcp.tool()
    def roots_by_hand() -> InputRequiredResult:
        """A hand-made roots question (needs the client's roots capability)."""
        return InputRequiredResult(input_requests={"roots": ListRootsRequest()})

    @mcp.tool()
    def garbled() -> InputRequiredResult:
        """An InputRequiredResult built without validation, holding nonsense."""
        return InputRequiredResult.model_construct(input_requests={"q": {"method": "nope"}})

    return mcp


mcp = rounds_server()

if __name__ == "__main__":
    mcp.run()
