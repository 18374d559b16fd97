"""Forms past the size limits: refused at once, naming the limit and the size, at both ends.

A server sent a terminal client 10,000 fields, 100,000 choices and a megabyte of
message, and the client froze. ``parse_form`` (so ``form_schema`` too) and
``check_message`` refuse such forms with ``FormTooLarge`` before reading them item by
item, and a client answers the server's ``elicitation/create`` with invalid params.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import create_model

from answerback import Client, MCPError
from answerback.client import ClientRequestContext
from answerback.forms import (
    MAX_CHOICES,
    MAX_FIELDS,
    MAX_TEXT_LENGTH,
    AnswerError,
    FieldError,
    FormSchemaError,
    FormTooLarge,
    UnsupportedForm,
    check_message,
    form_schema,
    parse_form,
)
from answerback.forms._fields import MAX_PATTERN_LENGTH
from answerback.forms._limits import cut_description
from answerback.forms._patterns import PATTERN_SECONDS
from answerback.server import Context, MCPServer
from answerback.types import INVALID_PARAMS, ElicitRequestParams, ElicitResult, TextContent

LONG = "x" * (MAX_TEXT_LENGTH + 1)
TOO_LONG = f"is {MAX_TEXT_LENGTH + 1:,} characters long, more than the 65,536 a form shows"
TOO_MANY_CHOICES = "holds 4,097 choices, more than the 4,096 a field may offer"
CHOICES = [f"option {n}" for n in range(MAX_CHOICES + 1)]
TITLED = [{"const": choice, "title": choice} for choice in CHOICES]


def form_of(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


def too_large(schema: dict[str, Any]) -> list[tuple[str | None, str]]:
    with pytest.raises(FormTooLarge) as caught:
        parse_form(schema)
    assert str(caught.value).startswith("The requested form is too large to show: ")
    return [(error.field, error.message) for error in caught.value.errors]


def test_the_limits() -> None:
    assert (MAX_FIELDS, MAX_CHOICES, MAX_TEXT_LENGTH) == (256, 4096, 65_536)


def test_a_form_at_every_limit_is_read() -> None:
    text = "x" * MAX_TEXT_LENGTH
    fields: dict[str, Any] = {f"f{n}": {"type": "boolean"} for n in range(MAX_FIELDS - 1)}
    fields[text] = {
        "type": "string",
        "title": text,
        "description": text,
        "enum": [text, *CHOICES[: MAX_CHOICES - 1]],
        "default": text,
    }
    form = parse_form(form_of(**fields))
    assert len(form.fields) == MAX_FIELDS
    check_message(text)


@pytest.mark.parametrize(
    ("definition", "expected"),
    [
        ({"type": "string", "enum": CHOICES}, f'"enum" {TOO_MANY_CHOICES}'),
        (
            {"type": "string", "enum": CHOICES[:2], "enumNames": CHOICES},
            f'"enumNames" {TOO_MANY_CHOICES}',
        ),
        ({"type": "string", "oneOf": TITLED}, f'"oneOf" {TOO_MANY_CHOICES}'),
        (
            {"type": "array", "items": {"type": "string", "enum": CHOICES}},
            f'"items.enum" {TOO_MANY_CHOICES}',
        ),
        ({"type": "array", "items": {"anyOf": TITLED}}, f'"items.anyOf" {TOO_MANY_CHOICES}'),
        (
            {"type": "array", "items": {"type": "string", "enum": ["a"]}, "default": CHOICES},
            f'"default" {TOO_MANY_CHOICES}',
        ),
        ({"type": "boolean", "title": LONG}, f'"title" {TOO_LONG}'),
        ({"type": "number", "description": LONG}, f'"description" {TOO_LONG}'),
        ({"type": "string", "default": LONG}, f'"default" {TOO_LONG}'),
        ({"type": "string", "pattern": LONG}, f'"pattern" {TOO_LONG}'),
        ({"type": "string", "enum": ["a", LONG]}, f'a choice in "enum" {TOO_LONG}'),
        (
            {"type": "string", "oneOf": [{"const": "a", "title": LONG}]},
            f'a choice in "oneOf" {TOO_LONG}',
        ),
        (
            {"type": "array", "items": {"anyOf": [{"const": LONG, "title": "a"}]}},
            f'a choice in "items.anyOf" {TOO_LONG}',
        ),
    ],
    ids=[
        "enum",
        "enumNames",
        "oneOf",
        "items.enum",
        "items.anyOf",
        "multi-select default",
        "title",
        "description",
        "default",
        "pattern",
        "enum value",
        "oneOf title",
        "anyOf value",
    ],
)
def test_a_field_past_a_limit_is_refused_naming_the_limit_and_the_size(
    definition: dict[str, Any], expected: str
) -> None:
    assert too_large(form_of(pick=definition)) == [("pick", expected)]


def test_a_form_past_a_limit_is_refused_naming_the_limit_and_the_size() -> None:
    many = {f"f{n}": {"type": "boolean"} for n in range(MAX_FIELDS + 1)}
    assert too_large(form_of(**many)) == [
        (None, '"properties" holds 257 fields, more than the 256 a form may have')
    ]
    required: dict[str, Any] = {"type": "object", "properties": {}, "required": ["a"] * 257}
    assert too_large(required) == [
        (None, '"required" lists 257 names, more than the 256 fields a form may have')
    ]
    [(field, message)] = too_large({"type": "object", "properties": {LONG: {"type": "boolean"}}})
    assert field is None, "a name too long to show is not shown whole"
    assert message == f'the field name "{"x" * 58}… {TOO_LONG}'


def test_sizes_are_judged_before_anything_is_read_item_by_item() -> None:
    """A refusal for size lists no other problem: nothing else was looked at, so a
    hundred thousand bad choices (or fields) cost no more than a good one."""
    numbers = list(range(100_000))
    assert too_large(form_of(pick={"type": "string", "enum": numbers})) == [
        ("pick", '"enum" holds 100,000 choices, more than the 4,096 a field may offer')
    ]
    nested = {f"f{n}": {"type": "object"} for n in range(10_000)}
    assert too_large(form_of(**nested)) == [
        (None, '"properties" holds 10,000 fields, more than the 256 a form may have')
    ]


def test_a_form_too_large_is_an_unsupported_form_and_its_problems_are_only_sizes() -> None:
    schema = form_of(big={"type": "string", "title": LONG}, nested={"type": "object"})
    with pytest.raises(UnsupportedForm) as caught:
        parse_form(schema)
    assert isinstance(caught.value, FormTooLarge)
    assert caught.value.errors == (FieldError("big", f'"title" {TOO_LONG}'),)


def test_a_message_past_the_limit_is_refused() -> None:
    with pytest.raises(FormTooLarge) as caught:
        check_message(LONG)
    assert caught.value.errors == (FieldError(None, f"the message {TOO_LONG}"),)


def test_a_server_cannot_build_a_form_past_the_limits() -> None:
    """The server builds its form with the same code, so it learns before sending."""
    fields: dict[str, Any] = {f"f{n}": (bool, False) for n in range(MAX_FIELDS + 1)}
    model = create_model("Survey", **fields)
    with pytest.raises(FormSchemaError, match='"properties" holds 257 fields, more than the 256'):
        form_schema(model)


@pytest.mark.anyio
async def test_a_server_cannot_ask_with_a_message_past_the_limit() -> None:
    """``ctx.elicit`` and ``ctx.elicit_url`` check the message as the client will, so the
    tool learns before sending (and the person is not asked)."""
    mcp = MCPServer("wordy")
    refusals: list[str] = []

    @mcp.tool()
    async def ask(ctx: Context, link: bool) -> str:
        try:
            if link:
                await ctx.elicit_url(LONG, "https://example.com/ok", "e-1")
            else:
                await ctx.elicit(LONG, create_model("Ok", ok=(bool, ...)))
        except FormTooLarge as exc:
            refusals.append(str(exc.errors[0]))
        return "refused"

    asked: list[ElicitRequestParams] = []

    async def person(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params)
        return ElicitResult(action="decline")

    async with Client(mcp, mode="legacy", elicitation_callback=person) as client:
        for link in (False, True):
            await client.call_tool("ask", {"link": link})
    assert refusals == [f"the message {TOO_LONG}"] * 2
    assert asked == []


# -- over the wire -------------------------------------------------------------------

OUTSIZED: dict[str, tuple[str, dict[str, Any]]] = {
    "fields": ("Many fields", form_of(**{f"f{n}": {"type": "boolean"} for n in range(300)})),
    "choices": ("Many choices", form_of(pick={"type": "string", "enum": CHOICES})),
    "message": (LONG, form_of(ok={"type": "boolean"})),
    "bound": ("A bound past any float", form_of(n={"type": "integer", "minimum": 10**400})),
}


def asking_server() -> MCPServer:
    """A server that sends a raw form by name, past its own checks, and reports the
    client's error answer."""
    mcp = MCPServer("outsized")

    @mcp.tool()
    async def ask(ctx: Context, form: str) -> str:
        message, schema = OUTSIZED.get(form, ("Fine?", form_of(ok={"type": "boolean"})))
        try:
            result = await ctx.session.elicit_form(message, schema)
        except MCPError as exc:
            return json.dumps({"code": exc.code, "message": exc.message, "data": exc.data})
        return result.action

    @mcp.tool()
    async def link(ctx: Context, message: str) -> str:
        try:
            result = await ctx.session.elicit_url(message, "https://example.com/ok", "e-1")
        except MCPError as exc:
            return json.dumps({"code": exc.code, "message": exc.message, "data": exc.data})
        return result.action

    return mcp


