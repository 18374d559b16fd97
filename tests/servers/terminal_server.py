"""A test server for the ``answerback`` command: every kind of answer and question.

Plain results (text, an image, structured content, a failure, progress, log lines) for
``answerback call``/``list``, a tool whose arguments are asked on a form (an Enum and
optional ones in ``paint``), and tools that ask a person something (a form with
choices and limits, a link, a sampling request, a form whose server then dies) for the
terminal tests. Run over stdio: ``python tests/servers/terminal_server.py``.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Literal

import anyio
import anyio.to_thread
from pydantic import BaseModel, BeforeValidator, Field

from answerback.server import Context, MCPServer
from answerback.types import ImageContent, SamplingMessage, TextContent

mcp = MCPServer("Tearoom")

PIXEL = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(12 * 1024)).decode()
"""A 12 KB "image" (its size is what the output describes)."""


_opened: set[str] = set()
"""The gates already opened (see ``order_tea``)."""


class TeaOrder(BaseModel):
    tea: Literal["green", "black", "oolong"] = Field(description="Which tea")
    cups: int = Field(ge=1, le=5, description="How many cups (1 to 5)")


@mcp.tool()
def greet(name: str, times: int = 1) -> str:
    """Greet someone, perhaps more than once."""
    return " ".join([f"Hello, {name}!"] * times)


@mcp.tool()
def plan(stops: list[str], budget: dict[str, int] | None = None) -> str:
    """Plan a trip (a list and an object: arguments a form cannot ask)."""
    return " -> ".join(stops) + (f" within {budget}" if budget else "")


class Colour(Enum):
    """A colour of paint."""

    RED = "red"
    OCHRE = "ochre"


def _not_null(value: object) -> object:
    """Refuses an explicit null, so ``paint``'s result shows ``coats`` was left out."""
    if value is None:
        raise ValueError("was sent as null instead of being left out")
    return value


@mcp.tool()
def paint(
    colour: Colour,
    coats: Annotated[int | None, BeforeValidator(_not_null)] = None,
    rooms: list[str] | None = None,
) -> str:
    """Paint the walls (an Enum, an optional number, and an optional list of free text a
    form cannot ask: a $ref, and anyOf with null twice)."""
    given = "not given" if coats is None else coats
    return f"Painted {colour.value}, coats: {given}, rooms: {rooms or 'all'}."


@mcp.tool()
def broken() -> str:
    """Always fails (the call reports isError)."""
    raise RuntimeError("the kettle is broken")


@mcp.tool()
def picture() -> ImageContent:
    """A picture of the tearoom."""
    return ImageContent(data=PIXEL, mime_type="image/png")


@mcp.tool()
def menu() -> dict[str, float]:
    """Prices, as structured content."""
    return {"green": 2.5, "black": 2.0}


@mcp.tool()
async def brew(ctx: Context, steps: int = 3) -> str:
    """Report progress for each step and log as it goes."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
        await ctx.info(f"brewed step {step}")
    return "brewed"


@mcp.tool()
async def order_tea(ctx: Context, gate: str | None = None, announce: bool = False) -> str:
    """Ask what tea and how many cups (once something is written to the FIFO ``gate``,
    if given: a test's way to make this ask while another server's question shows);
    ``announce``: say so in a log message first (a test's sign the question is sent)."""
    if gate is not None and gate not in _opened:
        await anyio.to_thread.run_sync(Path(gate).read_text)
        _opened.add(gate)  # on 2026-07-28 the call runs again with the answer: pass then
    if announce:
        await ctx.info("asking what tea")
    answer = await ctx.elicit("What would you like?", schema=TeaOrder)
    if answer.action == "accept":
        return f"Order: {answer.data.cups} x {answer.data.tea}."
    return f"No order ({answer.action})."


class Subscription(BaseModel):
    newsletter: bool | None = Field(default=None, description="The monthly newsletter")


@mcp.tool()
async def subscribe(ctx: Context) -> str:
    """Ask an optional yes/no without a default, which the person may leave unanswered
    (then it is not in the answer: ``None`` here, never ``False``)."""
    answer = await ctx.elicit("Stay in touch?", schema=Subscription)
    if answer.action != "accept":
        return f"No subscription ({answer.action})."
    said = {None: "not answered", True: "yes", False: "no"}[answer.data.newsletter]
    return f"Newsletter: {said}."


@mcp.tool()
async def visit(ctx: Context, url: str) -> str:
    """Ask the person to open ``url``."""
    answer = await ctx.elicit_url("Please confirm your account", url, "visit-1")
    return f"visit: {answer.action}"


@mcp.tool()
async def summarise(ctx: Context, text: str) -> str:
    """Ask the client's model (or person) to summarise ``text``."""
    result = await ctx.session.create_message(
        [SamplingMessage(role="user", content=TextContent(text=f"Summarise: {text}"))],
        max_tokens=40,
        system_prompt="Be brief.",
    )
    content = result.content
    said = content.text if isinstance(content, TextContent) else type(content).__name__
    return f"summary: {said}"


@mcp.tool()
async def vanish(ctx: Context, pidfile: str) -> str:
    """Write this process's id to ``pidfile``, then ask a form (a test kills us there)."""
    await anyio.Path(pidfile).write_text(str(os.getpid()))
    answer = await ctx.elicit("A form whose server will die", schema=TeaOrder)
    return answer.action


@mcp.tool()
async def leave_a_helper(pidfile: str) -> str:
    """Start a helper that outlives this server unless its process group is ended,
    write the helper's id to ``pidfile``, then wait until cancelled."""
    # Popen returns once started: nothing here waits for the helper.
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # noqa: ASYNC220
    await anyio.Path(pidfile).write_text(str(helper.pid))
    await anyio.sleep_forever()
    return "never"


if __name__ == "__main__":
    mcp.run()
