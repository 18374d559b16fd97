"""A tool author's wrong argument to a ``Context`` method fails at the call, alike in
both protocol generations, and nothing reaches the client.

Each method refuses a value of the wrong type with a ``TypeError`` and a value of the
right type that is not allowed with a ``ValueError``, naming the method and the argument
and saying what to pass; the tool then fails the usual way, with an error result that
carries the message. Before, these escaped as pydantic's error about an internal params
model, as a ``TypeError`` or ``AttributeError`` from deep inside, were sent and mangled
on the way (a progress ``message`` of 5), or passed on one era and failed on the other
(an unknown logging level, refused by a legacy client's session only).

The lower-level methods of ``ctx.session`` (``create_message``, ``elicit_form``,
``send_log_message``...) check theirs alike, named as ``ctx.session.<method>()``; what
they send is not otherwise judged (``elicit_form`` sends the form as it is given).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, FileUrl

from answerback import Client
from answerback.client import ClientRequestContext
from answerback.server import Context, MCPServer
from answerback.types import (
    ClientCapabilities,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    ListRootsResult,
    LoggingMessageNotificationParams,
    ModelHint,
    ModelPreferences,
    Root,
    SamplingCapability,
    SamplingMessage,
    SamplingToolsCapability,
    TextContent,
    Tool,
    ToolChoice,
    ToolUseContent,
)

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"


class Name(BaseModel):
    name: str


class Inner(BaseModel):
    x: int


class Nested(BaseModel):
    inner: Inner


def lookup() -> str:
    """A tool a sampled model could call."""
    return "found"


def hello() -> list[SamplingMessage]:
    return [SamplingMessage(role="user", content=TextContent(text="hi"))]


LOOKUP = Tool(name="lookup", input_schema={"type": "object"})
FORM = {"type": "object", "properties": {"name": {"type": "string"}}}


def unbalanced() -> list[SamplingMessage]:
    use = ToolUseContent(id="u1", name="lookup", input={})
    return [SamplingMessage(role="user", content=use)]


Call = Callable[[Context], Awaitable[Any]]

# id: (the call, the exception type, how its message starts)
WRONG: dict[str, tuple[Call, type[Exception], str]] = {
    # -- ctx.elicit --
    "elicit message int": (
        lambda ctx: ctx.elicit(5, schema=Name),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.elicit(): message must be a string, not int (5). Pass the "
        "question to show above the form, as a string.",
    ),
    "elicit schema dict class": (
        lambda ctx: ctx.elicit("q", schema=dict),  # type: ignore[type-var]
        TypeError,
        "Invalid argument for ctx.elicit(): schema must be a pydantic model class, not the "
        "class dict. Pass the class of a pydantic model",
    ),
    "elicit schema instance": (
        lambda ctx: ctx.elicit("q", schema=Name(name="a")),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.elicit(): schema must be a pydantic model class, not Name "
        "(Name(name='a')).",
    ),
    "elicit schema JSON Schema": (
        lambda ctx: ctx.elicit("q", schema={"type": "object"}),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.elicit(): schema must be a pydantic model class, not dict",
    ),
    "elicit schema nested model": (
        lambda ctx: ctx.elicit("q", schema=Nested),
        TypeError,  # FormSchemaError, as before: it names the field and how to write it
        "Nested cannot be asked for in an elicitation form",
    ),
    # -- ctx.elicit_url --
    "elicit_url url int": (
        lambda ctx: ctx.elicit_url("q", url=5, elicitation_id="e-1"),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.elicit_url(): url must be a string, not int (5). Pass the "
        "link as a string",
    ),
    "elicit_url message None": (
        lambda ctx: ctx.elicit_url(None, "https://example.com", "e-1"),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.elicit_url(): message must be a string, not None.",
    ),
    "elicit_url id None": (
        lambda ctx: ctx.elicit_url("q", "https://example.com", None),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.elicit_url(): elicitation_id must be a string, not None. "
        "Pass an id of your own",
    ),
    # -- ctx.sample --
    "sample max_tokens str": (
        lambda ctx: ctx.sample("hi", max_tokens="5"),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.sample(): max_tokens must be an int, not str ('5'). Pass "
        "the most tokens the model may write, as an int.",
    ),
    "sample max_tokens bool": (
        lambda ctx: ctx.sample("hi", max_tokens=True),
        TypeError,
        "Invalid argument for ctx.sample(): max_tokens must be an int, not bool (True).",
    ),
    "sample max_tokens 0": (
        lambda ctx: ctx.sample("hi", max_tokens=0),
        ValueError,
        "Invalid argument for ctx.sample(): max_tokens must be at least 1, not 0.",
    ),
    "sample messages [42]": (
        lambda ctx: ctx.sample(messages=[42]),  # type: ignore[list-item]
        TypeError,
        "Invalid argument for ctx.sample(): messages[0] must be a SamplingMessage, not int "
        '(42). Pass a string (one user message), or SamplingMessage(role="user", ',
    ),
    "sample messages dict": (
        lambda ctx: ctx.sample([{"role": "user", "content": "hi"}]),  # type: ignore[list-item]
        TypeError,
        "Invalid argument for ctx.sample(): messages[0] must be a SamplingMessage, not dict",
    ),
    "sample messages int": (
        lambda ctx: ctx.sample(42),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.sample(): messages must be a string, a SamplingMessage or "
        "a list of SamplingMessage, not int (42).",
    ),
    "sample messages empty": (
        lambda ctx: ctx.sample([]),
        ValueError,
        "Invalid argument for ctx.sample(): messages is empty.",
    ),
    "sample messages unbalanced": (
        lambda ctx: ctx.sample(unbalanced()),
        ValueError,
        "Invalid argument for ctx.sample(): messages break the tool-use rules: messages[0]: "
        "only assistant messages may use tools.",
    ),
    "sample tools [42]": (
        lambda ctx: ctx.sample("hi", tools=[42]),  # type: ignore[list-item]
        TypeError,
        "Invalid argument for ctx.sample(): tools[0] must be a function or a tool's name, "
        "not int (42).",
    ),
    "sample tools bare function": (
        lambda ctx: ctx.sample("hi", tools=lookup),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.sample(): tools must be a list, True or None, not the "
        "function lookup. Pass a list of functions",
    ),
    "sample tools False": (
        lambda ctx: ctx.sample("hi", tools=False),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.sample(): tools must be a list, True or None, not bool",
    ),
    "sample tool_choice unknown": (
        lambda ctx: ctx.sample("hi", tools=[lookup], tool_choice="sometimes"),  # type: ignore[arg-type]
        ValueError,
        "Invalid argument for ctx.sample(): tool_choice must be one of 'auto', 'required', "
        "'none', not 'sometimes'.",
    ),
    "sample tool_choice int": (
        lambda ctx: ctx.sample("hi", tools=[lookup], tool_choice=3),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.sample(): tool_choice must be one of",
    ),
    "sample tool_choice without tools": (
        lambda ctx: ctx.sample("hi", tool_choice="auto"),
        ValueError,
        "Invalid argument for ctx.sample(): tool_choice needs tools to choose from.",
    ),
    "sample temperature str": (
        lambda ctx: ctx.sample("hi", temperature="hot"),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.sample(): temperature must be a number (int or float), "
        "not str ('hot').",
    ),
    "sample temperature NaN": (
        lambda ctx: ctx.sample("hi", temperature=float("nan")),
        ValueError,
        "Invalid argument for ctx.sample(): temperature must be a finite number, not nan",
    ),
    "sample system_prompt int": (
        lambda ctx: ctx.sample("hi", system_prompt=5),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.sample(): system_prompt must be a string or None",
    ),
    "sample stop_sequences str": (
        lambda ctx: ctx.sample("hi", stop_sequences="END"),
        TypeError,
        "Invalid argument for ctx.sample(): stop_sequences must be a list of strings, not "
        "str ('END').",
    ),
    "sample stop_sequences of ints": (
        lambda ctx: ctx.sample("hi", stop_sequences=[1]),  # type: ignore[list-item]
        TypeError,
        "Invalid argument for ctx.sample(): stop_sequences.0: Input should be a valid string."
        " Pass a list of strings, or None.",
    ),
    "sample model_preferences int": (
        lambda ctx: ctx.sample("hi", model_preferences=5),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.sample(): model_preferences must be a ModelPreferences",
    ),
    "sample model_preferences bad dict": (
        lambda ctx: ctx.sample("hi", model_preferences={"hints": [{"name": 5}]}),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.sample(): model_preferences.hints.0.name: Input should be "
        "a valid string.",
    ),
    "sample include_context unknown": (
        lambda ctx: ctx.sample("hi", include_context="everything"),  # type: ignore[arg-type]
        ValueError,
        "Invalid argument for ctx.sample(): include_context must be one of 'none', "
        "'thisServer', 'allServers', not 'everything'.",
    ),
    "sample metadata list": (
        lambda ctx: ctx.sample("hi", metadata=[1]),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.sample(): metadata must be a dict, not list ([1]).",
    ),
    "sample metadata not JSON": (
        lambda ctx: ctx.sample("hi", metadata={"when": object()}),
        TypeError,
        "Invalid argument for ctx.sample(): metadata cannot be sent as JSON",
    ),
    "sample max_rounds str": (
        lambda ctx: ctx.sample("hi", max_rounds="3"),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.sample(): max_rounds must be an int, not str ('3').",
    ),
    # -- logging --
    "log level unknown": (
        lambda ctx: ctx.log("loud", "x"),  # type: ignore[arg-type]
        ValueError,
        "Invalid argument for ctx.log(): level must be one of 'debug', 'info', 'notice', "
        "'warning', 'error', 'critical', 'alert', 'emergency', not 'loud'. Pass one of "
        "those levels, as a string.",
    ),
    "log level int": (
        lambda ctx: ctx.log(5, "x"),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.log(): level must be one of",
    ),
    "info logger int": (
        lambda ctx: ctx.info("x", logger=5),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.info(): logger must be a string or None, not int (5).",
    ),
    "warning data not JSON": (
        lambda ctx: ctx.warning(object()),
        TypeError,
        "Invalid argument for ctx.warning(): data cannot be sent as JSON",
    ),
    # -- progress --
    "report_progress str": (
        lambda ctx: ctx.report_progress("half"),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.report_progress(): progress must be a number (int or "
        "float), not str ('half').",
    ),
    "report_progress bool": (
        lambda ctx: ctx.report_progress(True),
        TypeError,
        "Invalid argument for ctx.report_progress(): progress must be a number",
    ),
    "report_progress total str": (
        lambda ctx: ctx.report_progress(1, total="10"),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.report_progress(): total must be a number",
    ),
    "report_progress message int": (
        lambda ctx: ctx.report_progress(1, 2, message=5),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.report_progress(): message must be a string or None",
    ),
    "report_progress infinite": (
        lambda ctx: ctx.report_progress(float("inf")),
        ValueError,
        "Invalid argument for ctx.report_progress(): progress must be a finite number, not "
        "inf: JSON cannot carry it.",
    ),
    # -- roots and state --
    "resolve_path int": (
        lambda ctx: ctx.resolve_path(5),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.resolve_path(): path must be a string or a path object, "
        "not int (5).",
    ),
    "seal_state list": (
        lambda ctx: as_awaitable(ctx.seal_state, [1, 2]),
        TypeError,
        "Invalid argument for ctx.seal_state(): payload must be a dict, not list ([1, 2]).",
    ),
    "seal_state single_use str": (
        lambda ctx: as_awaitable(ctx.seal_state, {}, single_use="yes"),
        TypeError,
        "Invalid argument for ctx.seal_state(): single_use must be True or False",
    ),
    # -- ctx.session: the lower-level methods, checked alike --
    "session elicit_form message int": (
        lambda ctx: ctx.session.elicit_form(5, FORM),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.session.elicit_form(): message must be a string, not int "
        "(5). Pass the question to show above the form, as a string.",
    ),
    "session elicit_form schema model class": (
        lambda ctx: ctx.session.elicit_form("q", Name),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.session.elicit_form(): requested_schema must be a dict (a "
        "JSON Schema), not the class Name. Pass the form's JSON Schema, such as "
        "form_schema(Model)",
    ),
    "session elicit_url url None": (
        lambda ctx: ctx.session.elicit_url("q", None, "e-1"),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.session.elicit_url(): url must be a string, not None.",
    ),
    "session elicit_url id None": (
        lambda ctx: ctx.session.elicit_url("q", "https://example.com", None),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.session.elicit_url(): elicitation_id must be a string, not None.",
    ),
    "session create_message max_tokens 0": (
        lambda ctx: ctx.session.create_message(hello(), max_tokens=0),
        ValueError,
        "Invalid argument for ctx.session.create_message(): max_tokens must be at least 1, "
        "not 0. Pass the most tokens the model may write, as an int.",
    ),
    "session create_message max_tokens str": (
        lambda ctx: ctx.session.create_message(hello(), max_tokens="5"),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.session.create_message(): max_tokens must be an int, not "
        "str ('5').",
    ),
    "session create_message messages str": (
        lambda ctx: ctx.session.create_message("hi", max_tokens=5),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.session.create_message(): messages must be a list of "
        "SamplingMessage, not str ('hi'). Pass a list of SamplingMessage(",
    ),
    "session create_message messages dict": (
        lambda ctx: ctx.session.create_message([{"role": "user"}], max_tokens=5),  # type: ignore[list-item]
        TypeError,
        "Invalid argument for ctx.session.create_message(): messages[0] must be a "
        "SamplingMessage, not dict",
    ),
    "session create_message messages empty": (
        lambda ctx: ctx.session.create_message([], max_tokens=5),
        ValueError,
        "Invalid argument for ctx.session.create_message(): messages is empty.",
    ),
    "session create_message unbalanced": (
        lambda ctx: ctx.session.create_message(unbalanced(), max_tokens=5),
        ValueError,
        "Invalid argument for ctx.session.create_message(): messages[0]: only assistant "
        "messages may use tools.",
    ),
    "session create_message temperature str": (
        lambda ctx: ctx.session.create_message(hello(), max_tokens=5, temperature="hot"),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.session.create_message(): temperature must be a number",
    ),
    "session create_message stop_sequences of ints": (
        lambda ctx: ctx.session.create_message(hello(), max_tokens=5, stop_sequences=[1]),  # type: ignore[list-item]
        TypeError,
        "Invalid argument for ctx.session.create_message(): stop_sequences.0: Input should be "
        "a valid string. Pass a list of strings, or None.",
    ),
    "session create_message metadata not JSON": (
        lambda ctx: ctx.session.create_message(hello(), max_tokens=5, metadata={"a": object()}),
        TypeError,
        "Invalid argument for ctx.session.create_message(): metadata cannot be sent as JSON",
    ),
    "session create_message tools function": (
        lambda ctx: ctx.session.create_message(hello(), max_tokens=5, tools=[lookup]),  # type: ignore[list-item]
        TypeError,
        "Invalid argument for ctx.session.create_message(): tools[0] must be a Tool, not the "
        "function lookup.",
    ),
    "session create_message tools twice": (
        lambda ctx: ctx.session.create_message(hello(), max_tokens=5, tools=[LOOKUP, LOOKUP]),
        ValueError,
        "Invalid argument for ctx.session.create_message(): tools ['lookup'] are offered "
        "more than once; give each tool one name.",
    ),
    "session create_message tool_choice str": (
        lambda ctx: ctx.session.create_message(
            hello(),
            max_tokens=5,
            tools=[LOOKUP],
            tool_choice="auto",  # type: ignore[arg-type]
        ),
        TypeError,
        "Invalid argument for ctx.session.create_message(): tool_choice must be a ToolChoice, "
        "not str ('auto').",
    ),
    "session create_message include_context unknown": (
        lambda ctx: ctx.session.create_message(hello(), max_tokens=5, include_context="all"),  # type: ignore[arg-type]
        ValueError,
        "Invalid argument for ctx.session.create_message(): include_context must be one of",
    ),
    "session send_log_message level unknown": (
        lambda ctx: ctx.session.send_log_message("loud", "x"),  # type: ignore[arg-type]
        ValueError,
        "Invalid argument for ctx.session.send_log_message(): level must be one of 'debug',",
    ),
    "session send_log_message logger int": (
        lambda ctx: ctx.session.send_log_message("info", "x", logger=5),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.session.send_log_message(): logger must be a string or None",
    ),
    "session send_log_message data not JSON": (
        lambda ctx: ctx.session.send_log_message("info", object()),
        TypeError,
        "Invalid argument for ctx.session.send_log_message(): data cannot be sent as JSON",
    ),
    "session send_elicitation_complete None": (
        lambda ctx: ctx.session.send_elicitation_complete(None),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.session.send_elicitation_complete(): elicitation_id must be "
        "a string, not None.",
    ),
    "session send_progress str": (
        lambda ctx: ctx.session.send_progress("half"),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for ctx.session.send_progress(): progress must be a number",
    ),
    "session check_client_capability dict": (
        lambda ctx: as_awaitable(ctx.session.check_client_capability, {"sampling": {}}),
        TypeError,
        "Invalid argument for ctx.session.check_client_capability(): capability must be a "
        "ClientCapabilities, not dict ({'sampling': {}}).",
    ),
}


async def as_awaitable(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return function(*args, **kwargs)


class Recorder:
    """A client that can answer everything and records whatever reaches it."""

    def __init__(self) -> None:
        self.received: list[str] = []

    async def elicit(self, context: ClientRequestContext, params: ElicitRequestParams) -> Any:
        self.received.append("elicitation/create")
        return ElicitResult(action="decline")

    async def sample(
        self, context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult:
        self.received.append("sampling/createMessage")
        return CreateMessageResult(role="assistant", content=TextContent(text="ok"), model="m")

    async def roots(self, context: ClientRequestContext) -> ListRootsResult:
        self.received.append("roots/list")
        return ListRootsResult(roots=[Root(uri=FileUrl(Path.cwd().as_uri()))])

    async def log(self, params: LoggingMessageNotificationParams) -> None:
        self.received.append("notifications/message")

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.received.append("notifications/progress")


def probing_server(raised: list[BaseException]) -> MCPServer:
    mcp = MCPServer("Probe")

    @mcp.tool()
    async def probe(case: str, ctx: Context) -> str:
        call = WRONG[case][0]
        try:
            await call(ctx)
        except Exception as exc:
            raised.append(exc)
            raise
        return "accepted"

    return mcp


def connect(mcp: MCPServer, mode: str, recorder: Recorder) -> Client:
    return Client(
        mcp,
        mode=mode,
        elicitation_callback=recorder.elicit,
        sampling_callback=recorder.sample,
        sampling_capabilities=SamplingCapability(tools=SamplingToolsCapability()),
        list_roots_callback=recorder.roots,
        logging_callback=recorder.log,
        log_level="debug",
    )


@pytest.mark.parametrize("mode", ["legacy", MODERN])
async def test_a_wrong_argument_fails_the_tool_at_the_call(mode: str) -> None:
    """Every case, on one connection per era: the exception's type and message, the
    error result carrying it, and nothing sent to the client."""
    raised: list[BaseException] = []
    recorder = Recorder()
    failures: list[str] = []
    async with connect(probing_server(raised), mode, recorder) as client:
        for case, (_, kind, start) in WRONG.items():
            raised.clear()
            recorder.received.clear()
            result = await client.call_tool(
                "probe", {"case": case}, progress_callback=recorder.progress
            )
            [block] = result.content
            assert isinstance(block, TextContent)
            problems: list[str] = []
            if len(raised) != 1 or not isinstance(raised[0], kind):
                problems.append(f"raised {raised!r}, wanted a {kind.__name__}")
            said = str(raised[0]) if raised else ""
            if not said.startswith(start):
                problems.append(f"said {said!r}")
            if not (result.is_error and block.text == f"Error executing tool: {said}"):
                problems.append(f"result {block.text!r}")
            if recorder.received:
                problems.append(f"the client received {recorder.received}")
            if problems:
                failures.append(f"{case}: {'; '.join(problems)}")
    assert not failures, "\n".join(failures)


async def test_state_that_json_cannot_carry_is_refused_naming_the_payload() -> None:
    """2026-07-28 only: a legacy request has no state to seal (``RuntimeError``)."""
    sealed: list[BaseException] = []
    mcp = MCPServer("State")

    @mcp.tool()
    def keep(ctx: Context) -> str:
        try:
            ctx.seal_state({"when": object()})
        except TypeError as exc:
            sealed.append(exc)
            raise
        return "sealed"

    async with Client(mcp, mode=MODERN) as client:
        result = await client.call_tool("keep")
    assert result.is_error
    [exc] = sealed
    assert str(exc).startswith(
        "Invalid argument for ctx.seal_state(): payload cannot be sent as JSON (Unable to "
        "serialize unknown type: <class 'object'>). Pass a dict of JSON values"
    )


@pytest.mark.parametrize("mode", ["legacy", MODERN])
async def test_the_arguments_the_checks_let_through_still_work(mode: str) -> None:
    """What the signatures allow besides the obvious: a tuple of messages, a tuple of
    stop sequences and of tools, an int temperature, a path object; and through
    ``ctx.session``, the model preferences as a dict."""
    recorder = Recorder()
    mcp = MCPServer("Fine")

    @mcp.tool()
    async def fine(ctx: Context) -> str:
        first = await ctx.sample(
            (SamplingMessage(role="user", content=TextContent(text="hi")),),
            model_preferences=ModelPreferences(hints=[ModelHint(name="small")]),
            stop_sequences=("END",),
            tools=(lookup,),
            tool_choice="auto",
            temperature=1,
        )
        path = await ctx.resolve_path(Path.cwd())
        await ctx.log("notice", {"seen": first.text}, logger="probe")
        await ctx.report_progress(1, 2.5, "halfway")
        second = await ctx.session.create_message(
            (SamplingMessage(role="user", content=TextContent(text="hi")),),  # type: ignore[arg-type]
            max_tokens=5,
            model_preferences={"hints": [{"name": "small"}]},  # type: ignore[arg-type]
            stop_sequences=["END"],
            metadata={"trace": 1},
            tools=[LOOKUP],
            tool_choice=ToolChoice(mode="auto"),
            temperature=0,
        )
        await ctx.session.send_log_message("info", [second.model], logger="probe")
        declared = ctx.session.check_client_capability(
            ClientCapabilities(sampling=SamplingCapability())
        )
        return f"{first.text} {path == Path.cwd().resolve()} {declared}"

    async with connect(mcp, mode, recorder) as client:
        result = await client.call_tool("fine", progress_callback=recorder.progress)
    assert not result.is_error
    [block] = result.content
    assert isinstance(block, TextContent)
    assert block.text == "ok True True"
    assert "notifications/message" in recorder.received
    assert "notifications/progress" in recorder.received
