"""The options of the interact layer (``BrowserLogin``, ``Broker`` and its responders,
``Roots``, the sampling providers, policy, catalogue, sampler and audit log, and the
terminal presenters and screens) are checked when given, as ``Client``'s are
(tests/test_option_checks.py): a value of the wrong type is a ``TypeError``, one that
means nothing a ``ValueError``, naming the option and saying what to pass. Before, most
were taken and failed later: at the first login, question, sampling request or audit
line, deep inside with an ``AttributeError``, or never (``sampling="no"`` declared
sampling, ``SamplingPolicy(servers="github")`` allowed the servers named by one letter)."""

from __future__ import annotations

import argparse
import io
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from support import stable_id

from answerback.cli._model import ModelOptionError, model_sampler
from answerback.client import CallbackResponder
from answerback.forms import parse_form
from answerback.interact import Answer, Broker, BrokerResponder, BrowserLogin, Question, Roots
from answerback.interact.sampling import (
    AnthropicProvider,
    AuditLog,
    Limits,
    ModelCatalogue,
    ModelInfo,
    ModelSampler,
    OpenAIChatProvider,
    OpenAIQuirks,
    SamplingPolicy,
    SamplingResponder,
    approve_all,
)
from answerback.interact.terminal import (
    FormScreen,
    LinePresenter,
    SamplingScreen,
    ServerKeys,
    TerminalPresenter,
    UrlCard,
)
from answerback.types import CreateMessageRequestParams, ErrorData, SamplingCapability
from answerback.urls import ApprovedDomains, judge_url


class Nobody:
    """A presenter that answers nothing: enough to build a broker."""

    async def present(self, question: Question) -> Answer:
        return ErrorData(code=-1, message="nobody here")

    async def withdrawn(self, question: Question, reason: str) -> None:
        pass


PROVIDER = OpenAIChatProvider(base_url="http://127.0.0.1:9/v1")
CATALOGUE = ModelCatalogue([ModelInfo("tiny", PROVIDER)])
PARAMS = CreateMessageRequestParams.model_validate({"messages": [], "maxTokens": 5})
FORM = parse_form({"type": "object", "properties": {"name": {"type": "string"}}})


def browser_login(**options: Any) -> BrowserLogin:
    login = BrowserLogin(**options)
    login.close()
    return login


def broker(**options: Any) -> Broker:
    named: dict[str, Any] = {"presenter": Nobody(), **options}
    return Broker(**named)


def broker_responder(**options: Any) -> BrokerResponder:
    named: dict[str, Any] = {"server": "library", **options}
    return Broker(Nobody()).responder(**named)


def roots(**options: Any) -> Roots:
    return Roots(**options)


def openai_provider(**options: Any) -> OpenAIChatProvider:
    return OpenAIChatProvider(**options)


def anthropic_provider(**options: Any) -> AnthropicProvider:
    return AnthropicProvider(**options)


def quirks(**options: Any) -> OpenAIQuirks:
    return OpenAIQuirks(**options)


def limits(**options: Any) -> Limits:
    return Limits(**options)


def policy(**options: Any) -> SamplingPolicy:
    return SamplingPolicy(**options)


def audit_log(**options: Any) -> AuditLog:
    named: dict[str, Any] = {"target": io.StringIO(), **options}
    return AuditLog(**named)


def sampler(**options: Any) -> ModelSampler:
    named: dict[str, Any] = {"catalogue": CATALOGUE, **options}
    return ModelSampler(**named)


def sampler_responder(**options: Any) -> SamplingResponder:
    named: dict[str, Any] = {"server": "library", **options}
    return ModelSampler(CATALOGUE, approval=approve_all).responder(**named)


def catalogue(**options: Any) -> ModelCatalogue:
    return ModelCatalogue(**options)


def model_info(**options: Any) -> ModelInfo:
    named: dict[str, Any] = {"name": "tiny", "provider": PROVIDER, **options}
    return ModelInfo(**named)


def terminal_presenter(**options: Any) -> TerminalPresenter:
    return TerminalPresenter(**options)


def line_presenter(**options: Any) -> LinePresenter:
    named: dict[str, Any] = {"input": io.StringIO(), "output": io.StringIO(), **options}
    return LinePresenter(**named)


def form_screen(**options: Any) -> FormScreen:
    named: dict[str, Any] = {"form": FORM, "title": "Name", "message": "Who?", **options}
    return FormScreen(**named)


