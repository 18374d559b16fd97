"""What a host gives the client is checked before it is used or sent: sampling answers
against their request's tool rules, responders and callbacks when they are adopted (an
async function where one is awaited, a method for each capability declared), and links
against a length bound. The server learns of a policy's answer from ``ctx.elicit``; the
person learns that an HTTP server died; the host's objects say what they are.
"""

from __future__ import annotations

import functools
import io
import json
import logging
from typing import Any, cast

import anyio
import pytest
from http_support import free_port, python_server, serve_process
from pydantic import BaseModel
from support import PATIENCE_SECONDS, SERVERS

from answerback import Client, MCPError
from answerback.client import (
    HEADLESS_META,
    CallbackResponder,
    ClientRequestContext,
    ConsentAnswer,
    Headless,
    Responder,
    ResponderWrapper,
    UrlConsent,
    UrlConsentRequest,
    UrlElicitations,
)
from answerback.client._url_elicitation import refuse_blocked
from answerback.interact import SERVER_DISCONNECTED, Answer, Broker, Question, Roots
from answerback.interact.sampling import (
    AnthropicProvider,
    AuditLog,
    ModelCatalogue,
    ModelInfo,
    ModelSampler,
    OpenAIChatProvider,
    SamplingPolicy,
    SamplingProviderError,
    approve_all,
    from_anthropic_response,
    to_anthropic_request,
)
from answerback.server import Context, MCPServer
from answerback.types import (
    INTERNAL_ERROR,
    MODERN_VERSIONS,
    ClientCapabilities,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    ErrorData,
    InvalidParamsError,
    SamplingCapability,
    SamplingMessage,
    SamplingToolsCapability,
    TextContent,
    Tool,
    ToolChoice,
    ToolUseContent,
)
from answerback.types._sampling_rules import SamplingAnswerError, check_sampling_answer
from answerback.urls import MAX_URL_LENGTH, ReasonCode, RiskLevel, judge_url

pytestmark = pytest.mark.anyio

MODES = ["legacy", MODERN_VERSIONS[0]]
WITH_TOOLS = SamplingCapability(tools=SamplingToolsCapability())
WEATHER = Tool(name="get_weather", input_schema={"type": "object"})


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


def hello() -> SamplingMessage:
    return SamplingMessage(role="user", content=TextContent(text="Weather in Paris?"))


def tool_use(name: str) -> CreateMessageResult:
    return CreateMessageResult(
        role="assistant",
        model="m",
        stop_reason="toolUse",
        content=ToolUseContent(id="c1", name=name, input={}),
    )


def asking_server() -> MCPServer:
    """``ask(variant)`` samples with no tools, with ``get_weather`` offered, or with it
    offered under toolChoice "none", and reports the answer or the error."""
    mcp = MCPServer("Weather")

    @mcp.tool()
    async def ask(ctx: Context, variant: str) -> str:
        options: dict[str, Any] = {}
        if variant != "no tools":
            choice = "none" if variant == "none" else "auto"
            options = {"tools": [WEATHER], "tool_choice": ToolChoice(mode=choice)}
        try:
            reply = await ctx.session.create_message([hello()], max_tokens=20, **options)
        except MCPError as exc:
            return json.dumps({"code": exc.code, "message": exc.message, "data": exc.data})
        assert not isinstance(reply.content, list)
        return json.dumps({"content": reply.content.model_dump(mode="json", by_alias=True)})

    return mcp


async def asked(client: Client, variant: str) -> dict[str, Any]:
    """The answer ``ask`` got, or the error: the server's to report on a legacy
    connection; on 2026-07-28 an error answer fails the call at the client."""
    try:
        result = await client.call_tool("ask", {"variant": variant})
    except MCPError as exc:
        assert client.session.modern_version is not None
        return {"code": exc.code, "message": exc.message, "data": exc.data}
    [content] = result.content
    assert isinstance(content, TextContent)
    return json.loads(content.text)


# -- sampling answers keep the request's tool rules ---------------------------------------


def params(*, tools: list[Tool] | None = None, choice: str | None = None) -> Any:
    return CreateMessageRequestParams(
        messages=[hello()],
        max_tokens=20,
        tools=tools,
        tool_choice=ToolChoice(mode=choice) if choice else None,  # type: ignore[arg-type]
    )


