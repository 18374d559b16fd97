"""The server's view of the connected client, and the one place it asks the client.

A ``ServerSession`` is made for each request the server answers: it knows what the
client declared, sends what the tool author asks for (elicitation, sampling, roots) as
part of that request, and refuses up front to ask for anything the client did not
declare, because the specification forbids sending it.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import pydantic
from pydantic import BaseModel
from pydantic_core import PydanticSerializationError

from answerback.jsonrpc import IncomingRequest, JSONObject
from answerback.server._arguments import (
    JSON_ADVICE,
    LOG_LEVELS,
    SAMPLING_ADVICE,
    check_log_arguments,
    check_progress,
    check_sampling_options,
    check_text,
    unsendable,
    wrong_type,
)
from answerback.server._asking import AlreadySent, Asker, InputNeeded, QuestionParams
from answerback.server._form_schema import FormQuestion
from answerback.types import (
    ClientCapabilities,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitationCompleteNotificationParams,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    Implementation,
    IncludeContext,
    InvalidParamsError,
    ListRootsResult,
    LoggingLevel,
    LoggingMessageNotificationParams,
    MCPError,
    ModelPreferences,
    SamplingMessage,
    Tool,
    ToolChoice,
)
from answerback.types._errors import (
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    argument_error,
    shown_problems,
    validation_problems,
)
from answerback.types._sampling_rules import check_sampling_request
from answerback.types._versions import FEATURE_SINCE, Feature, has_feature, has_method

logger = logging.getLogger("answerback.server")

ResultT = TypeVar("ResultT", bound=BaseModel)


@dataclass(slots=True)
class ClientState:
    """What one connection's client told the server about itself."""

    protocol_version: str
    capabilities: ClientCapabilities
    client_info: Implementation
    log_level: LoggingLevel | None = None
    """Legacy: set by ``logging/setLevel`` (``None`` sends everything). Modern: the
    request's own opt-in (``None`` sends nothing)."""
    modern: bool = False
    initialized: bool = False