def url_card(**options: Any) -> UrlCard:
    named: dict[str, Any] = {
        "verdict": judge_url("https://example.com/login"),
        "message": "Log in",
        "server": "library",
        **options,
    }
    return UrlCard(**named)


def sampling_screen(**options: Any) -> SamplingScreen:
    named: dict[str, Any] = {"params": PARAMS, "server": "library", **options}
    return SamplingScreen(**named)


def server_keys(**options: Any) -> ServerKeys:
    named: dict[str, Any] = {"server": "library", "cancel_all": print, "mute": print, **options}
    return ServerKeys(**named)


Build = Callable[..., Any]

# (what builds, option, bad value, exception, words the message holds)
REFUSALS: list[tuple[Build, str, Any, type[Exception], tuple[str, ...]]] = [
    # BrowserLogin
    (browser_login, "timeout", 0, ValueError, ("positive, finite number of seconds",)),
    (browser_login, "timeout", -1, ValueError, ("positive",)),
    (browser_login, "timeout", math.nan, ValueError, ("finite",)),
    (browser_login, "timeout", "300", TypeError, ("number of seconds", "got '300'")),
    (browser_login, "timeout", True, TypeError, ("number of seconds",)),
    (browser_login, "timeout", math.inf, ValueError, ("finite",)),
    (browser_login, "path", 1, TypeError, ("a string", "'/callback'")),
    (browser_login, "path", "callback", ValueError, ("must start with '/'", "'/callback'")),
    (browser_login, "open_browser", "firefox", TypeError, ("function of the URL",)),
    (browser_login, "tell", "log", TypeError, ("shows a line of text",)),
    (browser_login, "confirm", True, TypeError, ("async function",)),
    (browser_login, "approved_domains", ["x.org"], TypeError, ("ApprovedDomains(",)),
    # Broker and Broker.responder
    (broker, "presenter", "terminal", TypeError, ("a Presenter", "present(question)")),
    (broker, "presenter", None, TypeError, ("a Presenter",)),
    (broker, "on_change", "refresh", TypeError, ("a function", "no arguments")),
    (broker, "max_waiting_per_server", "32", TypeError, ("must be an int", "questions")),
    (broker, "max_waiting_per_server", True, TypeError, ("must be an int",)),
    (broker, "max_waiting_per_server", 2.5, TypeError, ("must be an int",)),
    (broker, "max_waiting_per_server", 0, ValueError, ("must be positive", "got 0")),
    (broker_responder, "server", 1, TypeError, ("a string", "the person knows it by")),
    (broker_responder, "server", "", ValueError, ("must not be empty",)),
    (broker_responder, "roots", ["/tmp"], TypeError, ("Roots([...])",)),
    (broker_responder, "sampling", "no", TypeError, ("True, False or a SamplingCapability",)),
    (broker_responder, "sampling", None, TypeError, ("True, False",)),
    (broker_responder, "attempts", "3", TypeError, ("must be an int",)),
    (broker_responder, "attempts", True, TypeError, ("must be an int",)),
    (broker_responder, "attempts", 0, ValueError, ("must be positive",)),
    # Roots
    (roots, "paths", 5, TypeError, ("a list of directories", "or None")),
    (roots, "paths", [1], TypeError, ("a list of directories", "got 1 in it")),
    (roots, "paths", [None], TypeError, ("a list of directories",)),
    (roots, "confirm", "yes", TypeError, ("async function",)),
    # OpenAIChatProvider
    (openai_provider, "base_url", "localhost:11434/v1", ValueError, ("absolute http(s) URL",)),
    (openai_provider, "base_url", "api.openai.com/v1", ValueError, ("absolute http(s) URL",)),
    (openai_provider, "base_url", None, TypeError, ("a string", "http(s) URL")),
    (openai_provider, "api_key", "", ValueError, ("must not be empty", "or None")),
    (openai_provider, "api_key", 123, TypeError, ("a string", "not shown")),
    (openai_provider, "timeout", 0, ValueError, ("positive, finite number of seconds",)),
    (openai_provider, "timeout", "120", TypeError, ("number of seconds",)),
    (openai_provider, "timeout", None, TypeError, ("number of seconds",)),
    (openai_provider, "quirks", {}, TypeError, ("OpenAIQuirks(",)),
    (openai_provider, "client", "openai", TypeError, ("openai.AsyncOpenAI(", "a str")),
    (openai_provider, "http_client", "http", TypeError, ("httpx2.AsyncClient",)),
    # AnthropicProvider
    (anthropic_provider, "base_url", "api.anthropic.com", ValueError, ("absolute http(s) URL",)),
    (anthropic_provider, "api_key", "", ValueError, ("must not be empty",)),
    (anthropic_provider, "timeout", -1, ValueError, ("positive",)),
    (anthropic_provider, "client", 1, TypeError, ("anthropic.AsyncAnthropic(",)),
    (anthropic_provider, "http_client", 1, TypeError, ("httpx2.AsyncClient",)),
    # OpenAIQuirks
    (quirks, "max_tokens_field", "tokens", ValueError, ("'max_tokens'", "got 'tokens'")),
    (quirks, "tool_choice", "no", TypeError, ("True or False",)),
    (quirks, "stop", 0, TypeError, ("True or False",)),
    (quirks, "image_input", None, TypeError, ("True or False",)),
    (quirks, "max_stop_sequences", 0, ValueError, ("positive", "None (no limit)")),
    (quirks, "max_stop_sequences", "4", TypeError, ("must be an int",)),
    # Limits and SamplingPolicy
    (limits, "max_tokens", "100", TypeError, ("Limits.max_tokens", "must be an int")),
    (limits, "max_tokens", True, TypeError, ("must be an int",)),
    (limits, "max_tokens", 2.5, TypeError, ("must be an int",)),
    (limits, "requests", 0, ValueError, ("Limits.requests must be positive",)),
    (limits, "token_budget", -1, ValueError, ("positive", "None (no limit)")),
    (limits, "window_seconds", "60", TypeError, ("number of seconds",)),
    (limits, "window_seconds", True, TypeError, ("number of seconds",)),
    (limits, "window_seconds", math.inf, ValueError, ("finite",)),
    (limits, "window_seconds", math.nan, ValueError, ("finite",)),
    (policy, "limits", {"max_tokens": 5}, TypeError, ("Limits(",)),
    (policy, "per_server", {"github": {"requests": 1}}, TypeError, ("dict of server names",)),
    (policy, "per_server", [("github", Limits())], TypeError, ("dict of server names",)),
    (policy, "per_server", {1: Limits()}, TypeError, ("got 1: Limits(",)),
    (policy, "servers", "github", TypeError, ("a list of strings", "['github']")),
    (policy, "servers", [1], TypeError, ("a list of strings", "got 1 in it")),
    (policy, "models", "gpt-4o", TypeError, ("a list of strings", "['gpt-4o']")),
    (policy, "clock", 1.0, TypeError, ("a function returning seconds",)),
    # AuditLog
    (audit_log, "target", 3, TypeError, ("a path", "text stream")),
    (audit_log, "target", None, TypeError, ("a path",)),
    (audit_log, "target", "", ValueError, ("name the audit file",)),
    (audit_log, "target", "/no/such/dir/audit.jsonl", ValueError, ("does not exist",)),
    (audit_log, "target", "/", ValueError, ("not the directory",)),
    (audit_log, "target", io.BytesIO(), TypeError, ("binary mode", "'a'")),
    (audit_log, "clock", "now", TypeError, ("returning a datetime",)),
    # ModelSampler, its responders, the catalogue and its models
    (sampler, "catalogue", [ModelInfo("tiny", PROVIDER)], TypeError, ("ModelCatalogue([",)),
    (sampler, "catalogue", "tiny", TypeError, ("ModelCatalogue",)),
    (sampler, "policy", Limits(), TypeError, ("SamplingPolicy(",)),
    (sampler, "audit", "audit.jsonl", TypeError, ("AuditLog('audit.jsonl')",)),
    (sampler, "approval", True, TypeError, ("async function",)),
    (sampler, "context", "ctx", TypeError, ("async function",)),
    (sampler, "tools", "yes", TypeError, ("True or False",)),
    (sampler_responder, "server", 1, TypeError, ("a string",)),
    (sampler_responder, "inner", "broker", TypeError, ("a Responder", "capabilities()")),
    (catalogue, "models", "tiny", TypeError, ("a list of ModelInfo",)),
    (catalogue, "models", ModelInfo("tiny", PROVIDER), TypeError, ("a list of ModelInfo",)),
    (catalogue, "models", [("tiny", PROVIDER)], TypeError, ("a list of ModelInfo", "in it")),
    (model_info, "name", 1, TypeError, ("a string", "as its provider spells it")),
    (model_info, "provider", "openai", TypeError, ("a ModelProvider", "create_message(")),
    (model_info, "cost", "0.5", TypeError, ("a number between 0 and 1",)),
    (model_info, "speed", True, TypeError, ("a number between 0 and 1",)),
    # the terminal presenters and screens
    (terminal_presenter, "opener", "firefox", TypeError, ("function of the URL",)),
    (terminal_presenter, "sampler", "model", TypeError, ("async function",)),
    (terminal_presenter, "console", io.StringIO(), TypeError, ("a rich Console",)),
    (terminal_presenter, "on_screen", 1, TypeError, ("a function",)),
    (line_presenter, "input", "answers.txt", TypeError, ("a text stream", "sys.stdin")),
    (line_presenter, "input", io.BytesIO(), TypeError, ("a text stream", "binary")),
    (line_presenter, "output", "out.txt", TypeError, ("a text stream", "sys.stderr")),
    (line_presenter, "opener", None, TypeError, ("function of the URL",)),
    (line_presenter, "sampler", 1, TypeError, ("async function",)),
    (form_screen, "form", {"type": "object"}, TypeError, ("a Form", "parse_form(")),
    (form_screen, "title", 1, TypeError, ("a string",)),
    (form_screen, "message", None, TypeError, ("a string",)),
    (form_screen, "server", 1, TypeError, ("a string",)),
    (form_screen, "previous", "x", TypeError, ("dict of field names",)),
    (form_screen, "problems", "x", TypeError, ("AnswerError",)),
    (form_screen, "server_keys", "x", TypeError, ("ServerKeys(",)),
    (url_card, "verdict", "https://example.com", TypeError, ("UrlVerdict", "judge_url(")),
    (url_card, "server", None, TypeError, ("a string",)),
    (url_card, "message", 1, TypeError, ("a string",)),
    (sampling_screen, "params", {"messages": []}, TypeError, ("CreateMessageRequestParams",)),
    (sampling_screen, "sampler", "x", TypeError, ("async function",)),
    (sampling_screen, "server_keys", {}, TypeError, ("ServerKeys(",)),
    (server_keys, "server", None, TypeError, ("a string",)),
    (server_keys, "cancel_all", 1, TypeError, ("no arguments",)),
    (server_keys, "mute", None, TypeError, ("no arguments",)),
]