def test_an_answer_may_use_only_the_tools_offered() -> None:
    check_sampling_answer(params(tools=[WEATHER]), tool_use("get_weather"))
    text = CreateMessageResult(role="assistant", model="m", content=TextContent(text="Sunny"))
    check_sampling_answer(params(), text)
    with pytest.raises(SamplingAnswerError, match="the request offered no tools"):
        check_sampling_answer(params(), tool_use("get_weather"))
    with pytest.raises(SamplingAnswerError, match='toolChoice "none"'):
        check_sampling_answer(params(tools=[WEATHER], choice="none"), tool_use("get_weather"))
    with pytest.raises(SamplingAnswerError, match="'rm_rf', which the request did not offer"):
        check_sampling_answer(params(tools=[WEATHER]), tool_use("rm_rf"))


def test_a_refused_answer_names_a_few_tools_each_cut_short() -> None:
    names = [f"{'x' * 100}{n}" for n in range(5)]
    answer = CreateMessageResult(
        role="assistant",
        model="m",
        content=[ToolUseContent(id=f"c{n}", name=name, input={}) for n, name in enumerate(names)],
    )
    with pytest.raises(SamplingAnswerError) as caught:
        check_sampling_answer(params(tools=[WEATHER]), answer)
    assert "and 2 more" in str(caught.value)
    assert "x" * 65 not in str(caught.value)