class ServerSession:
    """The client as seen from inside one request: what it declared, and how to ask it."""

    def __init__(
        self,
        client: ClientState,
        request: IncomingRequest,
        asker: Asker,
        already_sent: AlreadySent | None = None,
    ) -> None:
        self._client = client
        self._request = request
        self._asker = asker
        self._already_sent = already_sent
        """2026-07-28: what earlier rounds sent, so a re-run does not send it again."""
        self._last_progress: float | None = None
        """The progress this request last reported, which the next report must pass."""
        self._warned_of_progress_order = False
        """Whether a report that did not increase was logged: once per request is enough."""

    def __repr__(self) -> str:
        """Who the client is and what it speaks, for a debugger or a log line: never
        what it sent (arguments may hold secrets)."""
        return (
            f"ServerSession(client={self._client.client_info.name!r}, "
            f"protocol={self.protocol_version!r}, request_id={self._request.id!r})"
        )

    @property
    def protocol_version(self) -> str:
        """The protocol version this request speaks (negotiated, or its own on 2026-07-28)."""
        return self._client.protocol_version

    @property
    def client_capabilities(self) -> ClientCapabilities:
        """What the client declared it can answer (see ``check_client_capability``)."""
        return self._client.capabilities

    @property
    def client_info(self) -> Implementation:
        """The client's name and version, as it introduced itself."""
        return self._client.client_info

    def check_client_capability(self, capability: ClientCapabilities) -> bool:
        """Whether the client declared everything ``capability`` names (and their parts).

        Anything but a ``ClientCapabilities`` raises ``TypeError`` (a dict, say, would
        have counted as declared whatever it held)."""
        if not isinstance(cast(object, capability), ClientCapabilities):
            raise wrong_type(
                "ctx.session.check_client_capability()",
                "capability",
                "a ClientCapabilities",
                capability,
                "Pass ClientCapabilities(...) naming what to look for, e.g. "
                "ClientCapabilities(sampling=SamplingCapability()).",
            )
        return _covers(self._client.capabilities, capability)

    # -- asking the client -----------------------------------------------------------

    async def elicit_form(self, message: str, requested_schema: dict[str, Any]) -> ElicitResult:
        """Ask the user to fill in a form; prefer ``Context.elicit`` with a model.

        The form goes out as it is, for the client to judge; a ``message`` that is not a
        string, or a ``requested_schema`` that is not a dict, raises ``TypeError`` first.
        """
        call = "ctx.session.elicit_form()"
        check_text(
            call, "message", message, "Pass the question to show above the form, as a string."
        )
        if not isinstance(cast(object, requested_schema), dict):
            raise wrong_type(
                call,
                "requested_schema",
                "a dict (a JSON Schema)",
                requested_schema,
                "Pass the form's JSON Schema, such as form_schema(Model) (from "
                "answerback.server), or ask with ctx.elicit(message, Model).",
            )
        params = ElicitRequestFormParams(message=message, requested_schema=requested_schema)
        return await self._ask(
            "elicitation/create", params.to_wire(), ElicitResult, self._may_elicit_form
        )

    async def elicit_question(self, question: FormQuestion) -> ElicitResult:
        """``elicit_form`` with the params built already (``Context.elicit``)."""
        return await self._ask(
            "elicitation/create",
            question.params,
            ElicitResult,
            self._may_elicit_form,
            question.digest,
        )

    def _may_elicit_form(self) -> None:
        elicitation = self._client.capabilities.elicitation
        if elicitation is None:
            raise self._not_supported("Elicitation", "elicitation")
        if elicitation.url is not None and elicitation.form is None:
            raise self._not_supported("Form elicitation", "elicitation.form")
        self._require("elicitation", "Elicitation")

    async def elicit_url(self, message: str, url: str, elicitation_id: str) -> ElicitResult:
        """Ask the user to visit ``url`` (out of band); ``accept`` means they agreed to go.

        A link the URL verdict blocks (``answerback.urls``) raises ``ValueError`` before
        anything is sent: clients refuse it, so sending it could only fail. An argument
        that is not a string raises ``TypeError``.
        """
        call = "ctx.session.elicit_url()"
        check_text(call, "message", message, "Pass what the person is asked to do, as a string.")
        check_text(call, "url", url, "Pass the link as a string (https://...).")
        check_text(
            call,
            "elicitation_id",
            elicitation_id,
            "Pass an id of your own for this request, as a string: your page reports back "
            "with it (send_elicitation_complete).",
        )
        check_sendable_url(url)
        params = ElicitRequestURLParams(message=message, url=url, elicitation_id=elicitation_id)
        return await self._ask(
            "elicitation/create", params.to_wire(), ElicitResult, self._may_elicit_url
        )

    def _may_elicit_url(self) -> None:
        elicitation = self._client.capabilities.elicitation
        if elicitation is None or elicitation.url is None:
            raise self._not_supported("URL elicitation", "elicitation.url")
        self._require("elicitation_url", "URL elicitation")

    async def create_message(
        self,
        messages: list[SamplingMessage],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        temperature: float | None = None,
        stop_sequences: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        model_preferences: ModelPreferences | None = None,
        tools: list[Tool] | None = None,
        tool_choice: ToolChoice | None = None,
        include_context: IncludeContext | None = None,
    ) -> CreateMessageResult:
        """Ask the client's model to continue ``messages`` (sampling); prefer
        ``Context.sample``, which also runs the tools the model calls.

        ``tools``/``tool_choice`` are sent only to a client that declared
        ``sampling.tools``, ``include_context`` other than "none" only to one that declared
        ``sampling.context``. An argument of the wrong type raises ``TypeError``, and one
        of the right type that is not allowed (``max_tokens=0``, tool uses without their
        results, a tool offered twice) ``ValueError``, before anything is sent.
        """
        call = "ctx.session.create_message()"
        _check_create_message(
            call,
            messages,
            max_tokens,
            system_prompt,
            temperature,
            stop_sequences,
            metadata,
            model_preferences,
            tools,
            tool_choice,
            include_context,
        )
        try:
            check_sampling_request(messages, max_tokens, tools, tool_choice)
        except InvalidParamsError as exc:
            raise ValueError(f"Invalid argument for {call}: {exc.message}") from None
        return await self.create_message_for(
            call,
            messages,
            max_tokens=max_tokens,
            system_prompt=system_prompt,
            temperature=temperature,
            stop_sequences=stop_sequences,
            metadata=metadata,
            model_preferences=model_preferences,
            tools=tools,
            tool_choice=tool_choice,
            include_context=include_context,
        )

    async def create_message_for(
        self,
        call: str,
        messages: list[SamplingMessage],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        temperature: float | None = None,
        stop_sequences: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        model_preferences: ModelPreferences | None = None,
        tools: list[Tool] | None = None,
        tool_choice: ToolChoice | None = None,
        include_context: IncludeContext | None = None,
    ) -> CreateMessageResult:
        """``create_message`` for ``call`` (``"ctx.sample()"``), which checked the
        arguments' types already: a value refused inside a dict or list is named as its
        argument. The sampling rules are checked again (``InvalidParamsError``), since a
        conversation carried on holds what the client's model wrote."""
        check_sampling_request(messages, max_tokens, tools, tool_choice)
        with_tools = tools is not None or tool_choice is not None
        try:
            params = CreateMessageRequestParams(
                messages=messages,
                max_tokens=max_tokens,
                system_prompt=system_prompt,
                temperature=temperature,
                stop_sequences=stop_sequences,
                metadata=metadata,
                model_preferences=model_preferences,
                tools=tools,
                tool_choice=tool_choice,
                include_context=include_context,
            ).to_wire()
        except pydantic.ValidationError as exc:
            raise argument_error(call, exc, SAMPLING_ADVICE) from None
        except PydanticSerializationError as exc:
            raise unsendable(call, "metadata", exc, JSON_ADVICE) from None
        with_context = include_context in ("thisServer", "allServers")
        return await self._ask(
            "sampling/createMessage",
            params,
            CreateMessageResult,
            lambda: self._may_sample(with_tools=with_tools, with_context=with_context),
        )

    def _may_sample(self, *, with_tools: bool, with_context: bool = False) -> None:
        sampling = self._client.capabilities.sampling
        if sampling is None:
            raise self._not_supported("Sampling", "sampling")
        if with_context and sampling.context is None:
            raise self._not_supported("Sampling with context", "sampling.context")
        if with_tools:
            if sampling.tools is None:
                raise self._not_supported("Sampling with tools", "sampling.tools")
            self._require("sampling_tools", "Sampling with tools")

    async def list_roots(self) -> ListRootsResult:
        """Ask which directories (roots) the client lets the server work in."""
        return await self._ask("roots/list", None, ListRootsResult, self._may_list_roots)

    async def ping(self) -> None:
        """Check that the client still answers, as the specification lets either side
        ask: a long task can stop early for a client that has gone. Handshake era only;
        on 2026-07-28 a server asks a client nothing outside the input requests of a
        round, so this raises ``MCPError`` (-32601) there. A client that never answers
        keeps this waiting: bound it with ``anyio.fail_after``."""
        if self._client.modern:
            raise MCPError(
                METHOD_NOT_FOUND,
                "Ping not supported",
                {
                    "reason": f"protocol version {self._client.protocol_version} has no "
                    "requests from the server outside a request's rounds"
                },
            )
        await self._request.request("ping", None)

    def _may_list_roots(self) -> None:
        if self._client.capabilities.roots is None:
            raise self._not_supported("List roots", "roots")

    def check_may_ask(self, method: str, params: JSONObject | None) -> None:
        """Refuse, as ``ctx.elicit`` and friends would, a question the client did not
        declare it can answer (used on ``InputRequiredResult``s a tool builds by hand)."""
        params = params or {}
        if method == "elicitation/create":
            if params.get("mode") == "url":
                check_sendable_url(str(params.get("url")))
                self._may_elicit_url()
            else:
                self._may_elicit_form()
        elif method == "sampling/createMessage":
            self._may_sample(
                with_tools="tools" in params or "toolChoice" in params,
                with_context=params.get("includeContext") in ("thisServer", "allServers"),
            )
        elif method == "roots/list":
            self._may_list_roots()

    def _require(self, feature: Feature, what: str) -> None:
        """Refuse features the negotiated protocol version does not have."""
        version = self._client.protocol_version
        if not has_feature(version, feature):
            raise MCPError(
                METHOD_NOT_FOUND,
                f"{what} not supported",
                {"reason": f"protocol version {version} predates it ({FEATURE_SINCE[feature]})"},
            )

    def questions_caught_inside(self, outcome: BaseException | None) -> InputNeeded | None:
        """2026-07-28: the questions to ask after all when the run caught some of its
        own instead of letting them end the round (see ``ReplayAsker.caught_inside``)."""
        return self._asker.caught_inside(outcome)

    async def _ask(
        self,
        method: str,
        params: QuestionParams,
        result_type: type[ResultT],
        permitted: Callable[[], None],
        digest: str | None = None,
    ) -> ResultT:
        """Ask through the era's asker; ``permitted`` raises if the client could not
        answer. It runs only when a question is really sent: an answer a 2026 client
        already gave is used even if this retry declares less."""
        raw = await self._asker.ask(method, params, permitted, digest)
        if isinstance(raw, result_type):  # validated when it arrived (2026-07-28)
            return raw
        try:
            return result_type.model_validate(raw)
        except pydantic.ValidationError as exc:
            problems = validation_problems(exc)
            raise InvalidParamsError(
                f"The client answered {method!r} with an invalid {result_type.__name__}: "
                f"{shown_problems(problems)}. The client breaks the MCP schema; report it "
                "to its authors.",
                {"method": method, "problems": problems},
            ) from None

    def _not_supported(self, what: str, capability: str) -> MCPError:
        """The error for asking what the client did not declare (the question is never
        sent). The tool's author sees it raised, and any client sees it if the tool lets
        it through, so it names the missing capability in the specification's terms, and
        answerback's own fix only as a marked hint (a legacy refusal of a whole
        capability keeps the official SDK's bare message, which programs match on, and
        says it in ``data``)."""
        required: dict[str, Any] = {}
        node = required
        *parents, leaf = capability.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = {}
        hint = f"With answerback's Client: {_ANSWERBACK_FIX[capability]}."
        declared = json.dumps(required)
        if self._client.modern:
            return MCPError(
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                f"{what} not supported: the request did not declare the client capability "
                f"{declared}. {hint}",
                {"requiredCapabilities": required},
            )
        reason = f"the client did not declare the capability {declared} in initialize"
        if "." in capability:
            return MCPError(
                METHOD_NOT_FOUND, f"{what} not supported: {reason}. {hint}", {"reason": reason}
            )
        return MCPError(METHOD_NOT_FOUND, f"{what} not supported", {"reason": f"{reason}. {hint}"})

    # -- telling the client ----------------------------------------------------------

    async def send_elicitation_complete(self, elicitation_id: str) -> bool:
        """Tell the client the URL elicitation ``elicitation_id`` has completed out of
        band (2025-11-25 ``notifications/elicitation/complete``), so a client waiting to
        retry a call can go ahead.

        Keep this session to call it after the request that asked has ended (when your
        page reports back): the notification then goes on the connection itself.
        Returns ``False``, sending nothing, to clients whose protocol version has no
        such notification (2026-07-28 clients learn it when they retry the request).
        An ``elicitation_id`` that is not a string raises ``TypeError`` either way.
        """
        check_text(
            "ctx.session.send_elicitation_complete()",
            "elicitation_id",
            elicitation_id,
            "Pass the id the URL elicitation was asked with, as a string.",
        )
        version = self._client.protocol_version
        if self._client.modern or not has_method(version, "notifications/elicitation/complete"):
            return False
        params = ElicitationCompleteNotificationParams(elicitation_id=elicitation_id).to_wire()
        await self._request.notify("notifications/elicitation/complete", params)
        return True

    async def send_log_message(
        self, level: LoggingLevel, data: Any, logger: str | None = None
    ) -> None:
        """Send a log message if the client wants it at this level.

        Legacy clients get everything until they call ``logging/setLevel``; a 2026-07-28
        request gets messages only if it opted in with a log level of its own. An unknown
        ``level`` (``ValueError``) or a ``logger`` that is not a string (``TypeError``) is
        refused either way; ``data`` that JSON cannot carry (``TypeError``) when it is sent.
        """
        await self.send_log_message_for("ctx.session.send_log_message()", level, data, logger)

    async def send_log_message_for(
        self, call: str, level: LoggingLevel, data: Any, logger: str | None = None
    ) -> None:
        """``send_log_message`` on behalf of ``call`` (``"ctx.log()"``), which its
        errors name."""
        check_log_arguments(call, level, logger)
        threshold = self._client.log_level
        if threshold is None and self._client.modern:
            return
        if threshold is not None and LOG_LEVELS.index(level) < LOG_LEVELS.index(threshold):
            return
        try:
            params = LoggingMessageNotificationParams(
                level=level, data=data, logger=logger
            ).to_wire()
        except PydanticSerializationError as exc:
            raise unsendable(call, "data", exc, JSON_ADVICE) from None
        send = functools.partial(self._request.notify, "notifications/message", params)
        if self._already_sent is None:
            await send()
        else:
            await self._already_sent.send_once("notifications/message", params, send)

    async def send_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Report progress, if the client asked for it with a progress token.

        Raises ``TypeError`` for a number or message of the wrong type and ``ValueError``
        for a NaN or infinite number (JSON cannot carry it), whether or not the client
        asked, so the mistake shows on every transport alike. A ``progress`` not above
        this request's last one is not sent (the specification says progress MUST
        increase) but does not fail the call either: counters that stall on some data (an
        empty chunk, a retry, a skipped item) are common, so it is only logged, once per
        request, as a warning on the ``answerback.server`` logger naming both values.
        """
        check_progress("ctx.session.send_progress()", progress, total, message)
        if self._last_progress is not None and progress <= self._last_progress:
            self._warn_of_progress_order(progress, self._last_progress)
            return
        self._last_progress = progress
        token = self._request.progress_token
        send = functools.partial(self._request.send_progress, progress, total, message)
        if self._already_sent is None or token is None:
            await send()
        else:
            # The token changes every round (each round is a new request): leave it out.
            report: JSONObject = {"progress": progress, "total": total, "message": message}
            await self._already_sent.send_once("notifications/progress", report, send)

    def _warn_of_progress_order(self, progress: float, last: float) -> None:
        """Tell the server's author, once for this request, that a report was dropped."""
        if self._warned_of_progress_order:
            return
        self._warned_of_progress_order = True
        logger.warning(
            "progress %s of request %r was not sent: it is not more than the request's "
            "last report, %s, and MCP requires progress to increase with each report "
            "(later reports of this request that do not increase are dropped without "
            "another warning). Report how much is done so far, not the step just finished "
            "or what is left; to say something new without progress, log it instead.",
            progress,
            self._request.id,
            last,
        )


