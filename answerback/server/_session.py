"""The server's view of the connected client, and the one place it asks the client.

A ``ServerSession`` is made for each request the server answers: it knows what the
client declared, sends what the tool author asks for (elicitation, sampling, roots) as
part of that request, and refuses up front to ask for anything the client did not
declare, because the specification forbids sending it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import pydantic
from pydantic import BaseModel

from answerback.jsonrpc import IncomingRequest, JSONObject
from answerback.server._arguments import LOG_LEVELS, check_progress
from answerback.server._asking import AlreadySent, Asker
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
    shown_problems,
    validation_problems,
)
from answerback.types._sampling_rules import check_sampling_request
from answerback.types._versions import FEATURE_SINCE, Feature, has_feature, has_method

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
        """Whether the client declared everything ``capability`` names (and their parts)."""
        return _covers(self._client.capabilities, capability)

    # -- asking the client -----------------------------------------------------------

    async def elicit_form(self, message: str, requested_schema: dict[str, Any]) -> ElicitResult:
        """Ask the user to fill in a form; prefer ``Context.elicit`` with a model."""
        params = ElicitRequestFormParams(message=message, requested_schema=requested_schema)
        return await self._ask(
            "elicitation/create", params.to_wire(), ElicitResult, self._may_elicit_form
        )

    async def elicit_question(self, question: FormQuestion) -> ElicitResult:
        """``elicit_form`` with the params built already (``Context.elicit``)."""
        return await self._ask(
            "elicitation/create",
            question.params(),
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
        anything is sent: clients refuse it, so sending it could only fail.
        """
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
        ``sampling.context``; ``max_tokens`` and the tool-use/tool-result pairing rules are
        checked first.
        """
        check_sampling_request(messages, max_tokens, tools, tool_choice)
        with_tools = tools is not None or tool_choice is not None
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
        )
        with_context = include_context in ("thisServer", "allServers")
        return await self._ask(
            "sampling/createMessage",
            params.to_wire(),
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

    async def _ask(
        self,
        method: str,
        params: JSONObject | None,
        result_type: type[ResultT],
        permitted: Callable[[], None],
        digest: str | None = None,
    ) -> ResultT:
        """Ask through the era's asker; ``permitted`` raises if the client could not
        answer. It runs only when a question is really sent: an answer a 2026 client
        already gave is used even if this retry declares less."""
        raw = await self._asker.ask(method, params, permitted, digest)
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
        """The error for asking what the client did not declare (never sent to it): it
        names the exact capability, and tells the client's developer what provides it
        (a legacy refusal of a whole capability keeps the official SDK's bare message,
        which programs match on, and says it in ``data``)."""
        fix = _HOW_TO_DECLARE[capability]
        if self._client.modern:
            required: dict[str, Any] = {}
            node = required
            *parents, leaf = capability.split(".")
            for part in parents:
                node = node.setdefault(part, {})
            node[leaf] = {}
            return MCPError(
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                f"{what} not supported: the request did not declare the {capability!r} "
                f"client capability; {fix}.",
                {"requiredCapabilities": required},
            )
        reason = f"the client did not declare the {capability!r} capability"
        if "." in capability:
            return MCPError(
                METHOD_NOT_FOUND, f"{what} not supported: {reason}; {fix}.", {"reason": reason}
            )
        return MCPError(METHOD_NOT_FOUND, f"{what} not supported", {"reason": f"{reason}: {fix}"})

    # -- telling the client ----------------------------------------------------------

    async def send_elicitation_complete(self, elicitation_id: str) -> bool:
        """Tell the client the URL elicitation ``elicitation_id`` has completed out of
        band (2025-11-25 ``notifications/elicitation/complete``), so a client waiting to
        retry a call can go ahead.

        Keep this session to call it after the request that asked has ended (when your
        page reports back): the notification then goes on the connection itself.
        Returns ``False``, sending nothing, to clients whose protocol version has no
        such notification (2026-07-28 clients learn it when they retry the request).
        """
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
        request gets messages only if it opted in with a log level of its own.
        """
        threshold = self._client.log_level
        if threshold is None and self._client.modern:
            return
        if threshold is not None and LOG_LEVELS.index(level) < LOG_LEVELS.index(threshold):
            return
        params = LoggingMessageNotificationParams(level=level, data=data, logger=logger).to_wire()
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
        for a NaN or infinite number (JSON cannot carry it) whether or not the client
        asked, so the mistake shows on every transport alike.
        """
        check_progress("ctx.session.send_progress()", progress, total, message)
        token = self._request.progress_token
        send = functools.partial(self._request.send_progress, progress, total, message)
        if self._already_sent is None or token is None:
            await send()
        else:
            # The token changes every round (each round is a new request): leave it out.
            report: JSONObject = {"progress": progress, "total": total, "message": message}
            await self._already_sent.send_once("notifications/progress", report, send)


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


_ANSWERS = "or a responder that declares it in capabilities() and answers in"
_HOW_TO_DECLARE = {
    "elicitation": f"give the Client an elicitation_callback {_ANSWERS} elicit()",
    "elicitation.form": f"give the Client an elicitation_callback (both modes) {_ANSWERS} elicit()",
    "elicitation.url": f"give the Client an elicitation_callback (both modes) {_ANSWERS} elicit()",
    "sampling": f"give the Client a sampling_callback {_ANSWERS} sample()",
    "sampling.tools": (
        "pass sampling_capabilities=SamplingCapability(tools=SamplingToolsCapability()) "
        f"with the sampling_callback, {_ANSWERS} sample()"
    ),
    "sampling.context": (
        "pass sampling_capabilities=SamplingCapability(context=SamplingContextCapability()) "
        f"with the sampling_callback, {_ANSWERS} sample()"
    ),
    "roots": f"give the Client a list_roots_callback {_ANSWERS} list_roots()",
}
"""What gives a client each capability, in answerback's client: told to the developer
of a client that lacks it."""


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