@pytest.mark.anyio
async def test_a_client_answers_a_form_too_large_with_invalid_params_naming_the_limit() -> None:
    asked: list[ElicitRequestParams] = []

    async def person(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params)
        return ElicitResult(action="decline")

    answers: dict[str, Any] = {}
    async with Client(asking_server(), mode="legacy", elicitation_callback=person) as client:
        for form in [*OUTSIZED, "fine"]:
            result = await client.call_tool("ask", {"form": form})
            [content] = result.content
            assert isinstance(content, TextContent)
            text = content.text
            answers[form] = text if form == "fine" else json.loads(text)
    assert answers.pop("fine") == "decline", "the session goes on"
    assert len(asked) == 1, "an outsized or broken form never reaches the person"
    too_many = "more than the 256 a form may have"
    expected = {
        "fields": ('"properties" holds 300 fields, ' + too_many, None),
        "choices": (f'"enum" {TOO_MANY_CHOICES}', "pick"),
        "message": (f"the message {TOO_LONG}", None),
        "bound": ('"minimum" must be a number from -1.8e+308 to 1.8e+308, not 1000', "n"),
    }
    for form, (reason, field) in expected.items():
        answer = answers[form]
        assert answer["code"] == INVALID_PARAMS
        assert reason in answer["message"]
        [error] = answer["data"]["errors"]
        assert error["field"] == field
        assert reason in error["message"]
        if form == "bound":
            assert "Send a flat form as the MCP specification restricts it." in answer["message"]
        else:
            assert answer["message"].startswith("The requested form is too large to show: ")
            assert answer["message"].endswith(
                "Ask for less at a time: split the form, or shorten its text."
            )


