"""A GUI or web host on the answer layer (stop 55, probe p3's findings).

- Only an accepted form's answer carries ``content``: one for a link, or for a form the
  person declined or cancelled, is sent without it, in both eras, whether a callback or
  a broker's presenter built it (what the person typed and chose not to send stays).
- ``open_link`` is public: a presenter opens an accepted link the way ``UrlConsent`` does.
- ``form.coerce`` reads what a web page posts: text as typed, JSON values as they are.
"""

from __future__ import annotations

import logging

import pytest

from answerback import Client
from answerback.client import ClientRequestContext, open_link
from answerback.forms import AnswerError, parse_form
from answerback.interact import Answer, Broker, Question
from answerback.server import Context, MCPServer
from answerback.types import (
    MODERN_VERSIONS,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
)
from answerback.urls import judge_url

pytestmark = pytest.mark.anyio

SECRET = "hunter2"
"""What the person typed into the form before pressing "Decline"."""

wire = MCPServer("Wire")


@wire.tool()
async def link(ctx: Context) -> dict[str, object]:
    answer = await ctx.session.elicit_url("Sign in", "https://accounts.example.com/", "e-1")
    return answer.model_dump(by_alias=True, exclude_none=True, exclude={"meta"})


@wire.tool()
async def form(ctx: Context) -> dict[str, object]:
    schema = {"type": "object", "properties": {"password": {"type": "string"}}}
    answer = await ctx.session.elicit_form("Password?", schema)
    return answer.model_dump(by_alias=True, exclude_none=True, exclude={"meta"})


def answer_with_content(action: str) -> ElicitResult:
    """What a GUI builds from its form's state, whichever button was pressed."""
    assert action in ("accept", "decline", "cancel")
    return ElicitResult(action=action, content={"password": SECRET})


class ContentEverywhere:
    """A presenter that puts the form's state into every answer (``actions`` in turn)."""

    def __init__(self, *actions: str) -> None:
        self.actions = list(actions)

    async def present(self, question: Question) -> Answer:
        return answer_with_content(self.actions.pop(0))

    async def withdrawn(self, question: Question, reason: str) -> None:
        raise AssertionError(f"nothing is withdrawn here ({reason})")


ASKED = [
    ("link", "accept"),
    ("form", "decline"),
    ("form", "cancel"),
    ("link", "decline"),
]