@pytest.mark.parametrize("variant", ["no tools", "offered", "none"])
async def test_a_callback_using_a_tool_not_allowed_is_refused_before_it_leaves(
    mode: str, variant: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def model(context: ClientRequestContext, p: CreateMessageRequestParams) -> Any:
        return tool_use("rm_rf" if variant == "offered" else "get_weather")

    caplog.set_level(logging.WARNING, "answerback.client")
    async with Client(
        asking_server(), mode=mode, sampling_callback=model, sampling_capabilities=WITH_TOOLS
    ) as client:
        error = await asked(client, variant)
    assert error["code"] == INTERNAL_ERROR
    assert error["data"] == {"reason": "tool_use_not_allowed"}
    assert "sampling_callback must use only the tools the request offers" in error["message"]
    [record] = [r for r in caplog.records if "sampling answer" in r.getMessage()]
    assert record.getMessage().startswith("refused sampling_callback's sampling answer to ")


async def test_a_tool_the_request_offered_goes_through(mode: str) -> None:
    async def model(context: ClientRequestContext, p: CreateMessageRequestParams) -> Any:
        return tool_use("get_weather")

    async with Client(
        asking_server(), mode=mode, sampling_callback=model, sampling_capabilities=WITH_TOOLS
    ) as client:
        answer = await asked(client, "offered")
    assert answer["content"]["name"] == "get_weather"


class ScriptedProvider:
    """A model that answers every request with ``answer``, or fails as ``failure``."""

    def __init__(
        self, answer: CreateMessageResult | None = None, failure: Exception | None = None
    ) -> None:
        self.answer = answer
        self.failure = failure

    async def create_message(
        self, params: CreateMessageRequestParams, *, model: str
    ) -> CreateMessageResult:
        if self.failure is not None:
            raise self.failure
        assert self.answer is not None
        return self.answer


def outcomes(log: io.StringIO) -> list[str]:
    lines = [json.loads(line) for line in log.getvalue().splitlines()]
    return [line["outcome"] for line in lines if line["event"] == "outcome"]


async def test_a_model_that_uses_a_tool_not_offered_is_a_provider_failure(mode: str) -> None:
    log = io.StringIO()
    provider = ScriptedProvider(tool_use("not_offered"))
    sampler = ModelSampler(
        ModelCatalogue([ModelInfo("m1", provider)]),
        approval=approve_all,
        audit=AuditLog(log),
        tools=True,
    )
    async with Client(asking_server(), mode=mode, responder=sampler.responder("weather")) as client:
        error = await asked(client, "offered")
    assert error["code"] == INTERNAL_ERROR
    assert error["data"] == {"reason": "provider_failed", "status": None}
    assert error["message"].startswith(
        "Sampling failed: model 'm1' could not answer: its answer broke the request's rules: "
        "it uses the tool 'not_offered', which the request did not offer."
    )
    assert outcomes(log) == ["failed"]


async def test_a_draft_that_breaks_the_rules_fails_like_the_provider() -> None:
    sampler = ModelSampler(
        ModelCatalogue([ModelInfo("m1", ScriptedProvider(tool_use("get_weather")))]),
        approval=approve_all,
    )
    with pytest.raises(SamplingProviderError, match="the request offered no tools"):
        await sampler.reply(params())


# -- the broker's sampling screen: a failure is "failed", and says provider_failed --------


class DraftingPerson:
    """A presenter whose sampling screen drafts with the sampler, as the terminal does;
    or one that fails outright (``broken``)."""

    def __init__(self, sampler: ModelSampler, *, broken: bool = False) -> None:
        self.sampler = sampler
        self.broken = broken

    async def present(self, question: Question) -> Answer:
        if self.broken:
            raise RuntimeError("the screen fell over")
        assert isinstance(question.params, CreateMessageRequestParams)
        return await self.sampler.reply(question.params)

    async def withdrawn(self, question: Question, reason: str) -> None:
        raise AssertionError("nothing is withdrawn here")


async def asked_on_screen(
    sampler: ModelSampler, person: DraftingPerson, mode: str
) -> dict[str, Any]:
    """What the server got for a sampling question ``person`` answered on the broker's
    screen, drafting with ``sampler``."""
    async with (
        Broker(person) as broker,
        Client(
            asking_server(),
            mode=mode,
            responder=sampler.responder("weather", broker.responder("weather")),
        ) as client,
    ):
        return await asked(client, "no tools")


async def test_a_provider_failing_on_the_broker_screen_is_failed_and_provider_failed(
    mode: str,
) -> None:
    log = io.StringIO()
    down = ScriptedProvider(failure=SamplingProviderError("HTTP 503", status=503))
    sampler = ModelSampler(ModelCatalogue([ModelInfo("m1", down)]), audit=AuditLog(log))
    error = await asked_on_screen(sampler, DraftingPerson(sampler), mode)
    assert error["code"] == INTERNAL_ERROR
    assert error["data"] == {"reason": "provider_failed", "status": 503}
    assert error["message"] == "Sampling failed: model 'm1' could not answer: HTTP 503"
    assert outcomes(log) == ["failed"]


async def test_a_presenter_that_raises_is_audited_as_failed(mode: str) -> None:
    log = io.StringIO()
    sampler = ModelSampler(
        ModelCatalogue([ModelInfo("m1", ScriptedProvider(tool_use("x")))]), audit=AuditLog(log)
    )
    error = await asked_on_screen(sampler, DraftingPerson(sampler, broken=True), mode)
    assert error["code"] == INTERNAL_ERROR
    [line] = [json.loads(line) for line in log.getvalue().splitlines()][-1:]
    assert line["outcome"] == "failed"
    assert line["message"] == "RuntimeError: the screen fell over"


# -- a dead HTTP server is told as a disconnection ----------------------------------------


class Screen:
    """A person who keeps the question on screen until it is withdrawn."""

    def __init__(self) -> None:
        self.on_screen = anyio.Event()
        self.told = anyio.Event()
        self.reason: str | None = None

    async def present(self, question: Question) -> Answer:
        self.on_screen.set()
        await anyio.Event().wait()
        raise AssertionError("unreachable: only a withdrawal ends this screen")

    async def withdrawn(self, question: Question, reason: str) -> None:
        self.reason = reason
        self.told.set()


async def test_an_http_server_that_dies_while_asking_is_said_to_have_disconnected() -> None:
    port = free_port()
    screen = Screen()
    script = python_server(SERVERS / "callback_server.py", "--http", str(port))
    with serve_process(script, port) as server:
        async with (
            Broker(screen) as broker,
            Client(
                f"http://127.0.0.1:{port}/mcp", mode="legacy", responder=broker.responder("cb")
            ) as client,
            anyio.create_task_group() as tg,
        ):

            async def ask() -> None:
                with pytest.raises(MCPError):
                    await client.call_tool("ask")

            tg.start_soon(ask)
            with anyio.fail_after(PATIENCE_SECONDS):
                await screen.on_screen.wait()
            server.kill()
            with anyio.fail_after(PATIENCE_SECONDS):
                await screen.told.wait()
    assert screen.reason == SERVER_DISCONNECTED


# -- responders and callbacks are checked when adopted ------------------------------------


class ForgotSample(Responder):
    def capabilities(self) -> ClientCapabilities:
        return ClientCapabilities(sampling=SamplingCapability())


def sampling_server() -> MCPServer:
    mcp = MCPServer("Oracle")

    @mcp.tool()
    async def ask(ctx: Context) -> str:
        return str(await ctx.session.create_message([hello()], max_tokens=5))

    return mcp


async def test_a_declared_capability_without_its_method_says_which_method(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``Client(...)`` refuses such a responder (below); ``Responder``'s own default, for a
    responder reached some other way, names the method rather than "not supported"."""
    caplog.set_level(logging.ERROR, "answerback.client")
    context = cast(ClientRequestContext, None)  # the default never reads it
    answer = await ForgotSample().sample(context, params())
    assert isinstance(answer, ErrorData)
    assert answer.code == INTERNAL_ERROR
    assert "ForgotSample does not override sample()" in answer.message
    assert answer.data == {"reason": "not_answered"}
    assert any("does not override sample()" in r.getMessage() for r in caplog.records)


def test_a_wrapper_refuses_a_declared_capability_without_its_method() -> None:
    overdeclared = r"declares 'sampling' but ForgotSample does not override sample\(\)"
    with pytest.raises(TypeError, match=overdeclared):
        ResponderWrapper(ForgotSample())
    with pytest.raises(TypeError, match="declares 'sampling'"):
        Headless("decline", inner=ForgotSample())


def test_a_responder_class_given_for_an_instance_is_refused_with_advice() -> None:
    with pytest.raises(TypeError, match=r"got the class ForgotSample: pass ForgotSample\(...\)"):
        ResponderWrapper(ForgotSample)  # type: ignore[arg-type]


def test_a_client_refuses_a_responder_class_or_a_responder_that_forgot_a_method() -> None:
    """``Client(responder=Forms)`` failed at the server's first question with "missing 1
    required positional argument: 'self'"."""
    with pytest.raises(TypeError, match=r"got the class ForgotSample: pass ForgotSample\(...\)"):
        Client(MCPServer("S"), responder=ForgotSample)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"declares 'sampling' but ForgotSample does not"):
        Client(MCPServer("S"), responder=ForgotSample())


def plain(context: Any, params: Any) -> ElicitResult:
    return ElicitResult(action="decline")


async def coroutine(context: Any, params: Any) -> ElicitResult:
    return ElicitResult(action="decline")


class AsyncCall:
    async def __call__(self, context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="decline")


class SyncCall:
    def __call__(self, context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="decline")


def options(keyword: str, callback: object) -> dict[str, Any]:
    return {keyword: callback}


@pytest.mark.parametrize(
    "keyword",
    [
        "elicitation_callback",
        "sampling_callback",
        "list_roots_callback",
        "logging_callback",
        "message_handler",
    ],
)
def test_a_plain_def_callback_is_refused_at_client(keyword: str) -> None:
    refusal = rf"{keyword} must be .*the plain function plain\(\): write it as `async def`"
    with pytest.raises(TypeError, match=refusal):
        Client(MCPServer("S"), **options(keyword, plain))
    with pytest.raises(TypeError, match="SyncCall"):
        Client(MCPServer("S"), **options(keyword, SyncCall()))
    with pytest.raises(TypeError, match="write it as `async def`"):
        Client(MCPServer("S"), **options(keyword, functools.partial(plain, None)))


async def test_async_callables_that_are_no_coroutine_functions_are_accepted(mode: str) -> None:
    mcp = MCPServer("Desk")

    class Name(BaseModel):
        name: str

    @mcp.tool()
    async def ask(ctx: Context) -> str:
        return (await ctx.elicit("Name?", Name)).action

    for callback in (AsyncCall(), functools.partial(coroutine), coroutine):
        async with Client(mcp, mode=mode, elicitation_callback=callback) as client:
            result = await client.call_tool("ask")
        assert result.content == [TextContent(text="decline")]


def test_a_responder_method_written_as_plain_def_is_refused() -> None:
    class SyncElicit(Responder):
        def capabilities(self) -> ClientCapabilities:
            return ClientCapabilities()

        def elicit(self, context: Any, params: ElicitRequestParams) -> Any:  # type: ignore[override]
            return ElicitResult(action="decline")

    refusal = r"SyncElicit\.elicit is a plain function: write it as `async def`"
    with pytest.raises(TypeError, match=refusal):
        ResponderWrapper(SyncElicit())


def test_hooks_that_are_awaited_refuse_a_plain_def() -> None:
    def confirm(_: object) -> bool:
        return True

    with pytest.raises(TypeError, match=r"confirm must be .*write it as `async def`"):
        Roots([], confirm=confirm)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Roots\.watch takes an async function"):
        Roots([]).watch(lambda: None)  # type: ignore[arg-type]
    catalogue = ModelCatalogue([ModelInfo("m", ScriptedProvider(tool_use("x")))])
    with pytest.raises(TypeError, match=r"approval must be .*write it as `async def`"):
        ModelSampler(catalogue, approval=confirm)  # type: ignore[arg-type]

    class SyncScreen:
        def present(self, question: Question) -> Answer:
            return ElicitResult(action="cancel")

        async def withdrawn(self, question: Question, reason: str) -> None:
            pass

    with pytest.raises(TypeError, match=r"SyncScreen\.present is a plain function"):
        Broker(SyncScreen())  # type: ignore[arg-type]


# -- the Anthropic provider reports a malformed answer as its failure ---------------------


def test_anthropic_tool_input_that_is_not_an_object_is_a_provider_failure() -> None:
    request = to_anthropic_request(params(tools=[WEATHER]), model="m")
    name = request.body["tools"][0]["name"]
    reply = {
        "content": [{"type": "tool_use", "id": "t1", "name": name, "input": '{"city": "Paris"}'}],
        "stop_reason": "tool_use",
    }
    refusal = "'get_weather' with input that is not a JSON object"
    with pytest.raises(SamplingProviderError, match=refusal):
        from_anthropic_response(reply, model="m", request=request)


@pytest.mark.parametrize("text", [None, 42, ["a"]])
def test_anthropic_text_that_is_not_a_string_is_a_provider_failure(text: object) -> None:
    request = to_anthropic_request(params(), model="m")
    reply = {"content": [{"type": "text", "text": text}], "stop_reason": "end_turn"}
    with pytest.raises(SamplingProviderError, match=r"text block whose text is .*not a string"):
        from_anthropic_response(reply, model="m", request=request)


# -- links have a length bound ------------------------------------------------------------


def test_a_link_past_the_bound_is_blocked_unread_and_shown_cut_short() -> None:
    url = "https://example.com/" + "a" * 3_000_000
    verdict = judge_url(url)
    assert verdict.level is RiskLevel.BLOCK
    assert verdict.codes == {ReasonCode.TOO_LONG}
    assert verdict.reasons[0].message.startswith("The link is 3,000,020 characters long")
    assert verdict.url == url
    assert verdict.canonical_url is None
    assert len(verdict.display.url) < 300


def test_a_link_at_the_bound_is_judged_as_usual() -> None:
    url = "https://example.com/"
    at_bound = url + "a" * (MAX_URL_LENGTH - len(url))
    assert judge_url(at_bound).level is RiskLevel.OK
    assert judge_url(at_bound + "a").codes == {ReasonCode.TOO_LONG}


def test_url_consent_refuses_a_plain_def_and_an_opener_that_cannot_be_called() -> None:
    def ask(request: UrlConsentRequest) -> ConsentAnswer:
        return "decline"

    with pytest.raises(TypeError, match=r"ask must be .*write it as `async def`"):
        UrlConsent(ask)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"forms must be .*write it as `async def`"):
        UrlConsent(coroutine_ask, forms=plain)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"opener must be a function of the URL, got 'firefox'"):
        UrlConsent(coroutine_ask, opener="firefox")  # type: ignore[arg-type]


