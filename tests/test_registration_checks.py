"""Signatures that cannot mean what they say are refused when registered, not when called.

An unannotated ``ctx`` would otherwise be a required input that no client knows to send,
and the mistake would show only as a failed call. Other unannotated parameters are
inputs that accept any JSON value.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from answerback import Client
from answerback.server import Context, MCPServer, form_schema
from answerback.types import TextContent

pytestmark = pytest.mark.anyio


class OtherContext:
    """A class named ``Context`` from somewhere else (code moved from another SDK)."""


OtherContext.__name__ = OtherContext.__qualname__ = "Context"


class Booking(BaseModel):
    day: str


def test_an_unannotated_ctx_is_refused_when_the_tool_is_registered() -> None:
    mcp = MCPServer("checks")

    def search(ctx, query: str) -> str:  # pyright: ignore[reportMissingParameterType, reportUnknownParameterType]
        return query

    with pytest.raises(TypeError) as caught:
        mcp.tool()(search)  # pyright: ignore[reportUnknownArgumentType]
    message = str(caught.value)
    assert "'test_an_unannotated_ctx_is_refused_when_the_tool_is_registered.<locals>.search'" in (
        message
    )
    assert "parameter 'ctx' has no annotation" in message
    assert "`ctx: Context`" in message


def test_an_unannotated_context_is_refused_for_prompts_and_resources_too() -> None:
    mcp = MCPServer("checks")

    def outline(context, topic: str) -> str:  # pyright: ignore[reportMissingParameterType, reportUnknownParameterType]
        return topic

    def page(name: str, ctx) -> str:  # pyright: ignore[reportMissingParameterType, reportUnknownParameterType]
        return name

    with pytest.raises(TypeError, match=r"parameter 'context' has no annotation.*`context: "):
        mcp.prompt()(outline)  # pyright: ignore[reportUnknownArgumentType]
    with pytest.raises(TypeError, match=r"parameter 'ctx' has no annotation"):
        mcp.resource("page://{name}")(page)  # pyright: ignore[reportUnknownArgumentType]


@pytest.mark.parametrize(
    ("annotation", "shown"),
    [
        (OtherContext, f"{__name__}.Context"),
        (list[Context], "list[answerback.server.Context]"),
    ],
    ids=["another-librarys-context", "context-inside-another-type"],
)
def test_a_context_the_server_cannot_pass_is_refused(annotation: Any, shown: str) -> None:
    mcp = MCPServer("checks")

    def search(query: str, ctx: Any) -> str:
        return query

    search.__annotations__["ctx"] = annotation
    with pytest.raises(TypeError) as caught:
        mcp.tool()(search)
    assert f"parameter 'ctx' is annotated {shown}" in str(caught.value)
    assert "from answerback.server import Context" in str(caught.value)


def test_two_context_parameters_are_refused() -> None:
    mcp = MCPServer("checks")

    def search(query: str, ctx: Context, again: Annotated[Context, "twice"]) -> str:
        return query

    with pytest.raises(TypeError, match=r"'ctx' and 'again' both take the Context"):
        mcp.tool()(search)


async def test_an_optional_context_is_passed_and_plain_parameters_take_any_value() -> None:
    """``ctx: Context | None`` receives the context; an unannotated ``x`` is an input
    whose schema allows any JSON value."""
    mcp = MCPServer("checks")

    @mcp.tool()
    def describe(x, ctx: Context | None = None) -> str:  # pyright: ignore[reportMissingParameterType, reportUnknownParameterType]
        given: object = x  # pyright: ignore[reportUnknownVariableType]
        return f"{given!r} with context: {isinstance(ctx, Context)}"

    async with Client(mcp, mode="legacy") as client:
        [tool] = (await client.list_tools()).tools
        result = await client.call_tool("describe", {"x": [1, "two"]})
    assert tool.input_schema["required"] == ["x"]
    assert "type" not in tool.input_schema["properties"]["x"]
    assert "ctx" not in tool.input_schema["properties"]
    [content] = result.content
    assert isinstance(content, TextContent)
    assert content.text == "[1, 'two'] with context: True"


class Kettle:
    """A class of the server's own, with no JSON Schema."""

    def __str__(self) -> str:
        return "a kettle, boiling"


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_return_type_json_cannot_describe_is_sent_as_text(mode: str) -> None:
    """``structured_output`` is "whenever the return annotation allows it": a class of
    the server's own does not, so the tool is registered without an output schema and
    its value goes out as text (registering it raised pydantic's schema error)."""
    mcp = MCPServer("checks")

    @mcp.tool()
    def boil() -> Kettle:
        return Kettle()

    async with Client(mcp, mode=mode) as client:
        [tool] = await client.list_all_tools()
        result = await client.call_tool("boil")
    assert tool.output_schema is None
    assert result.content == [TextContent(text="a kettle, boiling")]
    assert result.structured_content is None