@pytest.mark.parametrize("mode", ["legacy", MODERN_VERSIONS[0]])
@pytest.mark.parametrize("answerer", ["callback", "presenter"])
async def test_only_an_accepted_form_answer_reaches_the_server_with_content(
    mode: str, answerer: str, caplog: pytest.LogCaptureFixture
) -> None:
    received: list[object] = []
    actions = [action for _, action in ASKED]

    async def callback(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        return answer_with_content(actions.pop(0))

    async def ask_all(client: Client) -> None:
        for tool, _ in ASKED:
            received.append((await client.call_tool(tool)).structured_content)
        # An accepted form keeps its content: it is what the person sent.
        actions.append("accept")
        received.append((await client.call_tool("form")).structured_content)

    if answerer == "callback":
        async with Client(wire, mode=mode, elicitation_callback=callback) as client:
            await ask_all(client)
    else:
        presenter = ContentEverywhere(*actions, "accept")
        async with (
            Broker(presenter) as broker,
            Client(wire, mode=mode, responder=broker.responder("wire")) as client,
        ):
            await ask_all(client)
    assert received == [
        {"action": "accept"},
        {"action": "decline"},
        {"action": "cancel"},
        {"action": "decline"},
        {"action": "accept", "content": {"password": SECRET}},
    ]
    warnings = [r for r in caplog.records if "only an accepted form carries" in r.getMessage()]
    assert len(warnings) == 1, "one warning a connection, not one per answer"
    assert "answered a link with 'accept'" in warnings[0].getMessage()
    assert SECRET not in caplog.text


async def test_open_link_opens_the_canonical_url_of_the_verdict() -> None:
    opened: list[str] = []

    def browser(url: str) -> bool:
        opened.append(url)
        return True

    verdict = judge_url("HTTPS://Accounts.Example.COM:443/sign-in")
    assert await open_link(verdict, opener=browser) is None
    assert opened == [verdict.canonical_url] == ["https://accounts.example.com/sign-in"]


async def test_open_link_says_why_a_link_did_not_open() -> None:
    def no_browser(url: str) -> bool:
        return False

    def broken_browser(url: str) -> bool:
        raise OSError("no display")

    verdict = judge_url("https://accounts.example.com/")
    assert await open_link(verdict, opener=no_browser) == "no browser could be opened"
    assert await open_link(verdict, opener=broken_browser) == (
        "opening the browser failed (OSError: no display)"
    )


async def test_open_link_never_opens_a_blocked_link() -> None:
    opened: list[str] = []

    def browser(url: str) -> bool:
        opened.append(url)
        return True

    verdict = judge_url("https://apple.com@evil.example/pay")
    assert verdict.blocked
    assert await open_link(verdict, opener=browser) == "the link was judged never safe to open"
    assert opened == []


class LinkPage:
    """A web page's presenter: on "accept" it opens the link itself, as broker.md says."""

    def __init__(self) -> None:
        self.opened: list[str] = []

    def browser(self, url: str) -> bool:
        self.opened.append(url)
        return True

    async def present(self, question: Question) -> Answer:
        assert question.verdict is not None
        assert isinstance(question.params, ElicitRequestURLParams)
        not_opened = await open_link(question.verdict, opener=self.browser)
        return ElicitResult(action="accept" if not_opened is None else "cancel")

    async def withdrawn(self, question: Question, reason: str) -> None:
        raise AssertionError(f"nothing is withdrawn here ({reason})")


async def test_a_presenter_opens_an_accepted_link_with_open_link() -> None:
    page = LinkPage()
    async with (
        Broker(page) as broker,
        Client(wire, responder=broker.responder("wire")) as client,
    ):
        result = await client.call_tool("link")
    assert result.structured_content == {"action": "accept"}
    assert page.opened == ["https://accounts.example.com/"]


POSTED_FORM = parse_form(
    {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "nights": {"type": "integer", "minimum": 1, "maximum": 14, "default": 1},
            "vegan": {"type": "boolean"},
            "extras": {"type": "array", "items": {"type": "string", "enum": ["tea", "cake"]}},
        },
        "required": ["name"],
    }
)


def test_coerce_takes_what_a_web_page_posts_text_and_json_values_alike() -> None:
    posted = {"name": "Ada", "nights": 3, "vegan": True, "extras": ["cake"]}
    assert POSTED_FORM.coerce(posted) == posted
    # Text from <input>s and values from widgets, in one post; null is no answer.
    mixed = {"name": " Ada ", "nights": None, "vegan": "yes", "extras": ["tea"]}
    assert POSTED_FORM.coerce(mixed) == {
        "name": " Ada ",
        "vegan": True,
        "extras": ["tea"],
        "nights": 1,
    }


def test_coerce_names_each_field_whose_posted_value_has_the_wrong_type() -> None:
    with pytest.raises(AnswerError) as caught:
        POSTED_FORM.coerce({"name": 5, "nights": True, "vegan": 1, "extras": 3})
    assert [str(error) for error in caught.value.errors] == [
        "name: must be text, not 5",
        "nights: must be a whole number, not true",
        "vegan: must be true or false, not 1",
        "extras: must be a list of choices, not 3",
    ]


def test_a_field_coerces_a_json_value_and_none() -> None:
    nights = POSTED_FORM["nights"]
    assert nights.coerce(None) is None
    assert nights.coerce(4.0) == 4
    with pytest.raises(AnswerError, match="nights: must be at most 14"):
        nights.coerce(20)


def test_coerce_refuses_a_post_that_is_not_an_object() -> None:
    with pytest.raises(AnswerError, match="the answer must be an object of field values"):
        POSTED_FORM.coerce(["Ada"])  # type: ignore[arg-type]


async def test_the_warning_names_the_server_and_never_the_content(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def decline_with_typing(
        context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        return answer_with_content("decline")

    caplog.set_level(logging.WARNING, "answerback.client")
    async with Client(wire, elicitation_callback=decline_with_typing) as client:
        result = await client.call_tool("form")
    assert result.structured_content == {"action": "decline"}
    [warning] = [r for r in caplog.records if r.name == "answerback.client"]
    assert warning.getMessage().startswith(
        "elicitation_callback answered a form with 'decline' from the server 'Wire'"
    )
    assert SECRET not in warning.getMessage()