@pytest.mark.anyio
async def test_a_link_whose_message_is_past_the_limit_is_refused_with_invalid_params() -> None:
    """URL mode has no form to bound, but its message is shown as a form's is: the same
    limit, refused before the person sees anything."""
    asked: list[ElicitRequestParams] = []

    async def person(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params)
        return ElicitResult(action="decline")

    async with Client(asking_server(), mode="legacy", elicitation_callback=person) as client:
        refused = await client.call_tool("link", {"message": LONG})
        fine = await client.call_tool("link", {"message": "x" * MAX_TEXT_LENGTH})
    assert [params.message for params in asked] == ["x" * MAX_TEXT_LENGTH]
    assert fine.content == [TextContent(text="decline")]
    [content] = refused.content
    assert isinstance(content, TextContent)
    answer = json.loads(content.text)
    assert answer["code"] == INVALID_PARAMS
    assert answer["message"] == (
        "The link's message is 65,537 characters long, more than the 65,536 a client shows. "
        "Shorten it: the page behind the link can say the rest."
    )
    assert answer["data"]["errors"] == [{"field": None, "message": f"the message {TOO_LONG}"}]


def test_a_tool_description_past_the_limit_is_cut_saying_how_much_is_not_shown() -> None:
    """Above the form that asks a tool's arguments: the person chose to call the tool,
    so its description is cut rather than the call refused."""
    assert cut_description("x" * MAX_TEXT_LENGTH) == "x" * MAX_TEXT_LENGTH
    assert cut_description("y" * 1_000_000) == (
        "y" * MAX_TEXT_LENGTH + "… (description cut: 934,464 characters not shown)"
    )


def test_a_pattern_that_backtracks_is_stopped_at_its_deadline_and_the_answer_refused() -> None:
    """``re`` cannot be stopped: a pattern like this ran for minutes on a few dozen
    characters, with the client frozen. Checked with a deadline, the answer is refused
    saying why, and a long answer that the pattern checks quickly still passes."""
    field = parse_form(form_of(code={"type": "string", "pattern": "^(a|aa)+$"}))["code"]
    with pytest.raises(AnswerError) as caught:
        field.check("a" * 60 + "!")
    assert caught.value.errors == (
        FieldError(
            "code",
            f"could not be checked against the pattern ^(a|aa)+$ within {PATTERN_SECONDS:g} "
            "s: the server's pattern backtracks too much to check 61 characters",
        ),
    )
    assert field.check("a" * 5000) == "a" * 5000
    with pytest.raises(AnswerError, match="must match the pattern"):
        field.check("b")


def test_a_default_that_stalls_its_pattern_makes_the_form_unsupported_at_once() -> None:
    """A server picks the default, so it can pick the value its pattern backtracks on: the
    first such default refuses the form, without spending the deadline on every field."""
    stalling = {"type": "string", "pattern": "^(a|aa)+$", "default": "a" * 60 + "!"}
    fields = {f"f{n}": dict(stalling) for n in range(MAX_FIELDS)}
    with pytest.raises(UnsupportedForm) as caught:
        parse_form(form_of(**fields))
    assert caught.value.errors == (
        FieldError(
            "f0",
            f"its default could not be checked against the pattern ^(a|aa)+$ within "
            f"{PATTERN_SECONDS:g} s: the server's pattern backtracks too much to check 61 "
            "characters",
        ),
    )


def test_a_pattern_past_its_length_limit_is_refused() -> None:
    with pytest.raises(UnsupportedForm) as caught:
        parse_form(form_of(code={"type": "string", "pattern": "a" * (MAX_PATTERN_LENGTH + 1)}))
    assert '"pattern" is 1,025 characters long, more than the 1,024 a pattern may have' in str(
        caught.value
    )