def test_structured_output_asked_of_a_type_json_cannot_describe_is_refused() -> None:
    mcp = MCPServer("checks")

    def boil() -> Kettle:
        return Kettle()

    with pytest.raises(TypeError) as caught:
        mcp.tool(structured_output=True)(boil)
    assert str(caught.value) == (
        "tool 'boil': its return annotation Kettle has no JSON Schema; return a JSON type, "
        "a pydantic model, a dataclass or a TypedDict (typing_extensions.TypedDict before "
        "Python 3.12)"
    )
    assert caught.value.__cause__ is None
    assert mcp.capabilities.tools is None, "nothing was registered"


def test_parameters_a_client_cannot_send_are_named_when_registered() -> None:
    """pydantic's own error names one type and says to change a model's config, which a
    tool's author has no model to change: every such parameter is named instead."""
    mcp = MCPServer("checks")

    def brew(cups: int, kettle: Kettle, when_done: Callable[[int], int]) -> str:
        return ""

    with pytest.raises(TypeError) as caught:
        mcp.tool()(brew)
    assert str(caught.value) == (
        "tool 'brew': a client cannot send kettle (Kettle), when_done "
        "(collections.abc.Callable[[int], int]) as JSON; annotate each with a JSON "
        "type, a pydantic model, a dataclass or a TypedDict (typing_extensions.TypedDict "
        "before Python 3.12)"
    )
    assert "arbitrary_types_allowed" not in str(caught.value)
    assert caught.value.__cause__ is None


# -- the arguments of the decorators ---------------------------------------------------
#
# Registration runs when the server's module is imported: a wrong argument is the tool
# author's first error, so it names the decorator and the argument and says what to pass,
# alike for every decorator, instead of pydantic's error about the internal Tool model,
# a regex error, or (worse) nothing: ``@mcp.tool`` without parentheses registered no tool,
# and ``scopes="read"`` required the scopes r, e, a and d.


def weather(city: str) -> str:
    """Tell the weather."""
    return city


def page(name: str) -> str:
    return name


async def suggest(ref: Any, argument: Any, context: Any) -> list[str]:
    return []


def plain_suggest(ref: Any, argument: Any, context: Any) -> list[str]:
    return []


Register = Callable[[MCPServer], object]