@pytest.mark.parametrize(
    ("build", "option", "value", "error", "words"),
    REFUSALS,
    ids=[f"{build.__name__}-{option}-{stable_id(value)}" for build, option, value, *_ in REFUSALS],
)
def test_a_bad_option_is_refused_when_given(
    build: Build, option: str, value: Any, error: type[Exception], words: tuple[str, ...]
) -> None:
    with pytest.raises(error) as raised:
        build(**{option: value})
    message = str(raised.value)
    assert type(raised.value) is error
    assert option in message or option == "models"  # ModelCatalogue's one argument
    for word in words:
        assert word in message


SECRET = "sk-hunter2-do-not-print"


@pytest.mark.parametrize(
    ("build", "option", "value"),
    [
        (openai_provider, "api_key", SECRET.encode()),
        (anthropic_provider, "api_key", [SECRET]),
        (openai_provider, "client", SECRET),
        (anthropic_provider, "client", SECRET),
    ],
    ids=["openai-api_key", "anthropic-api_key", "openai-client", "anthropic-client"],
)
def test_a_refused_key_is_not_repeated_in_the_error(build: Build, option: str, value: Any) -> None:
    """An API key of the wrong type, or passed as the client by mistake, is named by its
    type only: an exception's text ends up in logs."""
    with pytest.raises(TypeError) as raised:
        build(**{option: value})
    assert option in str(raised.value)
    assert SECRET not in str(raised.value)


