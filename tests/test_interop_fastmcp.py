"""answerback and FastMCP 4.2.3 (``fastmcp`` on PyPI) talking, both ways.

FastMCP runs only in subprocesses, never imported here: one FastMCP HTTP server
(``tests/interop/fastmcp_server.py``) serves every answerback client of the module, in
either era, and one run of FastMCP's client (``tests/interop/fastmcp_client.py``) plays
its scenarios against answerback's server (``tests/interop/answerback_for_fastmcp.py``)
at once; the tests check what it printed.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from http_support import INTEROP, PATIENCE_SECONDS, REPO, free_port, python_server, serve_process
from pydantic import FileUrl

from answerback import Client, MCPError
from answerback.client import ClientRequestContext
from answerback.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    ListRootsResult,
    Root,
    TextContent,
)

pytestmark = [pytest.mark.anyio, pytest.mark.interop]

FASTMCP_SERVER = INTEROP / "fastmcp_server.py"
FASTMCP_CLIENT = INTEROP / "fastmcp_client.py"
MODERN = "2026-07-28"


def _fastmcp_installed() -> None:
    if importlib.util.find_spec("fastmcp") is None:  # looked up, not imported
        pytest.fail("fastmcp is not installed: install the dev extra (pip install -e '.[dev]')")


@pytest.fixture(scope="module")
def fastmcp_url() -> Iterator[str]:
    """FastMCP's server over streamable HTTP, for the whole module."""
    _fastmcp_installed()
    port = free_port()
    with serve_process(python_server(FASTMCP_SERVER, "--http", str(port)), port):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def fastmcp_client_saw() -> dict[str, Any]:
    """What FastMCP's client saw of answerback's server, by scenario."""
    _fastmcp_installed()
    done = subprocess.run(
        [sys.executable, str(FASTMCP_CLIENT)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=PATIENCE_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    seen: dict[str, Any] = json.loads(done.stdout)
    return seen


# -- answerback's client, FastMCP's server ----------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", MODERN])
async def test_structured_output_from_fastmcp_fits_its_output_schemas(
    fastmcp_url: str, mode: str
) -> None:
    """Each listed output schema is applied to the tool's structured content."""
    async with Client(fastmcp_url, mode=mode) as client:
        listed = {tool.name: tool for tool in await client.list_all_tools()}
        assert listed["reading"].output_schema is not None
        one = await client.call_tool("reading", {"city": "Oslo"})
        many = await client.call_tool("readings")
        total = await client.call_tool("total", {"a": 2, "b": 3})
    assert one.structured_content == {"city": "Oslo", "celsius": 14, "note": None}
    assert many.structured_content == {
        "result": [
            {"city": "Oslo", "celsius": 14, "note": None},
            {"city": "Bergen", "celsius": 11, "note": "rain"},
        ]
    }
    assert total.structured_content == {"result": 5}


GUEST: dict[str, Any] = {"name": "Ada", "seats": 2}
PLAIN = {
    "How many seats?": 3,
    "Book it?": True,
    "Which table?": "garden",
    "Which dishes?": ["soup", "cake"],
}
TITLED = {"Which table?": "g", "Which dishes?": ["f"]}
"""The answer to each of FastMCP's one-field forms, by message, as plain or titled choices."""


class Forms:
    """Answers FastMCP's forms by their message, recording each schema."""

    def __init__(self) -> None:
        self.schemas: dict[str, dict[str, Any]] = {}

    async def __call__(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        assert isinstance(params, ElicitRequestFormParams)
        schema = params.requested_schema
        self.schemas[params.message] = schema
        if params.message == "Who is coming?":
            return ElicitResult(action="accept", content=GUEST)
        ((field, definition),) = schema["properties"].items()
        titled = "oneOf" in definition or "anyOf" in definition.get("items", {})
        answer = (TITLED if titled else PLAIN)[params.message]
        return ElicitResult(action="accept", content={field: answer})


@pytest.mark.parametrize(
    ("tool", "told"),
    [
        ("ask_guest", {"name": "Ada", "seats": 2, "table": "window"}),
        ("ask_count", 3),
        ("ask_sure", True),
        ("ask_table", "garden"),
        ("ask_titled_table", "g"),
        ("ask_dishes", ["soup", "cake"]),
        ("ask_titled_dishes", ["f"]),
    ],
)
async def test_fastmcp_forms_are_answered_on_a_legacy_connection(
    fastmcp_url: str, tool: str, told: Any
) -> None:
    """Each of FastMCP's response types. Its untitled multi-select has carried
    ``items.type`` since 4.2; the guard tool below still sends one without it."""
    forms = Forms()
    async with Client(fastmcp_url, mode="legacy", elicitation_callback=forms) as client:
        result = await client.call_tool(tool)
    assert not result.is_error, result.content
    assert result.structured_content == {"result": json.dumps(told)}
    if tool == "ask_dishes":
        schema = forms.schemas["Which dishes?"]
        items = {"type": "string", "enum": ["soup", "fish", "cake"]}
        assert schema["properties"]["value"]["items"] == items


async def test_a_fastmcp_guard_tool_is_answered_on_2026(fastmcp_url: str) -> None:
    """The guard asks two forms in one ``InputRequiredResult`` (one an untitled
    multi-select without ``items.type``); answerback's client answers both and retries
    with the state echoed."""
    forms = Forms()
    async with Client(fastmcp_url, mode=MODERN, elicitation_callback=forms) as client:
        assert client.protocol_version == MODERN
        result = await client.call_tool("book_table")
    assert not result.is_error, result.content
    assert result.structured_content is not None
    assert json.loads(result.structured_content["result"]) == {
        "state": "first-round",
        "answers": {
            "dishes": {"action": "accept", "content": {"dishes": ["soup", "cake"]}},
            "guest": {
                "action": "accept",
                "content": {"name": "Ada", "seats": 2, "table": "window"},
            },
        },
    }


class Trip:
    """Answers FastMCP's guard for a model's answer, the roots and a link, recording
    what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def model(
        self, context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult:
        (message,) = params.messages
        assert isinstance(message.content, TextContent)
        self.asked.append(f"model: {message.content.text}")
        return CreateMessageResult(
            role="assistant", model="scripted", content=TextContent(type="text", text="Oslo")
        )

    async def roots(self, context: ClientRequestContext) -> ListRootsResult:
        self.asked.append("roots")
        return ListRootsResult(roots=[Root(uri=FileUrl("file:///srv/trips"), name="trips")])

    async def link(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        assert isinstance(params, ElicitRequestURLParams)
        self.asked.append(f"link: {params.url} {params.elicitation_id}")
        return ElicitResult(action="accept")


async def test_a_fastmcp_guard_asking_for_sampling_roots_and_a_link_is_answered_on_2026(
    fastmcp_url: str,
) -> None:
    """One ``InputRequiredResult`` from FastMCP with a sampling request, a roots request
    and a URL-mode elicitation: each reaches its callback once (the link without the
    ``elicitationId`` FastMCP set, a field 2026-07-28 does not have) and FastMCP reads
    every answer from the retry."""
    trip = Trip()
    async with Client(
        fastmcp_url,
        mode=MODERN,
        sampling_callback=trip.model,
        list_roots_callback=trip.roots,
        elicitation_callback=trip.link,
    ) as client:
        result = await client.call_tool("plan_trip")
    assert not result.is_error, result.content
    assert sorted(trip.asked) == [
        "link: https://example.com/login None",  # 2026-07-28 has no elicitationId
        "model: Where to?",
        "roots",
    ]
    assert result.structured_content is not None
    assert json.loads(result.structured_content["result"]) == {
        "state": "trip",
        "answers": {
            "login": {"action": "accept"},
            "model": {
                "role": "assistant",
                "model": "scripted",
                "content": {"type": "text", "text": "Oslo"},
            },
            "roots": {"roots": [{"uri": "file:///srv/trips", "name": "trips"}]},
        },
    }


async def test_listen_refused_by_fastmcp_raises_before_the_block(fastmcp_url: str) -> None:
    """FastMCP answers ``subscriptions/listen`` with -32601 (an HTTP 404): the refusal is
    raised by ``listen()`` itself, the block never runs, and the connection goes on."""
    entered = False
    async with Client(fastmcp_url, mode=MODERN) as client:
        with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(MCPError) as raised:
            async with client.listen(tools_list_changed=True):
                entered = True
        after = await client.call_tool("total", {"a": 1, "b": 1})
    assert raised.value.code == -32601
    assert not isinstance(raised.value, BaseExceptionGroup)
    assert not entered
    assert after.structured_content == {"result": 2}


async def test_fastmcp_declares_no_subscriptions_so_none_is_asked(fastmcp_url: str) -> None:
    async with Client(fastmcp_url, mode="legacy") as client:
        resources = client.server_capabilities.resources
        assert resources is not None
        assert not resources.subscribe
        with pytest.raises(MCPError, match="does not offer resource subscriptions"):
            await client.subscribe_resource("notes://today")


# -- FastMCP's client, answerback's server ----------------------------------------------


def test_fastmcp_listens_and_is_told_only_what_was_honoured(
    fastmcp_client_saw: dict[str, Any],
) -> None:
    """answerback's server has no prompts and no resource at ``notes://nowhere``: its
    acknowledgement leaves them out, and the stream carries what it kept."""
    assert fastmcp_client_saw["listen"] == {
        "honoured": {"toolsListChanged": True, "resourceSubscriptions": ["notes://today"]},
        "events": ["ToolsListChanged", "ResourceUpdated notes://today"],
    }


@pytest.mark.parametrize(("mode", "version"), [("legacy", "2025-11-25"), (MODERN, MODERN)])
def test_fastmcp_answers_answerbacks_form(
    fastmcp_client_saw: dict[str, Any], mode: str, version: str
) -> None:
    """A live request on a legacy connection; on 2026-07-28 an ``InputRequiredResult``
    that FastMCP's client answers and retries."""
    assert fastmcp_client_saw[f"elicit {mode}"] == {
        "version": version,
        "text": "Hello, Grace Hopper.",
    }


@pytest.mark.parametrize("mode", ["legacy", MODERN])
def test_fastmcp_applies_answerbacks_output_schema(
    fastmcp_client_saw: dict[str, Any], mode: str
) -> None:
    assert fastmcp_client_saw[f"structured {mode}"] == {
        "structured": {"city": "Oslo", "celsius": 12, "summary": "showers"},
        "data": ["Forecast", "Oslo", 12, "showers"],
    }


@pytest.mark.parametrize("mode", ["legacy", MODERN])
def test_fastmcp_answers_answerbacks_link_roots_and_sampling_with_tools(
    fastmcp_client_saw: dict[str, Any], mode: str
) -> None:
    """FastMCP's client answers a URL-mode elicitation, a roots request and a sampling
    loop in which its model calls a tool of answerback's server (``weight_of``): a live
    request each on a legacy connection, rounds of ``InputRequiredResult`` on 2026-07-28."""
    asked = fastmcp_client_saw[f"asks {mode}"]
    assert asked["told"] == {
        "sign_in": "accept",
        "where": "file:///srv/project",
        "weigh": "2 rounds: An apple weighs 180 g.",
    }
    assert asked["links"] == [
        {
            "mode": "url",
            "message": "Sign in to continue.",
            "url": "https://example.com/login",
            "elicitationId": "login-1",
        }
    ]
    offered = {"tools": ["weight_of"], "toolChoice": None}
    assert asked["sampled"] == [
        {**offered, "last": ["text"]},
        {**offered, "last": ["tool_result"]},
    ]