# id: (the registration, the exception type, how its message starts)
REGISTRATION_MISTAKES: dict[str, tuple[Register, type[Exception], str]] = {
    "tool without parentheses": (
        lambda mcp: mcp.tool(weather),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for mcp.tool(): name must be a string or None, not the function "
        "weather. Write @mcp.tool(), with parentheses: mcp.tool() makes the decorator.",
    ),
    "tool name int": (
        lambda mcp: mcp.tool(5)(weather),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for mcp.tool(): name must be a string or None, not int (5). Pass "
        "the name clients see, or None for the function's name.",
    ),
    "tool name empty": (
        lambda mcp: mcp.tool("")(weather),
        ValueError,
        "Invalid argument for mcp.tool(): name is empty.",
    ),
    "tool title int": (
        lambda mcp: mcp.tool(title=5)(weather),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for mcp.tool(): title must be a string or None, not int (5).",
    ),
    "tool description list": (
        lambda mcp: mcp.tool(description=["a"])(weather),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for mcp.tool(): description must be a string or None, not list",
    ),
    "tool annotations int": (
        lambda mcp: mcp.tool(annotations=5)(weather),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for mcp.tool(): annotations must be a ToolAnnotations, not int (5). "
        "Pass ToolAnnotations(read_only_hint=True, ...), or None.",
    ),
    "tool annotations bad dict": (
        lambda mcp: mcp.tool(annotations={"readOnlyHint": "maybe"})(weather),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for mcp.tool(): annotations.readOnlyHint: Input should be a valid "
        "boolean",
    ),
    "tool structured_output str": (
        lambda mcp: mcp.tool(structured_output="yes")(weather),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for mcp.tool(): structured_output must be True, False or None, not "
        "str ('yes').",
    ),
    "tool input_schema list": (
        lambda mcp: mcp.tool(input_schema=[1])(weather),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for mcp.tool(): input_schema must be a dict (a JSON Schema), not "
        "list ([1]).",
    ),
    "tool scopes str": (
        lambda mcp: mcp.tool(scopes="read")(weather),
        TypeError,
        "Invalid argument for mcp.tool(): scopes must be a list of strings, not str ('read'). "
        "Pass a list of OAuth scope names, such as ['files:read'].",
    ),
    "tool scopes of ints": (
        lambda mcp: mcp.tool(scopes=["read", 1])(weather),  # type: ignore[list-item]
        TypeError,
        "Invalid argument for mcp.tool(): scopes[1] must be a string, not int (1).",
    ),
    "tool on an int": (
        lambda mcp: mcp.tool()(5),  # type: ignore[type-var]
        TypeError,
        "Invalid argument for @mcp.tool(): the decorated object must be a function, not int "
        "(5). Decorate a def or async def",
    ),
    "tool on a partial": (
        lambda mcp: mcp.tool(name="p")(functools.partial(weather, "Oslo")),
        TypeError,
        "Invalid argument for @mcp.tool(): the decorated object must be a function, not partial",
    ),
    "tool on a lambda": (
        lambda mcp: mcp.tool()(lambda city: city),  # pyright: ignore[reportUnknownLambdaType, reportUnknownArgumentType]
        ValueError,
        "Invalid argument for mcp.tool(): name is needed for a lambda, which has no name of "
        "its own. Pass name=..., or register a def.",
    ),
    "resource without a uri": (
        lambda mcp: mcp.resource(page),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for mcp.resource(): uri must be a string, not the function page. "
        "Write @mcp.resource(uri) with the resource's URI",
    ),
    "resource uri None": (
        lambda mcp: mcp.resource(None)(page),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for mcp.resource(): uri must be a string, not None.",
    ),
    "resource uri without a scheme": (
        lambda mcp: mcp.resource("readme")(page),
        ValueError,
        "Invalid argument for mcp.resource(): uri must start with a scheme, not 'readme'. Pass "
        "an absolute URI, such as 'config://app'",
    ),
    "resource unclosed placeholder": (
        lambda mcp: mcp.resource("page://{name")(page),
        ValueError,
        "Invalid argument for mcp.resource(): uri 'page://{name' has a brace outside a "
        "placeholder.",
    ),
    "resource placeholder twice": (
        lambda mcp: mcp.resource("page://{name}/{name}")(page),
        ValueError,
        "Invalid argument for mcp.resource(): uri 'page://{name}/{name}' has the placeholders "
        "['name'] more than once.",
    ),
    "resource mime_type int": (
        lambda mcp: mcp.resource("page://{name}", mime_type=5)(page),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for mcp.resource(): mime_type must be a string or None, not int (5).",
    ),
    "resource name int": (
        lambda mcp: mcp.resource("page://{name}", name=5)(page),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for mcp.resource(): name must be a string or None, not int (5).",
    ),
    "resource on a string": (
        lambda mcp: mcp.resource("page://home")("home"),  # type: ignore[type-var]
        TypeError,
        "Invalid argument for @mcp.resource(): the decorated object must be a function, not "
        "str ('home').",
    ),
    "prompt without parentheses": (
        lambda mcp: mcp.prompt(weather),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for mcp.prompt(): name must be a string or None, not the function "
        "weather. Write @mcp.prompt(), with parentheses",
    ),
    "prompt description int": (
        lambda mcp: mcp.prompt(description=5)(weather),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for mcp.prompt(): description must be a string or None, not int (5).",
    ),
    "completion without parentheses": (
        lambda mcp: mcp.completion(suggest),  # type: ignore[arg-type]
        TypeError,
        "Invalid use of mcp.completion(): it takes no arguments. Write @mcp.completion(), "
        "with parentheses, above the async handler.",
    ),
    "completion on a plain function": (
        lambda mcp: mcp.completion()(plain_suggest),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for @mcp.completion(): the handler must be an async function, not "
        "the function plain_suggest.",
    ),
    "completion on None": (
        lambda mcp: mcp.completion()(None),  # type: ignore[arg-type]
        TypeError,
        "Invalid argument for @mcp.completion(): the handler must be an async function, not None.",
    ),
}