async def coroutine_ask(request: UrlConsentRequest) -> ConsentAnswer:
    return "decline"


def test_a_refusal_quotes_a_link_past_the_bound_cut_short() -> None:
    """The refusal went back to the server with the whole 3,000,000 characters."""
    url = "https://example.com/" + "a" * (3 * MAX_URL_LENGTH)
    refusal = refuse_blocked(judge_url(url))
    assert refusal.data is not None
    assert refusal.data["url"] == url[:200] + "…"
    assert refusal.data["reasons"] == ["too-long"]


def test_the_client_refuses_a_link_past_the_bound() -> None:
    link = ElicitRequestURLParams(
        message="Open this", url="https://example.com/" + "a" * MAX_URL_LENGTH, elicitation_id="e"
    )
    with pytest.raises(InvalidParamsError, match=r"\(too-long\)|characters long"):
        UrlElicitations().admit(Client(MCPServer("Links")).session, link)


# -- ctx.elicit carries the answer's _meta ------------------------------------------------


class Visitor(BaseModel):
    name: str


def front_desk() -> MCPServer:
    mcp = MCPServer("Front desk")

    @mcp.tool()
    async def register(ctx: Context) -> dict[str, Any]:
        answer = await ctx.elicit("Who is visiting?", Visitor)
        return {"action": answer.action, "meta": answer.meta}

    return mcp