def _check_create_message(
    call: str,
    messages: object,
    max_tokens: object,
    system_prompt: object,
    temperature: object,
    stop_sequences: object,
    metadata: object,
    model_preferences: object,
    tools: object,
    tool_choice: object,
    include_context: object,
) -> None:
    """Refuse what ``create_message`` cannot send: the wrong types (what is inside a
    dict, and the items of ``stop_sequences``, pydantic judges when the params are built)."""
    advice = (
        'Pass a list of SamplingMessage(role="user", content=TextContent(text=...)), at '
        "least one (ctx.sample also takes a string)."
    )
    if isinstance(messages, str) or not isinstance(messages, list | tuple):
        raise wrong_type(call, "messages", "a list of SamplingMessage", messages, advice)
    for index, message in enumerate(cast(list[object], messages)):
        if not isinstance(message, SamplingMessage):
            raise wrong_type(call, f"messages[{index}]", "a SamplingMessage", message, advice)
    if not messages:
        raise ValueError(f"Invalid argument for {call}: messages is empty. {advice}")
    check_sampling_options(
        call,
        max_tokens,
        system_prompt,
        temperature,
        stop_sequences,
        metadata,
        model_preferences,
        include_context,
    )
    tools_advice = (
        "Pass a list of Tool(name=..., input_schema={...}), or None (ctx.sample also takes "
        "functions)."
    )
    if tools is not None:
        if not isinstance(tools, list | tuple):
            raise wrong_type(call, "tools", "a list of Tool", tools, tools_advice)
        for index, tool in enumerate(cast(list[object], tools)):
            if not isinstance(tool, Tool):
                raise wrong_type(call, f"tools[{index}]", "a Tool", tool, tools_advice)
    if tool_choice is not None and not isinstance(tool_choice, ToolChoice):
        raise wrong_type(
            call,
            "tool_choice",
            "a ToolChoice",
            tool_choice,
            'Pass ToolChoice(mode=...) with "auto", "required" or "none", or None.',
        )