@pytest.mark.parametrize("case", list(REGISTRATION_MISTAKES), ids=list(REGISTRATION_MISTAKES))
def test_a_wrong_registration_argument_is_refused_naming_it(case: str) -> None:
    """Refused when registering, and nothing is registered (the server still declares
    no tools, resources, prompts or completions)."""
    register, kind, start = REGISTRATION_MISTAKES[case]
    mcp = MCPServer("checks")
    with pytest.raises(kind) as caught:
        register(mcp)
    assert type(caught.value) is kind
    assert str(caught.value).startswith(start), str(caught.value)
    declared = mcp.capabilities
    assert (declared.tools, declared.resources, declared.prompts, declared.completions) == (
        None,
        None,
        None,
        None,
    )


async def test_what_the_registration_checks_let_through_still_works() -> None:
    """Scopes as a tuple, annotations as a dict, a ``{+path}`` template, a class's
    ``Context`` annotation: all registered as before."""
    mcp = MCPServer("checks")
    mcp.tool(scopes=("files:read",), annotations={"readOnlyHint": True})(weather)  # type: ignore[arg-type]
    mcp.resource("files://{+path}", mime_type="text/plain")(lambda path: path)  # pyright: ignore[reportUnknownLambdaType, reportUnknownArgumentType]
    mcp.prompt(name="outline", title="Outline")(page)
    mcp.completion()(suggest)
    assert mcp.tool_scopes() == {"weather": frozenset({"files:read"})}
    async with Client(mcp, mode="legacy") as client:
        [tool] = (await client.list_tools()).tools
        [template] = (await client.list_resource_templates()).resource_templates
    assert tool.annotations is not None
    assert tool.annotations.read_only_hint is True
    assert template.uri_template == "files://{+path}"
    assert mcp.capabilities.completions is not None


def test_form_schema_refuses_what_is_no_model_class() -> None:
    """It raised ``unhashable type`` for a dict or an instance, and an AttributeError for
    ``None`` or a class that is no model."""
    for given, shown in [
        ({"type": "object"}, "dict ({'type': 'object'})"),
        (Booking(day="Monday"), "Booking (Booking(day='Monday'))"),
        (str, "the class str"),
        (None, "None"),
    ]:
        with pytest.raises(TypeError) as caught:
            form_schema(given)  # type: ignore[arg-type]
        assert str(caught.value) == (
            f"Invalid argument for form_schema(): model must be a pydantic model class, not "
            f"{shown}. Pass the class of a pydantic model whose fields are the form's "
            "(strings, numbers, booleans, choices), e.g. form_schema(Booking), not an instance."
        )
    assert form_schema(Booking)["properties"] == {"day": {"title": "Day", "type": "string"}}


async def test_notify_resource_updated_refuses_a_uri_that_is_no_string() -> None:
    mcp = MCPServer("checks")
    with pytest.raises(TypeError) as caught:
        await mcp.notify_resource_updated(5)  # type: ignore[arg-type]
    assert str(caught.value) == (
        "Invalid argument for mcp.notify_resource_updated(): uri must be a string, not int "
        "(5). Pass the URI of the resource that changed, as a string."
    )