@pytest.mark.parametrize("policy", ["decline", "cancel"])
async def test_ctx_elicit_tells_a_policy_from_a_person(mode: str, policy: Any) -> None:
    responder = Headless(policy, reason="nightly job")
    async with Client(front_desk(), mode=mode, responder=responder) as client:
        result = await client.call_tool("register")
    assert result.structured_content == {
        "action": policy,
        "meta": {HEADLESS_META: {"policy": policy, "reason": "nightly job"}},
    }


async def test_ctx_elicit_gives_an_accepted_answer_its_meta(mode: str) -> None:
    async def person(context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"name": "Ada"}, meta={"seen": True})

    async def nobody_marks(context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="decline")

    async with Client(front_desk(), mode=mode, elicitation_callback=person) as client:
        accepted = await client.call_tool("register")
    async with Client(front_desk(), mode=mode, elicitation_callback=nobody_marks) as client:
        declined = await client.call_tool("register")
    assert accepted.structured_content == {"action": "accept", "meta": {"seen": True}}
    assert declined.structured_content == {"action": "decline", "meta": None}


# -- host objects say what they are -------------------------------------------------------


async def test_host_objects_have_reprs_without_secrets(tmp_path: Any) -> None:
    openai = OpenAIChatProvider(base_url="https://u:pw@llm.example/v1?key=s3", api_key="sk-1")
    anthropic = AnthropicProvider(api_key="sk-ant-2")
    sampler = ModelSampler(
        ModelCatalogue([ModelInfo("gpt", openai)]),
        policy=SamplingPolicy(servers=["weather"]),
        approval=approve_all,
        audit=AuditLog(str(tmp_path / "audit.jsonl")),
    )
    shown = {
        "openai": repr(openai),
        "anthropic": repr(anthropic),
        "sampler": repr(sampler),
        "roots": repr(Roots([str(tmp_path)])),
        "headless": repr(Headless("cancel", reason="cron")),
        "callbacks": repr(CallbackResponder(elicitation_callback=coroutine)),
    }
    async with Broker(Screen()) as broker:
        shown["broker"] = repr(broker)
        shown["responder"] = repr(broker.responder("weather"))
    assert shown["openai"].startswith("OpenAIChatProvider(base_url='https://llm.example/v1',")
    assert shown["anthropic"] == "AnthropicProvider(base_url='https://api.anthropic.com')"
    for part in ("models=['gpt']", "servers=['weather']", "approval=approve_all", "audit.jsonl"):
        assert part in shown["sampler"]
    assert shown["roots"] == f"Roots([{str(tmp_path)!r}])"
    assert shown["headless"].startswith("Headless('cancel', reason='cron', modes=['form', 'url']")
    assert shown["callbacks"] == "CallbackResponder(elicitation_callback=coroutine)"
    assert shown["broker"] == "Broker(presenter=Screen, pending=0, muted=[])"
    assert shown["responder"] == "BrokerResponder('weather', sampling=True, roots=None)"
    for text in shown.values():
        for secret in ("sk-", "pw", "s3"):
            assert secret not in text


def test_headless_refuses_a_reason_that_is_not_text() -> None:
    with pytest.raises(TypeError, match="reason must be a string"):
        Headless("decline", reason=5)  # type: ignore[arg-type]
