"""The server's forms come from ``answerback.forms``: what it sends, what it refuses, and
how it checks the answer.

The form a tool sends is the restricted form ``answerback.forms.form_schema`` builds, spelt
as the seed shows a callback receiving it (the model's title on top, keys sorted). A model
the form cannot hold is refused before anything is sent, with the forms error that says
how to write it. An accepted answer that does not fit is refused with every bad field
named, in both eras; the answers here are sent by hand, past any client-side check.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any, Literal

import anyio
import pytest
from pydantic import BaseModel, EmailStr, Field
from support import LIBRARY_SERVER, PATIENCE_SECONDS, RawPeer, peer_pair, target

from answerback import Client
from answerback.client import ClientRequestContext
from answerback.forms import FormSchemaError, parse_form
from answerback.forms import form_schema as restricted_form_schema
from answerback.server import Context, MCPServer, form_schema
from answerback.server._asking import content_digest
from answerback.server._form_schema import form_question
from answerback.types import (
    INVALID_PARAMS,
    MODERN_VERSIONS,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    InputRequiredResult,
    InvalidParamsError,
    TextContent,
)

pytestmark = pytest.mark.anyio

MODERN = MODERN_VERSIONS[0]

# What the seed document shows ``params.requested_schema`` printing as, character for character.
SEED_PRINTED = (
    "{'properties': {'name': {'title': 'Name', 'type': 'string'}}, "
    "'required': ['name'], 'title': 'CardHolder', 'type': 'object'}"
)


class Booking(BaseModel):
    """A hotel booking."""

    name: str = Field(min_length=2)
    email: EmailStr
    nights: int = Field(default=1, ge=1, le=14)
    room: Literal["std", "sea"] = "std"
    extras: list[Literal["breakfast", "parking"]] = []
    note: str | None


class Score(BaseModel):
    score: Literal[1, 2, 3]


def asking_server() -> MCPServer:
    mcp = MCPServer("Forms")

    @mcp.tool()
    async def book(ctx: Context) -> str:
        answer = await ctx.elicit("Your booking?", Booking)
        if answer.action != "accept":
            return answer.action
        return f"{answer.data.name} for {answer.data.nights} night(s), note={answer.data.note}"

    @mcp.tool()
    async def rate(ctx: Context) -> str:
        answer = await ctx.elicit("How was it?", Score)
        return answer.action

    return mcp


# -- what is sent -------------------------------------------------------------------------


def test_the_seed_model_gives_the_seed_schema_in_the_seed_order() -> None:
    class CardHolder(BaseModel):
        name: str

    assert str(form_schema(CardHolder)) == SEED_PRINTED


@pytest.mark.parametrize("transport", ["memory", "stdio"])
async def test_the_seed_callback_receives_the_schema_the_seed_prints(transport: str) -> None:
    """Through a real connection the callback's ``requested_schema`` prints as the seed's."""
    printed: list[str] = []

    async def record(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        assert params.mode == "form"
        printed.append(str(params.requested_schema))
        return ElicitResult(action="accept", content={"name": "Ada Lovelace"})

    async with Client(
        target(transport, LIBRARY_SERVER), mode="legacy", elicitation_callback=record
    ) as client:
        result = await client.call_tool("issue_card")
    assert result.content == [TextContent(text="Card issued to Ada Lovelace.")]
    assert printed == [SEED_PRINTED]


def test_the_server_sends_the_form_answerback_forms_builds() -> None:
    """One home for forms: the server adds only the model's title and description."""
    sent = form_schema(Booking)
    assert sent.pop("title") == "Booking"
    assert sent.pop("description") == "A hotel booking."
    assert sent == restricted_form_schema(Booking)
    assert parse_form(sent).schema == restricted_form_schema(Booking)
    assert list(sent["properties"]) == ["name", "email", "nights", "room", "extras", "note"]
    assert sent["properties"]["note"] == {"title": "Note", "type": "string"}
    assert sent["required"] == ["name", "email"]


def test_each_caller_gets_its_own_copy() -> None:
    form_schema(Booking)["properties"].clear()
    assert "name" in form_schema(Booking)["properties"]


