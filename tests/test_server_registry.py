"""The server's registry: one tool, prompt or resource per name (or URI), each of which
can be taken away again while clients are connected.

A second ``@mcp.tool()`` under a name already registered replaced the first without a
word (a tool copied and not renamed was lost); now it raises ``ValueError`` naming the
name, where the first was written, and what to do, and the same goes for prompts, for
resources by URI, and for URI templates that match the same URIs as one registered.
``remove_tool``, ``remove_prompt`` and ``remove_resource`` take one away: it is no
longer listed, a request for it fails as one for anything unknown, in both protocol
generations (a 2026-07-28 retry too), and calls already running finish.

A class is no longer registered as a function: what was served was its constructor.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from pydantic import BaseModel
from support import PATIENCE_SECONDS

from answerback import Client, MCPError
from answerback.client import ClientRequestContext
from answerback.server import Context, MCPServer
from answerback.types import (
    ElicitRequestParams,
    ElicitResult,
    InputRequiredResult,
    PromptsCapability,
    ResourcesCapability,
    TextContent,
    TextResourceContents,
    ToolsCapability,
)

pytestmark = pytest.mark.anyio

MODES = ["legacy", "2026-07-28"]
HERE = "test_server_registry.py"


class Point(BaseModel):
    x: int
    y: int


@dataclass
class Booking:
    day: str


class Maker:
    @classmethod
    def make(cls, x: int) -> int:
        return x


class Greeter:
    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self) -> str:
        return f"Hello, {self.name}."

    def greet(self, name: str) -> str:
        return f"Hello, {name}."


def weather(city: str) -> str:
    """Tell the weather."""
    return f"Sunny in {city}."


def forecast(city: str) -> str:
    """A copy of weather, not renamed."""
    return f"Rain in {city}."


def outline(topic: str) -> str:
    return f"Outline {topic}."


def config() -> str:
    return "debug=false"


def profile(user_id: str) -> str:
    return f"user {user_id}"


def profile_by_name(name: str) -> str:
    return f"user named {name}"


def line(function: Callable[..., Any]) -> int:
    return function.__code__.co_firstlineno


async def text_of(client: Client, uri: str) -> str:
    [contents] = (await client.read_resource(uri)).contents
    assert isinstance(contents, TextResourceContents)
    return contents.text


# -- a second registration under a taken name is refused -------------------------------


Register = Callable[[MCPServer], object]

# id: (the first registration, the second, how the second's ValueError reads)
DUPLICATES: dict[str, tuple[Register, Register, str]] = {
    "tool by its function's name": (
        lambda mcp: mcp.tool()(weather),
        lambda mcp: mcp.tool()(weather),
        "Invalid argument for mcp.tool(): name 'weather', the function's own name, is already "
        f"taken by the tool registered from the function weather ({HERE}, line {line(weather)})"
        ". Give this one another name with @mcp.tool(name=...), or call "
        "mcp.remove_tool('weather') first to replace that one.",
    ),
    "tool by a given name": (
        lambda mcp: mcp.tool()(weather),
        lambda mcp: mcp.tool(name="weather")(forecast),
        "Invalid argument for mcp.tool(): name 'weather' is already taken by the tool "
        f"registered from the function weather ({HERE}, line {line(weather)}). Give this one "
        "another name with @mcp.tool(name=...), or call mcp.remove_tool('weather') first to "
        "replace that one.",
    ),
    "prompt": (
        lambda mcp: mcp.prompt(name="plan")(outline),
        lambda mcp: mcp.prompt(name="plan")(weather),
        "Invalid argument for mcp.prompt(): name 'plan' is already taken by the prompt "
        f"registered from the function outline ({HERE}, line {line(outline)}). Give this one "
        "another name with @mcp.prompt(name=...), or call mcp.remove_prompt('plan') first "
        "to replace that one.",
    ),
    "fixed resource": (
        lambda mcp: mcp.resource("config://app")(config),
        lambda mcp: mcp.resource("config://app")(lambda: "copy"),  # pyright: ignore[reportUnknownLambdaType, reportUnknownArgumentType]
        "Invalid argument for mcp.resource(): uri 'config://app' is already taken by the "
        f"resource registered from the function config ({HERE}, line {line(config)}). Give "
        "this one another URI, or call mcp.remove_resource('config://app') first to replace "
        "that one.",
    ),
    "template": (
        lambda mcp: mcp.resource("users://{user_id}")(profile),
        lambda mcp: mcp.resource("users://{user_id}")(profile),
        "Invalid argument for mcp.resource(): uri 'users://{user_id}' is already taken by the "
        f"resource template registered from the function profile ({HERE}, line "
        f"{line(profile)}). Give this one another URI, or call "
        "mcp.remove_resource('users://{user_id}') first to replace that one.",
    ),
    "template matching the same URIs": (
        lambda mcp: mcp.resource("users://{user_id}")(profile),
        lambda mcp: mcp.resource("users://{name}")(profile_by_name),
        "Invalid argument for mcp.resource(): uri 'users://{name}' matches the same URIs as "
        f"the template 'users://{{user_id}}', registered from the function profile ({HERE}, "
        f"line {line(profile)}), which would answer every read of them. Give this one another "
        "URI, or call mcp.remove_resource('users://{user_id}') first to replace that one.",
    ),
}


@pytest.mark.parametrize("case", list(DUPLICATES), ids=list(DUPLICATES))
async def test_a_second_registration_under_a_taken_name_is_refused(case: str) -> None:
    """Refused with the message, and the first one is still what clients get."""
    first, second, message = DUPLICATES[case]
    mcp = MCPServer("duplicates")
    first(mcp)
    with pytest.raises(ValueError, match=r"^Invalid argument for mcp\.") as caught:
        second(mcp)
    assert type(caught.value) is ValueError
    assert str(caught.value) == message
    async with Client(mcp, mode="legacy") as client:
        tools = await client.list_all_tools()
        prompts = await client.list_all_prompts() if mcp.capabilities.prompts else []
        resources = await client.list_all_resources() if mcp.capabilities.resources else []
        templates = await client.list_all_resource_templates() if mcp.capabilities.resources else []
        listed = [
            *(tool.description for tool in tools),
            *(prompt.name for prompt in prompts),
            *(resource.uri for resource in resources),
            *(template.uri_template for template in templates),
        ]
    assert len(listed) == 1
    assert listed[0] in ("Tell the weather.", "plan", "config://app", "users://{user_id}")


async def test_templates_that_match_other_uris_are_all_registered() -> None:
    """A template is refused only for matching exactly the URIs of one registered:
    ``{+path}`` spans slashes and ``{path}`` does not, and a fixed URI that a template
    also matches is read first, so each of these still serves something."""
    mcp = MCPServer("templates")
    mcp.resource("files://{path}")(lambda path: f"one {path}")  # pyright: ignore[reportUnknownLambdaType, reportUnknownArgumentType]
    mcp.resource("files://{+path}")(lambda path: f"many {path}")  # pyright: ignore[reportUnknownLambdaType, reportUnknownArgumentType]
    mcp.resource("files://readme")(lambda: "the readme")
    mcp.resource("files://{path}/raw")(lambda path: f"raw {path}")  # pyright: ignore[reportUnknownLambdaType, reportUnknownArgumentType]
    async with Client(mcp, mode="legacy") as client:
        read = {
            uri: await text_of(client, uri)
            for uri in ("files://readme", "files://a", "files://a/b", "files://a/raw")
        }
    assert read == {
        "files://readme": "the readme",
        "files://a": "one a",
        "files://a/b": "many a/b",
        "files://a/raw": "many a/raw",  # registered earlier, {+path} answers first
    }


# -- taking one away --------------------------------------------------------------------


async def test_removed_ones_can_be_registered_again() -> None:
    """Remove, then register under the same name or URI: the new one is served."""
    mcp = MCPServer("replacing")
    mcp.tool()(weather)
    mcp.prompt(name="plan")(outline)
    mcp.resource("config://app")(config)
    mcp.resource("users://{user_id}")(profile)

    mcp.remove_tool("weather")
    mcp.tool(name="weather")(forecast)
    mcp.remove_prompt("plan")
    mcp.prompt(name="plan")(lambda topic: f"Plan {topic}.")  # pyright: ignore[reportUnknownLambdaType, reportUnknownArgumentType]
    mcp.remove_resource("config://app")
    mcp.resource("config://app")(lambda: "debug=true")
    mcp.remove_resource("users://{user_id}")
    mcp.resource("users://{name}")(profile_by_name)

    async with Client(mcp, mode="legacy") as client:
        [tool] = await client.list_all_tools()
        called = await client.call_tool("weather", {"city": "Oslo"})
        prompt = await client.get_prompt("plan", {"topic": "tests"})
        fixed = await text_of(client, "config://app")
        [template] = await client.list_all_resource_templates()
        templated = await text_of(client, "users://ada")
    assert tool.description == "A copy of weather, not renamed."
    assert called.content == [TextContent(text="Rain in Oslo.")]
    assert prompt.messages[0].content == TextContent(text="Plan tests.")
    assert fixed == "debug=true"
    assert template.uri_template == "users://{name}"
    assert templated == "user named ada"


@pytest.mark.parametrize("mode", MODES)
async def test_what_was_removed_is_unlisted_and_unknown(mode: str) -> None:
    """In both generations: the lists leave it out, and asking for it fails as for
    anything that never existed; what was not removed is still served."""
    mcp = MCPServer("shrinking")
    mcp.tool()(weather)
    mcp.tool()(forecast)
    mcp.prompt()(outline)
    mcp.prompt(name="plan")(outline)
    mcp.resource("config://app")(config)
    mcp.resource("config://other")(config)
    mcp.resource("users://{user_id}")(profile)
    async with Client(mcp, mode=mode) as client:
        assert len(await client.list_all_tools()) == 2  # the client has listed them
        mcp.remove_tool("weather")
        mcp.remove_prompt("outline")
        mcp.remove_resource("config://app")
        mcp.remove_resource("users://{user_id}")
        tools = [tool.name for tool in await client.list_all_tools()]
        prompts = [prompt.name for prompt in await client.list_all_prompts()]
        resources = [resource.uri for resource in await client.list_all_resources()]
        templates = await client.list_all_resource_templates()
        with pytest.raises(MCPError, match=r"^Unknown tool 'weather'; call tools/list") as tool:
            await client.call_tool("weather", {"city": "Oslo"})
        with pytest.raises(MCPError, match=r"^Unknown prompt 'outline'; call prompts/list"):
            await client.get_prompt("outline", {"topic": "x"})
        with pytest.raises(MCPError, match=r"^Resource not found: config://app"):
            await client.read_resource("config://app")
        with pytest.raises(MCPError, match=r"^Resource not found: users://ada"):
            await client.read_resource("users://ada")
        kept = await client.call_tool("forecast", {"city": "Oslo"})
    assert tools == ["forecast"]
    assert prompts == ["plan"]
    assert resources == ["config://other"]
    assert templates == []
    assert tool.value.code == -32602
    assert kept.content == [TextContent(text="Rain in Oslo.")]


@pytest.mark.parametrize("mode", MODES)
async def test_a_call_already_running_finishes_after_its_tool_is_removed(mode: str) -> None:
    mcp = MCPServer("removing")
    started, release = anyio.Event(), anyio.Event()

    @mcp.tool()
    async def slow() -> str:
        started.set()
        await release.wait()
        return "finished"

    results: list[str] = []
    async with Client(mcp, mode=mode) as client:

        async def call() -> None:
            result = await client.call_tool("slow")
            [block] = result.content
            assert isinstance(block, TextContent)
            results.append(block.text)

        with anyio.fail_after(PATIENCE_SECONDS):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await started.wait()
                mcp.remove_tool("slow")
                release.set()
        with pytest.raises(MCPError, match="Unknown tool 'slow'"):
            await client.call_tool("slow")
    assert results == ["finished"]


class Name(BaseModel):
    name: str


def booking_server() -> MCPServer:
    mcp = MCPServer("bookings")

    @mcp.tool()
    async def book(ctx: Context) -> str:
        answer = await ctx.elicit("Whose booking?", schema=Name)
        return f"Booked for {answer.data.name}." if answer.action == "accept" else "-"

    return mcp


async def test_a_live_question_is_answered_after_its_tool_is_removed() -> None:
    """Legacy: the call is running while the client answers, so it finishes."""
    mcp = booking_server()

    async def answer(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        mcp.remove_tool("book")
        return ElicitResult(action="accept", content={"name": "Ada"})

    async with Client(mcp, mode="legacy", elicitation_callback=answer) as client:
        result = await client.call_tool("book")
        assert [tool.name for tool in await client.list_all_tools()] == []
    assert result.content == [TextContent(text="Booked for Ada.")]


async def test_a_2026_retry_for_a_removed_tool_fails_as_for_any_unknown_tool() -> None:
    """2026-07-28: the retry is a new request; its ``requestState`` does not bring the
    tool back, and it gets the error an unknown tool gets, before the state is opened."""
    mcp = booking_server()

    async def answer(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action="accept", content={"name": "Ada"})

    async with Client(mcp, mode="2026-07-28", elicitation_callback=answer) as client:
        first = await client.call_tool_round("book")
        assert isinstance(first, InputRequiredResult)
        answers = await client.answer_input_requests(first)
        mcp.remove_tool("book")
        with pytest.raises(MCPError) as retried:
            await client.call_tool_round(
                "book", input_responses=answers, request_state=first.request_state
            )
        with pytest.raises(MCPError) as unknown:
            await client.call_tool_round("never_was")
    assert retried.value.code == unknown.value.code == -32602
    assert str(retried.value) == str(unknown.value).replace("never_was", "book")
    assert str(retried.value).startswith("Unknown tool 'book'; call tools/list")


async def test_a_2026_question_answered_by_removing_its_tool_ends_the_call() -> None:
    """The same through ``call_tool``'s own loop: the answer removes the tool, and the
    retry the client sends with it is refused."""
    mcp = booking_server()

    async def answer(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        mcp.remove_tool("book")
        return ElicitResult(action="accept", content={"name": "Ada"})

    async with Client(mcp, mode="2026-07-28", elicitation_callback=answer) as client:
        with pytest.raises(MCPError, match=r"^Unknown tool 'book'"):
            await client.call_tool("book")


# -- what removing refuses ---------------------------------------------------------------


def served(mcp: MCPServer) -> None:
    mcp.tool()(weather)
    mcp.prompt()(outline)
    mcp.resource("config://app")(config)
    mcp.resource("users://{user_id}/profile")(profile)


# id: (the removal, the exception type, its message)
WRONG_REMOVALS: dict[str, tuple[Register, type[Exception], str]] = {
    "unknown tool": (
        lambda mcp: mcp.remove_tool("forecast"),
        ValueError,
        "Invalid argument for mcp.remove_tool(): name 'forecast' is not the name of a "
        "registered tool. Pass the name it was registered under: @mcp.tool(name=...), or "
        "else its function's name.",
    ),
    "a prompt's name as a tool": (
        lambda mcp: mcp.remove_tool("outline"),
        ValueError,
        "Invalid argument for mcp.remove_tool(): name 'outline' is not the name of a "
        "registered tool.",
    ),
    "unknown prompt": (
        lambda mcp: mcp.remove_prompt("weather"),
        ValueError,
        "Invalid argument for mcp.remove_prompt(): name 'weather' is not the name of a "
        "registered prompt. Pass the name it was registered under: @mcp.prompt(name=...), "
        "or else its function's name.",
    ),
    "unknown resource": (
        lambda mcp: mcp.remove_resource("config://other"),
        ValueError,
        "Invalid argument for mcp.remove_resource(): uri 'config://other' is not the URI of "
        "a registered resource or template. Pass the URI or URI template exactly as given "
        "to @mcp.resource().",
    ),
    "a URI a template serves": (
        lambda mcp: mcp.remove_resource("users://ada/profile"),
        ValueError,
        "Invalid argument for mcp.remove_resource(): uri 'users://ada/profile' is not the URI "
        "of a registered resource; the template 'users://{user_id}/profile' serves it. To "
        "take that template away, pass 'users://{user_id}/profile'.",
    ),
    "a template of the same shape": (
        lambda mcp: mcp.remove_resource("users://{name}/profile"),
        ValueError,
        "Invalid argument for mcp.remove_resource(): uri 'users://{name}/profile' is not a "
        "URI template registered here; 'users://{user_id}/profile' matches its URIs. To take "
        "that template away, pass 'users://{user_id}/profile'.",
    ),
    "an unknown template": (
        lambda mcp: mcp.remove_resource("users://{+path}"),
        ValueError,
        "Invalid argument for mcp.remove_resource(): uri 'users://{+path}' is not the URI of "
        "a registered resource or template. Pass the URI or URI template exactly as given to "
        "@mcp.resource().",
    ),
    "tool by its function": (
        lambda mcp: mcp.remove_tool(weather),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for mcp.remove_tool(): name must be a string, not the function "
        "weather. Pass the name the tool was registered under.",
    ),
    "tool None": (
        lambda mcp: mcp.remove_tool(None),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for mcp.remove_tool(): name must be a string, not None.",
    ),
    "prompt int": (
        lambda mcp: mcp.remove_prompt(5),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for mcp.remove_prompt(): name must be a string, not int (5). Pass "
        "the name the prompt was registered under.",
    ),
    "resource bytes": (
        lambda mcp: mcp.remove_resource(b"config://app"),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for mcp.remove_resource(): uri must be a string, not bytes "
        "(b'config://app'). Pass the URI or URI template the resource was registered with.",
    ),
}


@pytest.mark.parametrize("case", list(WRONG_REMOVALS), ids=list(WRONG_REMOVALS))
def test_a_wrong_removal_is_refused_naming_it(case: str) -> None:
    """Refused, and nothing is taken away."""
    remove, kind, start = WRONG_REMOVALS[case]
    mcp = MCPServer("removals")
    served(mcp)
    with pytest.raises(kind) as caught:
        remove(mcp)
    assert type(caught.value) is kind
    assert str(caught.value).startswith(start), str(caught.value)
    remaining = mcp.capabilities
    assert remaining.tools is not None
    assert remaining.prompts is not None
    assert remaining.resources is not None


def test_removing_twice_is_refused_the_second_time() -> None:
    mcp = MCPServer("removals")
    served(mcp)
    mcp.remove_tool("weather")
    with pytest.raises(ValueError, match="name 'weather' is not the name of a registered tool"):
        mcp.remove_tool("weather")


@pytest.mark.parametrize("mode", MODES)
async def test_a_kind_stays_declared_after_its_last_one_is_removed(mode: str) -> None:
    """A server whose tools change offers tools: a client that connects while it has none
    is still told so (a host lists only what is declared), and lists nothing."""
    mcp = MCPServer("emptied")
    mcp.tool()(weather)
    mcp.prompt()(outline)
    mcp.resource("config://app")(config)
    mcp.remove_tool("weather")
    mcp.remove_prompt("outline")
    mcp.remove_resource("config://app")
    async with Client(mcp, mode=mode) as client:
        declared = client.server_capabilities
        assert declared.tools == ToolsCapability(list_changed=True)
        assert declared.prompts == PromptsCapability(list_changed=True)
        assert declared.resources == ResourcesCapability(subscribe=True, list_changed=True)
        assert await client.list_all_tools() == []
        assert await client.list_all_prompts() == []
        assert await client.list_all_resources() == []


# -- what can be registered ---------------------------------------------------------------


# id: (the registration, how its TypeError reads)
NOT_FUNCTIONS: dict[str, tuple[Register, str]] = {
    "tool on a model class": (
        lambda mcp: mcp.tool()(Point),
        "Invalid argument for @mcp.tool(): the decorated object must be a function, not the "
        "class Point. Decorate a def or async def (one returning a Point, if that is what it "
        "should give), or register a method of an instance: mcp.tool()(instance.method).",
    ),
    "tool on a dataclass": (
        lambda mcp: mcp.tool()(Booking),
        "Invalid argument for @mcp.tool(): the decorated object must be a function, not the "
        "class Booking.",
    ),
    "tool on a class with __call__": (
        lambda mcp: mcp.tool(name="greet")(Greeter),
        "Invalid argument for @mcp.tool(): the decorated object must be a function, not the "
        "class Greeter.",
    ),
    "prompt on a class": (
        lambda mcp: mcp.prompt()(Point),
        "Invalid argument for @mcp.prompt(): the decorated object must be a function, not "
        "the class Point. Decorate a def or async def (one returning a Point, if that is "
        "what it should give), or register a method of an instance: "
        "mcp.prompt()(instance.method).",
    ),
    "resource on a class": (
        lambda mcp: mcp.resource("points://{x}/{y}")(Point),
        "Invalid argument for @mcp.resource(): the decorated object must be a function, not "
        "the class Point.",
    ),
    "tool on a classmethod": (
        lambda mcp: mcp.tool(name="make")(vars(Maker)["make"]),
        "Invalid argument for @mcp.tool(): the decorated object must be a function, not "
        "classmethod. A classmethod can be registered once its class exists: after the "
        "class body, write mcp.tool()(TheClass.method).",
    ),
}


@pytest.mark.parametrize("case", list(NOT_FUNCTIONS), ids=list(NOT_FUNCTIONS))
def test_a_class_is_refused_as_a_tool_prompt_or_resource(case: str) -> None:
    """Its constructor was served: a plain class's ``__init__`` types were lost, a
    ``__call__`` never called, and a prompt failed when got. Nothing is registered."""
    register, start = NOT_FUNCTIONS[case]
    mcp = MCPServer("classes")
    with pytest.raises(TypeError) as caught:
        register(mcp)
    assert str(caught.value).startswith(start), str(caught.value)
    declared = mcp.capabilities
    assert (declared.tools, declared.prompts, declared.resources) == (None, None, None)


async def test_methods_are_still_registered() -> None:
    """What the class's message suggests works: a bound method, a ``staticmethod`` in
    a class body, a classmethod taken from its class, a function building the model."""
    mcp = MCPServer("methods")

    class Tools:
        @mcp.tool()
        @staticmethod
        def double(x: int) -> int:
            return 2 * x

        @classmethod
        def triple(cls, x: int) -> int:
            return 3 * x

    mcp.tool()(Tools.triple)
    mcp.tool()(Greeter("you").greet)

    @mcp.tool()
    def point(x: int, y: int) -> Point:
        return Point(x=x, y=y)

    async with Client(mcp, mode="legacy") as client:
        names = [tool.name for tool in await client.list_all_tools()]
        doubled = await client.call_tool("double", {"x": 2})
        tripled = await client.call_tool("triple", {"x": 2})
        greeted = await client.call_tool("greet", {"name": "Ada"})
        made = await client.call_tool("point", {"x": 1, "y": 2})
    assert names == ["double", "triple", "greet", "point"]
    assert doubled.structured_content == {"result": 4}
    assert tripled.structured_content == {"result": 6}
    assert greeted.content == [TextContent(text="Hello, Ada.")]
    assert made.structured_content == {"x": 1, "y": 2}


# -- names the specification advises against --------------------------------------------


@pytest.mark.parametrize("name", ["my tool", "files/search", "café", "x" * 129, "a,b"])
def test_a_tool_name_the_specification_advises_against_is_warned_of(
    name: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A SHOULD, so registered; but a host handing it to a model API may be refused."""
    mcp = MCPServer("names")
    mcp.tool(name=name)(weather)
    assert name in mcp._registry.tools  # pyright: ignore[reportPrivateUsage]
    [record] = [r for r in caplog.records if r.name == "answerback.server"]
    assert record.levelname == "WARNING"
    assert record.getMessage().startswith(f"tool name {name!r} is not 1 to 128 of the characters")


@pytest.mark.parametrize(
    "name", ["getUser", "DATA_EXPORT_v2", "admin.tools.list", "a-b", "x" * 128]
)
def test_an_advised_tool_name_is_not_warned_of(name: str, caplog: pytest.LogCaptureFixture) -> None:
    mcp = MCPServer("names")
    mcp.tool(name=name)(weather)
    assert not [r for r in caplog.records if r.name == "answerback.server"]