def test_a_synchronous_sdk_client_is_refused() -> None:
    """Its calls return a result, not something to await: it would fail at the first
    sampling request."""
    openai = pytest.importorskip("openai")
    anthropic = pytest.importorskip("anthropic")
    with pytest.raises(TypeError, match=r"client must be an asynchronous openai client"):
        OpenAIChatProvider(client=openai.OpenAI(api_key="k"))
    with pytest.raises(TypeError, match=r"got a synchronous Anthropic"):
        AnthropicProvider(client=anthropic.Anthropic(api_key="k"))
    assert OpenAIChatProvider(client=openai.AsyncOpenAI(api_key="k")) is not None
    assert AnthropicProvider(client=anthropic.AsyncAnthropic(api_key="k")) is not None


def test_roots_refuses_one_path_for_a_list(tmp_path: Path) -> None:
    """Kept from before: one path, read a letter at a time, would grant '/', 't', ..."""
    with pytest.raises(TypeError, match=r"not one path"):
        Roots(str(tmp_path))


def test_the_cli_reports_a_bad_model_url_or_audit_file_as_an_option_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``answerback connect --model-url`` turns the provider's refusal into its own
    usage error; an ``OPENAI_API_KEY`` set but empty is no key, as before."""
    monkeypatch.setenv("OPENAI_API_KEY", "")

    def args(url: str, audit: str | None = None) -> argparse.Namespace:
        return argparse.Namespace(model_url=url, model="tiny", sampling_audit=audit)

    with pytest.raises(ModelOptionError, match=r"--model-url localhost:11434/v1: base_url"):
        model_sampler(args("localhost:11434/v1"))
    with pytest.raises(ModelOptionError, match=r"--sampling-audit .*does not exist"):
        model_sampler(args("http://127.0.0.1:11434/v1", str(tmp_path / "no" / "audit.jsonl")))
    made = model_sampler(args("http://127.0.0.1:11434/v1", str(tmp_path / "audit.jsonl")))
    assert made is not None
    assert made.audit is not None


async def _no(path: Path) -> bool:
    return False


async def _draft(params: CreateMessageRequestParams) -> Any:
    raise NotImplementedError


def test_good_options_still_work(tmp_path: Path) -> None:
    with BrowserLogin(
        open_browser=lambda url: True,
        tell=print,
        approved_domains=ApprovedDomains(),
        timeout=0.5,
        path="/cb",
    ) as login:
        assert login.redirect_uri.endswith("/cb")
        assert login.timeout == 0.5

    granted = Roots([tmp_path, f"file://{tmp_path}"], confirm=_no)
    assert granted.paths == [tmp_path.resolve()]
    made = Broker(Nobody(), on_change=lambda: None, max_waiting_per_server=1)
    assert made.responder("a", roots=granted, sampling=False, attempts=1).roots is granted
    assert made.responder("b", sampling=SamplingCapability()).capabilities().sampling

    http = httpx2.AsyncClient()
    openai = OpenAIChatProvider(
        base_url="HTTP://127.0.0.1:11434/v1/",
        api_key=None,
        quirks=OpenAIQuirks.local(),
        http_client=http,
        timeout=2.5,
    )
    assert openai.base_url == "HTTP://127.0.0.1:11434/v1"
    assert AnthropicProvider(api_key="k", timeout=1).base_url == "https://api.anthropic.com"
    assert OpenAIQuirks(max_tokens_field="max_tokens", max_stop_sequences=None).stop

    rules = SamplingPolicy(
        limits=Limits(max_tokens=10, requests=1, window_seconds=0.5, token_budget=100),
        per_server={"github": Limits()},
        servers=("github",),
        models={"tiny"},
        clock=lambda: 0.0,
    )
    assert rules.servers == frozenset({"github"})
    log = AuditLog(tmp_path / "audit.jsonl")
    assert AuditLog(str(tmp_path / "audit.jsonl")).target == str(tmp_path / "audit.jsonl")
    assert AuditLog(sys.stderr).target is sys.stderr
    catalogue = ModelCatalogue((ModelInfo("a", openai, cost=0, speed=1), ModelInfo("b", openai)))
    made_sampler = ModelSampler(catalogue, policy=rules, audit=log, approval=approve_all)
    assert made_sampler.responder("github", CallbackResponder()).server == "github"

    assert TerminalPresenter(sampler=_draft, on_screen=lambda app: None).sampler is _draft
    assert LinePresenter(input=io.StringIO(), output=io.StringIO(), opener=lambda url: True)
    keys = ServerKeys("library", lambda: None, lambda: None)
    assert form_screen(previous={"name": "Ada"}, server="library", server_keys=keys).form is FORM
    assert url_card(server_keys=keys).verdict.canonical_url
    assert sampling_screen(sampler=_draft, server_keys=keys).params is PARAMS