def check_sendable_url(url: str) -> None:
    """Refuse (``ValueError``) a URL-mode elicitation link the URL verdict blocks."""
    # Imported on first use: the URL verdict's tables cost a server that never asks
    # through a link a tenth of its start-up.
    from answerback.urls import judge_url

    verdict = judge_url(url)
    if verdict.blocked:
        raise ValueError(
            f"Refusing to send a URL elicitation whose link clients block: {verdict.explain()}"
            "\nUse an https link (plain http only for localhost) with no user name before '@'."
        )


_ANSWERS = "or a Responder that declares it in capabilities() and answers in"
_ANSWERBACK_FIX = {
    "elicitation": f"pass elicitation_callback= to Client, {_ANSWERS} elicit()",
    "elicitation.form": f"pass elicitation_callback= to Client (both modes), {_ANSWERS} elicit()",
    "elicitation.url": f"pass elicitation_callback= to Client (both modes), {_ANSWERS} elicit()",
    "sampling": f"pass sampling_callback= to Client, {_ANSWERS} sample()",
    "sampling.tools": (
        "pass sampling_capabilities=SamplingCapability(tools=SamplingToolsCapability()) "
        f"with sampling_callback= to Client, {_ANSWERS} sample()"
    ),
    "sampling.context": (
        "pass sampling_capabilities=SamplingCapability(context=SamplingContextCapability()) "
        f"with sampling_callback= to Client, {_ANSWERS} sample()"
    ),
    "roots": f"pass list_roots_callback= to Client, {_ANSWERS} list_roots()",
}
"""What declares each capability in answerback's client, in the words of its own
advice (``answerback.client._callbacks.CAPABILITY_FIXES``, which a server does not
load): only a hint, marked as such, since any client may read it."""


def _covers(declared: Any, wanted: Any) -> bool:
    """Whether every field set in ``wanted`` is also present in ``declared``."""
    if not isinstance(wanted, BaseModel):
        return declared is not None
    if not isinstance(declared, BaseModel):
        return declared is not None and not wanted.model_fields_set
    for name in wanted.model_fields_set | set(wanted.model_extra or {}):
        want = getattr(wanted, name, None)
        if want is None:
            continue
        have = getattr(declared, name, None)
        if have is None and name == "form" and _is_bare_elicitation(declared):
            continue  # "elicitation": {} means form mode (2025-06-18 compatibility)
        if have is None or not _covers(have, want):
            return False
    return True


def _is_bare_elicitation(capability: BaseModel) -> bool:
    return getattr(capability, "form", None) is None and getattr(capability, "url", None) is None