def test_a_question_built_once_goes_out_as_built_each_time_and_fresh() -> None:
    """``ctx.elicit`` reuses its params (a 2026-07-28 retry asks the same again): they are
    what ``elicit_form`` would send, keyed by the same digest, and each ask's own dict."""
    question = form_question("Book a room?", Booking)
    sent = ElicitRequestFormParams(
        message="Book a room?", requested_schema=form_schema(Booking)
    ).to_wire()
    assert question.params() == sent
    assert question.digest == content_digest("elicitation/create", sent)
    question.params()["requestedSchema"]["properties"].clear()
    assert form_question("Book a room?", Booking).params() == sent
    assert form_question("Book two rooms?", Booking).params()["message"] == "Book two rooms?"


def test_number_choices_are_refused_saying_how_to_write_them() -> None:
    with pytest.raises(FormSchemaError) as caught:
        form_schema(Score)
    [problem] = caught.value.errors
    assert problem.field == "score"
    assert 'write Literal["1", "2", "3"] (or a StrEnum)' in problem.message
    assert "an int field with Field(ge=1, le=3)" in problem.message


@pytest.mark.parametrize("mode", ["legacy", MODERN])
async def test_a_tool_asking_with_number_choices_fails_and_nobody_is_asked(mode: str) -> None:
    asked: list[ElicitRequestParams] = []

    async def record(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params)
        return ElicitResult(action="accept", content={"score": "1"})

    async with Client(asking_server(), mode=mode, elicitation_callback=record) as client:
        result = await client.call_tool("rate")
    assert result.is_error
    [content] = result.content
    assert isinstance(content, TextContent)
    assert "Score cannot be asked for in an elicitation form" in content.text
    assert 'write Literal["1", "2", "3"]' in content.text
    assert asked == []


# -- what is accepted ---------------------------------------------------------------------

BAD_ANSWER = {"name": "A", "email": "ada@", "nights": 20, "room": "garden", "wine": "red"}
BAD_FIELDS = ["name", "email", "nights", "room", "wine"]


def check_refusal(error: InvalidParamsError) -> None:
    """The error names every bad field, in its message and its data."""
    assert error.message.startswith("The client's answer does not fit the requested Booking form")
    for field in BAD_FIELDS:
        assert f"{field}: " in error.message
    assert [entry["field"] for entry in error.data["errors"]] == BAD_FIELDS
    assert all(entry["message"] for entry in error.data["errors"])


@asynccontextmanager
async def legacy_peer(server: MCPServer) -> AsyncGenerator[RawPeer, None]:
    """A hand-driven legacy client that declared form elicitation, connected in-process."""
    with peer_pair() as (server_side, peer):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve_connection, *server_side)
            params: dict[str, Any] = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"elicitation": {"form": {}}},
                "clientInfo": {"name": "by-hand", "version": "0"},
            }
            await peer.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
            await peer.receive()
            await peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            yield peer
            peer.write_stream.close()


async def test_legacy_a_bad_answer_is_refused_naming_every_field() -> None:
    with anyio.fail_after(PATIENCE_SECONDS):
        async with legacy_peer(asking_server()) as peer:
            call: dict[str, Any] = {"name": "book", "arguments": {}}
            await peer.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
            question = await peer.receive()
            assert question["method"] == "elicitation/create"
            answer = {"action": "accept", "content": BAD_ANSWER}
            await peer.send({"jsonrpc": "2.0", "id": question["id"], "result": answer})
            response = await peer.receive()
    assert response["id"] == 2
    error = response["error"]
    assert error["code"] == INVALID_PARAMS
    check_refusal(InvalidParamsError(error["message"], error["data"]))


async def test_modern_a_bad_answer_is_refused_naming_every_field() -> None:
    async def not_used(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        raise AssertionError("the rounds are driven by hand; this only declares elicitation")

    async with Client(asking_server(), mode=MODERN, elicitation_callback=not_used) as client:
        first = await client.call_tool_round("book")
        assert isinstance(first, InputRequiredResult)
        [key] = first.input_requests or {}
        answers: dict[str, Any] = {key: {"action": "accept", "content": BAD_ANSWER}}
        with pytest.raises(InvalidParamsError) as caught:
            await client.call_tool_round(
                "book", input_responses=answers, request_state=first.request_state
            )
    check_refusal(caught.value)


@pytest.mark.parametrize("mode", ["legacy", MODERN])
async def test_a_good_answer_leaving_out_an_optional_field_gives_none(mode: str) -> None:
    async def accept(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action="accept", content={"name": "Ada", "email": "ada@example.com"})

    async with Client(asking_server(), mode=mode, elicitation_callback=accept) as client:
        result = await client.call_tool("book")
    assert result.content == [TextContent(text="Ada for 1 night(s), note=None")]
