"""One connection to a server, answering requests of both protocol generations.

Legacy requests share the connection's handshake state; a 2026-07-28 request carries
its own in ``_meta`` (so one connection, or one HTTP endpoint, serves both eras, as a
dual-era server should). Tools, prompts and resources that ask the client go through
``_with_questions``: live requests on a legacy connection, sealed multi-round-trip
results on a modern one.
"""

from __future__ import annotations

import base64
import functools
import inspect
import itertools
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

import anyio
import anyio.lowlevel
import pydantic
import pydantic_core

from answerback.jsonrpc import Envelope, IncomingRequest, JSONObject
from answerback.jsonrpc._endpoint import as_object, as_request_id
from answerback.server._arguments import LOG_LEVELS
from answerback.server._asking import (
    AlreadySent,
    InputNeeded,
    LiveAsker,
    Memo,
    ReplayAsker,
    forget_where_raised,
    settle,
)
from answerback.server._caller import caller_of
from answerback.server._context import Context
from answerback.server._older_versions import (
    fit_capabilities,
    fit_prompt_result,
    fit_tool_result,
    fit_tools,
)
from answerback.server._request_state import PREFIX as STATE_PREFIX
from answerback.server._request_state import StateSeal, check_retry_fits
from answerback.server._roots_guard import RootsCache
from answerback.server._session import ClientState, ServerSession
from answerback.server._tools import tool_error_result
from answerback.types import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    META_SUBSCRIPTION_ID,
    CallToolRequestParams,
    ClientCapabilities,
    CompleteRequestParams,
    CompleteResult,
    Completion,
    CreateMessageResult,
    DiscoverResult,
    ElicitResult,
    GetPromptRequestParams,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    InputRequiredResult,
    InputResponseRequestParams,
    InputResponses,
    InvalidParamsError,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListRootsResult,
    ListToolsResult,
    MCPError,
    MCPModel,
    MethodNotFoundError,
    PaginatedRequestParams,
    PromptReference,
    PromptsCapability,
    ReadResourceRequestParams,
    ReadResourceResult,
    ResourceNotFoundError,
    ResourcesCapability,
    ResourceTemplate,
    SetLevelRequestParams,
    SubscribeRequestParams,
    SubscriptionFilter,
    SubscriptionsListenRequestParams,
    ToolsCapability,
    UnsupportedProtocolVersionError,
)
from answerback.types._errors import INTERNAL_ERROR, INVALID_REQUEST, invalid_params
from answerback.types._models import MAX_COMPLETION_VALUES
from answerback.types._versions import (
    LATEST_LEGACY_VERSION,
    LEGACY_VERSIONS,
    MODERN_VERSIONS,
    SUPPORTED_VERSIONS,
    per_request_refusal,
)

if TYPE_CHECKING:
    from answerback.server._registry import Registry
    from answerback.server._server import MCPServer

logger = logging.getLogger("answerback.server")

ItemT = TypeVar("ItemT")
OutcomeT = TypeVar("OutcomeT")
_ASKERS = {"tools/call": "Tool", "prompts/get": "Prompt", "resources/read": "Resource"}
"""What a method's target is called in an error about it."""


class Connection:
    """The protocol side of one connection: dispatch, eras, subscriptions."""

    def __init__(
        self,
        server: MCPServer,
        registry: Registry,
        receives_broadcasts: Callable[[], bool | Awaitable[bool]] | None = None,
        keeps_roots: bool = True,
        max_request_bytes: int | None = None,
    ) -> None:
        self.server = server
        self.registry = registry
        """What ``server`` declared (its decorators fill it)."""
        self.legacy_client: ClientState | None = None
        self.subscriptions: set[str] = set()
        self.notify: Callable[[str, JSONObject | None], Awaitable[None]] | None = None
        """Sends a notification on this connection (set once it is serving)."""
        self.roots_cache = RootsCache() if keeps_roots else None
        """The legacy client's roots as ``ctx.roots`` last listed them (until it says
        they changed); ``None`` where each request asks for itself, as 2026-07-28
        requests do."""
        self._receives_broadcasts = receives_broadcasts
        self.max_request_bytes = max_request_bytes
        """The largest request the transport accepts (``None``: no limit): a 2026-07-28
        round whose retry would exceed it fails at once (``check_retry_fits``)."""

    async def homed(self) -> bool:
        """Whether server-wide notifications for this session go out here (with
        replicas, only on the session's home connection)."""
        if self._receives_broadcasts is None:
            return True
        answer = self._receives_broadcasts()
        return await answer if inspect.isawaitable(answer) else answer

    # -- dispatch --------------------------------------------------------------------

    async def handle(self, request: IncomingRequest) -> JSONObject:
        meta = request.meta
        if request.method == "server/discover" or (meta and META_PROTOCOL_VERSION in meta):
            client: ClientState | None = _modern_client(meta or {})
            handler = _MODERN.get(request.method)
        else:
            client = self.legacy_client
            handler = _LEGACY.get(request.method)
            if client is None and handler is not None and request.method not in _PRE_INIT:
                client = await self._client_once_earlier_requests_began()
                if client is None:
                    raise MCPError(
                        INVALID_REQUEST,
                        f"Received {request.method!r} before initialization: send "
                        "'initialize' first, or use the 2026-07-28 protocol (per-request "
                        "_meta).",
                    )
        if handler is None:
            raise MethodNotFoundError(f"Method not found: {request.method!r}")
        try:
            result = await handler(self, client, request)
        except ResourceNotFoundError as exc:  # the server's, or a function's own
            raise _not_found(client, exc) from None
        if client is not None and client.modern:
            result.setdefault("resultType", "complete")
        return result

    async def _client_once_earlier_requests_began(self) -> ClientState | None:
        """The legacy client, once every request received before this one has begun.

        A client that sends ``initialize`` and its first call together (a file of
        requests: ``server < requests.jsonl``) has them handled at once, and trio starts
        ready tasks in any order: the call could begin before ``initialize`` had. Both
        backends run every task started before this one before resuming it from a
        checkpoint, and ``initialize`` takes effect in its first step."""
        await anyio.lowlevel.checkpoint()
        return self.legacy_client

    async def notification(self, method: str, params: JSONObject | None, _: Envelope) -> None:
        if method == "notifications/initialized" and self.legacy_client is not None:
            self.legacy_client.initialized = True
        elif method == "notifications/roots/list_changed":
            if self.roots_cache is not None:
                self.roots_cache.forget()
        else:
            logger.debug("ignored notification %r", method)

    # -- lifecycle and discovery -----------------------------------------------------

    async def initialize(self, client: ClientState | None, request: IncomingRequest) -> JSONObject:
        if self.legacy_client is not None:
            # Renegotiating mid-session would change the rules under requests in flight.
            raise MCPError(
                INVALID_REQUEST,
                "Invalid request: already initialized. A connection is initialized once; "
                "to start over, open a new connection (over HTTP, a new session).",
            )
        params = _params(InitializeRequestParams, request)
        requested = params.protocol_version
        version = requested if requested in LEGACY_VERSIONS else LATEST_LEGACY_VERSION
        self.legacy_client = ClientState(version, params.capabilities, params.client_info)
        return InitializeResult(
            protocol_version=version,
            capabilities=fit_capabilities(self.server.capabilities, version),
            server_info=self.server.server_info,
            instructions=self.server.instructions,
        ).to_wire()

    async def discover(self, client: ClientState | None, request: IncomingRequest) -> JSONObject:
        return DiscoverResult(
            supported_versions=list(SUPPORTED_VERSIONS),
            capabilities=self.server.capabilities,
            instructions=self.server.instructions,
            ttl_ms=self.server.cache_ttl_ms,
            cache_scope=self.server.cache_scope,
            meta={META_SERVER_INFO: self.server.server_info.to_wire()},
        ).to_wire()

    async def ping(self, client: ClientState | None, request: IncomingRequest) -> JSONObject:
        return {}

    async def set_level(self, client: ClientState | None, request: IncomingRequest) -> JSONObject:
        assert client is not None
        client.log_level = _params(SetLevelRequestParams, request).level
        return {}

    # -- tools -----------------------------------------------------------------------

    async def list_tools(self, client: ClientState | None, request: IncomingRequest) -> JSONObject:
        assert client is not None
        tools = [tool.definition for tool in self.registry.tools.values()]
        tools = fit_tools(tools, client.protocol_version)
        page, next_cursor = self._page(tools, request, lambda tool: tool.name)
        result = ListToolsResult(tools=page, next_cursor=next_cursor)
        return self._cacheable(client, result)

    async def call_tool(self, client: ClientState | None, request: IncomingRequest) -> JSONObject:
        assert client is not None
        params = _params(CallToolRequestParams, request)
        tool = self.registry.tools.get(params.name)
        if tool is None:
            raise InvalidParamsError(
                f"Unknown tool {params.name!r}; call tools/list to see the tools available."
            )
        arguments = params.arguments or {}

        async def run(context: Context) -> JSONObject:
            try:
                result = await _asking_what_it_caught(context, tool.call(arguments, context))
            except BaseException as raised:
                failure = settle(raised)
                if isinstance(failure, MCPError) or not isinstance(failure, Exception):
                    if failure is raised:
                        raise
                    raise failure from None
                # The model sees the failure; the client gets a result.
                redact = self.server.redacts_errors(request)
                result = tool_error_result(tool.definition.name, failure, redact=redact)
            if isinstance(result, InputRequiredResult):
                return self._hand_made(client, context, result, f"Tool {params.name!r}", request)
            return fit_tool_result(result, client.protocol_version)

        return await self._with_questions(
            client, request, "tools/call", params.name, arguments, params, run
        )

    # -- prompts ---------------------------------------------------------------------

    async def list_prompts(
        self, client: ClientState | None, request: IncomingRequest
    ) -> JSONObject:
        assert client is not None
        prompts = [prompt.definition for prompt in self.registry.prompts.values()]
        page, next_cursor = self._page(prompts, request, lambda prompt: prompt.name)
        return self._cacheable(client, ListPromptsResult(prompts=page, next_cursor=next_cursor))

    async def get_prompt(self, client: ClientState | None, request: IncomingRequest) -> JSONObject:
        assert client is not None
        params = _params(GetPromptRequestParams, request)
        prompt = self.registry.prompts.get(params.name)
        if prompt is None:
            raise InvalidParamsError(
                f"Unknown prompt {params.name!r}; call prompts/list to see the prompts available."
            )
        arguments = params.arguments or {}

        async def run(context: Context) -> JSONObject:
            rendered = await _asking_what_it_caught(context, prompt.render(arguments, context))
            if isinstance(rendered, InputRequiredResult):
                what = f"Prompt {params.name!r}"
                return self._hand_made(client, context, rendered, what, request)
            return fit_prompt_result(rendered.to_wire(), client.protocol_version)

        return await self._with_questions(
            client, request, "prompts/get", params.name, arguments, params, run
        )

    # -- resources -------------------------------------------------------------------

    async def list_resources(
        self, client: ClientState | None, request: IncomingRequest
    ) -> JSONObject:
        assert client is not None
        resources = self.registry.fixed_resources()
        page, next_cursor = self._page(resources, request, lambda resource: resource.uri)
        return self._cacheable(client, ListResourcesResult(resources=page, next_cursor=next_cursor))

    async def list_resource_templates(
        self, client: ClientState | None, request: IncomingRequest
    ) -> JSONObject:
        assert client is not None
        templates = self.registry.resource_templates()
        page, next_cursor = self._page(templates, request, lambda template: template.uri_template)
        result = ListResourceTemplatesResult(resource_templates=page, next_cursor=next_cursor)
        return self._cacheable(client, result)

    async def read_resource(
        self, client: ClientState | None, request: IncomingRequest
    ) -> JSONObject:
        assert client is not None
        params = _params(ReadResourceRequestParams, request)
        found = self.registry.find_resource(params.uri)
        if found is None:
            raise ResourceNotFoundError(params.uri)
        resource, arguments = found

        async def run(context: Context) -> JSONObject:
            contents = await _asking_what_it_caught(
                context, resource.read(params.uri, arguments, context)
            )
            if isinstance(contents, InputRequiredResult):
                what = f"Resource {params.uri!r}"
                return self._hand_made(client, context, contents, what, request)
            return self._cacheable(client, ReadResourceResult(contents=[*contents]))

        return await self._with_questions(
            client, request, "resources/read", params.uri, {}, params, run
        )

    async def subscribe(self, client: ClientState | None, request: IncomingRequest) -> JSONObject:
        """Remember a URI to send ``notifications/resources/updated`` for. A connection
        keeps this for as long as it lives, so only URIs a resource serves are kept,
        and only so many, of a bounded length: a client cannot grow it at will."""
        assert client is not None
        uri = _params(SubscribeRequestParams, request).uri
        if uri in self.subscriptions:
            return {}
        if len(uri) > SUBSCRIBED_URI_CHARS:
            raise InvalidParamsError(
                f"Invalid params: a subscribed URI may be at most {SUBSCRIBED_URI_CHARS} "
                f"characters; this one has {len(uri)}."
            )
        if self.registry.find_resource(uri) is None:
            advice = "subscribe to a URI this server lists or whose template it lists."
            raise ResourceNotFoundError(uri, f"Resource not found: {uri}; {advice}")
        if len(self.subscriptions) >= SUBSCRIPTIONS_KEPT:
            raise InvalidParamsError(
                f"Invalid params: this connection already has {SUBSCRIPTIONS_KEPT} "
                "resource subscriptions, the most it keeps; unsubscribe from some first."
            )
        self.subscriptions.add(uri)
        return {}

    async def unsubscribe(self, client: ClientState | None, request: IncomingRequest) -> JSONObject:
        self.subscriptions.discard(_params(SubscribeRequestParams, request).uri)
        return {}

    async def listen(self, client: ClientState | None, request: IncomingRequest) -> JSONObject:
        """``subscriptions/listen``: acknowledge what this server will send (``_honoured``),
        then deliver matching notifications on this request until the client closes it,
        or closes its input (stdio): the subscription then ends with the result the
        specification gives a server tearing one down, and the server can exit, as it
        should once its input is closed."""
        params = _params(SubscriptionsListenRequestParams, request)
        honoured = self._honoured(params.notifications)
        await request.notify(
            "notifications/subscriptions/acknowledged",
            {
                "notifications": honoured.to_wire(),
                "_meta": {META_SUBSCRIPTION_ID: request.id},
            },
        )
        listener = self.registry.listen(request, honoured)
        try:
            await request.until_input_ends()
        finally:
            self.registry.unlisten(listener)
        return {"_meta": {META_SUBSCRIPTION_ID: request.id}}

    def _honoured(self, wanted: SubscriptionFilter) -> SubscriptionFilter:
        """The part of ``wanted`` this server will send, as the specification has the
        acknowledgement say: list changes of the kinds its capabilities declare with
        ``listChanged``, and updates of the URIs ``resources/subscribe`` would keep (one
        of its resources serves it, of a bounded length, so many at most). The rest is
        left out of the acknowledgement and never sent, so a client learns at once that
        it would wait in vain."""
        declared = self.server.capabilities
        tools, prompts, resources = declared.tools, declared.prompts, declared.resources
        uris: list[str] = []
        if resources is not None and resources.subscribe:
            servable = (
                uri
                for uri in dict.fromkeys(wanted.resource_subscriptions or ())
                if len(uri) <= SUBSCRIBED_URI_CHARS and self.registry.find_resource(uri)
            )
            uris = list(itertools.islice(servable, SUBSCRIPTIONS_KEPT))
        return SubscriptionFilter(
            tools_list_changed=_agreed(wanted.tools_list_changed, tools),
            prompts_list_changed=_agreed(wanted.prompts_list_changed, prompts),
            resources_list_changed=_agreed(wanted.resources_list_changed, resources),
            resource_subscriptions=uris or None,
        )

    # -- completion ------------------------------------------------------------------

    async def complete(self, client: ClientState | None, request: IncomingRequest) -> JSONObject:
        params = _params(CompleteRequestParams, request)
        self._check_completion_target(params)
        handler = self.registry.completion_handler
        values: list[str] | Completion = []
        if handler is not None:
            answer = cast(object, await handler(params.ref, params.argument, params.context))
            returned = type(answer).__name__
            if isinstance(answer, Completion):
                values = answer
            elif answer is None:
                values = []
            elif isinstance(answer, list | tuple) and all(
                isinstance(value, str) for value in cast(Sequence[object], answer)
            ):
                values = list(cast(Sequence[str], answer))
            else:
                # Said here: the handler's mistake would otherwise surface as a TypeError
                # from deep inside the list handling, naming nothing.
                raise TypeError(
                    f"the completion handler returned {returned}; return a list "
                    "of strings, a Completion, or None"
                )
        completion = values if isinstance(values, Completion) else _completion(values)
        return CompleteResult(completion=completion).to_wire()

    def _check_completion_target(self, params: CompleteRequestParams) -> None:
        """Refuse (-32602) a completion for a prompt or template this server does not
        have, or for an argument it does not take, as the specification asks: a handler
        asked about them would suggest values for something that cannot be used."""
        ref, argument = params.ref, params.argument.name
        if isinstance(ref, PromptReference):
            prompt = self.registry.prompts.get(ref.name)
            if prompt is None:
                raise InvalidParamsError(
                    f"Unknown prompt {ref.name!r}; call prompts/list to see the prompts available."
                )
            what = f"Prompt {ref.name!r}"
            names = [known.name for known in prompt.definition.arguments or []]
        else:
            resource = self.registry.resources.get(ref.uri)
            if resource is None or not isinstance(resource.definition, ResourceTemplate):
                raise InvalidParamsError(
                    f"Unknown resource template {ref.uri!r}; give a URI template as "
                    "resources/templates/list lists it."
                )
            what = f"Resource template {ref.uri!r}"
            names = list(resource.parsers)
        if argument not in names:
            takes = f"its arguments are {', '.join(map(repr, names))}" if names else "it has none"
            raise InvalidParamsError(f"{what} has no argument {argument!r}; {takes}.")

    # -- shared machinery ------------------------------------------------------------

    async def _with_questions(
        self,
        client: ClientState,
        request: IncomingRequest,
        method: str,
        name: str,
        arguments: Any,
        params: InputResponseRequestParams,
        run: Callable[[Context], Awaitable[JSONObject]],
    ) -> JSONObject:
        """Run a tool, prompt or resource that may ask the client questions.

        Legacy: questions are live requests. 2026-07-28: answers so far come from the
        sealed ``requestState`` plus this retry's ``inputResponses``; the first new
        question ends the attempt with an ``InputRequiredResult`` (holding every
        question its concurrent tasks asked, up to ``max_input_requests``). Exception
        groups from a task group inside the tool are taken apart (``settle``), so a
        question asked in a task still ends the round, in either era.
        """
        tools = self.registry.tools
        redact = functools.partial(self.server.redacts_errors, request)
        if not client.modern:
            session = ServerSession(client, request, LiveAsker(request))
            try:
                return await run(
                    Context(
                        session,
                        request,
                        server_tools=tools,
                        redact_errors=redact,
                        roots_cache=self.roots_cache,
                        lifespan_context=self.server.lifespan_context,
                    )
                )
            except BaseExceptionGroup as raised:
                failure = settle(raised)
                if failure is raised:
                    raise
                raise failure from None
        caller = caller_of(request)
        principal = caller.principal if caller is not None else None
        seal = StateSeal(self.registry.sealer, method, name, arguments, principal)
        given: object = (request.params or {}).get("inputResponses")
        raw_responses = as_object(given)
        if "inputResponses" in (request.params or {}) and raw_responses is None:
            raise InvalidParamsError(
                "Invalid params: inputResponses must be an object of answers keyed as the "
                "input requests were."
            )
        opened = None
        request_state = params.request_state
        if request_state is not None and request_state.startswith(STATE_PREFIX):
            opened = seal.open(request_state)
            await seal.claim(opened, self.server.used_states)
        answers, checked, sent, kept = _recorded_state(
            opened, raw_responses, params.input_responses
        )
        already_sent = AlreadySent(sent)
        memo = Memo(kept)
        context = Context(
            ServerSession(client, request, ReplayAsker(answers, checked), already_sent),
            request,
            input_responses=raw_responses,
            request_state=request_state,
            state_seal=seal,
            server_tools=tools,
            redact_errors=redact,
            memo=memo,
            lifespan_context=self.server.lifespan_context,
        )
        try:
            return await run(context)
        except BaseException as raised:
            needed = settle(raised)
            if not isinstance(needed, InputNeeded):
                if needed is raised:
                    raise
                raise needed from None
            forget_where_raised(raised)
        # The rest are asked again on the next round (their answers are not recorded).
        questions = needed.questions[: self.server.max_input_requests]
        state = {
            "answers": answers,
            "asked": {question.key: question.method for question in questions},
            "sent": already_sent.record(),
            "kept": memo.record(),
        }
        sealed = seal.seal(state, single_use=self.server.single_use_state)
        if self.max_request_bytes is not None:
            what = f"{_ASKERS.get(method, 'Request')} {name!r}"
            check_retry_fits(
                what, sealed, request.envelope.size, request_state, self.max_request_bytes
            )
        # Written out rather than validated: every question's params are the wire form
        # of a model ``ServerSession`` built and checked (a tool's own result is checked
        # in ``_hand_made``).
        return {
            "resultType": "input_required",
            "inputRequests": {question.key: question.input_request for question in questions},
            "requestState": sealed,
        }

    def _hand_made(
        self,
        client: ClientState,
        context: Context,
        result: InputRequiredResult,
        what: str,
        request: IncomingRequest,
    ) -> JSONObject:
        """A tool's own ``InputRequiredResult``, checked before it goes out: only to a
        2026-07-28 client, well formed, not too many questions, only questions the
        client declared it can answer (the specification's rules for servers), and a
        state whose retry fits in a request."""
        if not client.modern:
            raise MCPError(
                INTERNAL_ERROR,
                f"{what} returned an InputRequiredResult, which a {client.protocol_version} "
                "client cannot receive. Ask with ctx.elicit (and friends), which work in both "
                "protocol generations.",
            )
        try:
            wire = result.model_dump(mode="json", by_alias=True, exclude_none=True, warnings=False)
            checked = InputRequiredResult.model_validate(wire)
        except (pydantic.ValidationError, pydantic_core.PydanticSerializationError) as exc:
            raise MCPError(
                INTERNAL_ERROR,
                f"{what} returned a malformed InputRequiredResult ({_first_problem(exc)}). "
                "Build its input requests from ElicitRequest, CreateMessageRequest or "
                "ListRootsRequest models.",
            ) from None
        questions = checked.input_requests or {}
        if not questions and checked.request_state is None:
            raise MCPError(
                INTERNAL_ERROR,
                f"{what} returned an InputRequiredResult with neither inputRequests nor "
                "requestState; it must carry at least one (a requestState alone asks the "
                "client to retry later).",
            )
        limit = self.server.max_input_requests
        if len(questions) > limit:
            raise MCPError(
                INTERNAL_ERROR,
                f"{what} returned an InputRequiredResult with {len(questions)} input requests; "
                f"the limit is {limit}. Ask fewer questions per round, or raise "
                "MCPServer(max_input_requests=...).",
            )
        for question in questions.values():
            question_wire = question.model_dump(mode="json", by_alias=True, exclude_none=True)
            context.session.check_may_ask(question.method, as_object(question_wire.get("params")))
        if checked.request_state is not None:
            earlier, size = context.request_state, request.envelope.size
            check_retry_fits(what, checked.request_state, size, earlier, self.max_request_bytes)
        return checked.to_wire()

    def _page(
        self, items: Sequence[ItemT], request: IncomingRequest, key: Callable[[ItemT], str]
    ) -> tuple[list[ItemT], str | None]:
        """One page of a list, and the cursor of the next (opaque to clients). The
        cursor names the list and the ``key`` (name or URI) of the page's last item,
        not a position: an item removed between two pages pushes no other out of the
        next one."""
        cursor = _params(PaginatedRequestParams, request).cursor
        start = 0 if cursor is None else _after(cursor, request.method, [*map(key, items)])
        size = self.server.page_size or len(items) or 1
        end = start + size
        if end >= len(items):
            return list(items[start:]), None
        following = json.dumps([request.method, key(items[end - 1])]).encode()
        return list(items[start:end]), base64.urlsafe_b64encode(following).decode()

    def _cacheable(self, client: ClientState, result: MCPModel) -> JSONObject:
        """2026-07-28 lists and reads say how long a client may cache them."""
        wire = result.to_wire()
        if client.modern:
            wire.update(ttlMs=self.server.cache_ttl_ms, cacheScope=self.server.cache_scope)
        return wire


Handler = Callable[[Connection, ClientState | None, IncomingRequest], Awaitable[JSONObject]]

_SHARED: dict[str, Handler] = {
    "tools/list": Connection.list_tools,
    "tools/call": Connection.call_tool,
    "prompts/list": Connection.list_prompts,
    "prompts/get": Connection.get_prompt,
    "resources/list": Connection.list_resources,
    "resources/templates/list": Connection.list_resource_templates,
    "resources/read": Connection.read_resource,
    "completion/complete": Connection.complete,
}
_LEGACY: dict[str, Handler] = {
    **_SHARED,
    "initialize": Connection.initialize,
    "ping": Connection.ping,
    "logging/setLevel": Connection.set_level,
    "resources/subscribe": Connection.subscribe,
    "resources/unsubscribe": Connection.unsubscribe,
}
_MODERN: dict[str, Handler] = {
    **_SHARED,
    "server/discover": Connection.discover,
    "subscriptions/listen": Connection.listen,
}
_PRE_INIT = frozenset({"initialize", "ping"})


SUBSCRIPTIONS_KEPT = 1000
"""Resource subscriptions one connection may hold at once."""
SUBSCRIBED_URI_CHARS = 4096
"""The longest URI a connection subscribes to (URLs beyond a few KiB are refused by most
HTTP software anyway)."""


async def _asking_what_it_caught(context: Context, work: Awaitable[OutcomeT]) -> OutcomeT:
    """What a tool, prompt or resource gives, unless on 2026-07-28 it caught some of its
    own questions (``gather(return_exceptions=True)``, ``except BaseException``): then it
    raises them, so the round asks them rather than answering without their answers."""
    try:
        outcome = await work
    except BaseException as raised:
        caught = context.session.questions_caught_inside(raised)
        if caught is None:
            raise
        forget_where_raised(raised)
        raise caught from None
    caught = context.session.questions_caught_inside(None)
    if caught is not None:
        raise caught
    return outcome


def _after(cursor: str, method: str, keys: list[str]) -> int:
    """Where the page a ``_page`` cursor asks for starts in ``keys``; -32602 saying to
    list again from the start for a cursor not made here, made for another list, or
    continuing after an item the list no longer has."""
    again = f"call {method} again without a cursor to list from the start."
    try:
        made_for, last = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        if not isinstance(made_for, str) or not isinstance(last, str):
            raise ValueError(cursor)
    except (ValueError, TypeError):
        raise InvalidParamsError(f"Invalid params: unknown cursor {cursor!r}; {again}") from None
    if made_for != method:
        raise InvalidParamsError(
            f"Invalid params: cursor {cursor!r} continues {made_for!r}, not {method}; {again}"
        )
    try:
        return keys.index(last) + 1
    except ValueError:
        raise InvalidParamsError(
            f"Invalid params: cursor {cursor!r} continues after {last!r}, which the list no "
            f"longer has (it changed); {again}"
        ) from None


def _agreed(
    asked: bool | None, kind: ToolsCapability | PromptsCapability | ResourcesCapability | None
) -> bool | None:
    """``True`` where a listen asked for a kind's list changes and the server declares
    them, else ``None`` (left out of the acknowledgement)."""
    return True if asked and kind is not None and kind.list_changed else None


def _recorded_state(
    state: dict[str, Any] | None,
    input_responses: JSONObject | None,
    validated: InputResponses | None,
) -> tuple[dict[str, JSONObject], dict[str, MCPModel], dict[str, int], dict[str, JSONObject]]:
    """The answers so far: those in the opened state plus this retry's responses to the
    questions the state says were asked (unasked keys are ignored, as the spec says),
    and the latter again as the models they were checked into (``validated``, the
    params' own models of them, where each is of the kind asked); the notifications
    earlier rounds sent; and what they kept in their ``Memo``."""
    if state is None:
        return {}, {}, {}, {}
    answers: dict[str, JSONObject] = dict(state.get("answers") or {})
    checked: dict[str, MCPModel] = {}
    asked: dict[str, str] = state.get("asked") or {}
    for key, method in asked.items():
        response = (input_responses or {}).get(key)
        if response is not None:
            answers[key] = response
            model = (validated or {}).get(key)
            checked[key] = (
                model
                if isinstance(model, _RESULT_TYPES[method])
                else _check_input_response(key, method, response)
            )
    sent: dict[str, int] = state.get("sent") or {}
    kept: dict[str, JSONObject] = state.get("kept") or {}
    return answers, checked, sent, kept


def _first_problem(exc: Exception) -> str:
    if isinstance(exc, pydantic.ValidationError):
        error = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in error["loc"])
        return f"{where}: {error['msg']}" if where else error["msg"]
    return str(exc)


ParamsT = TypeVar("ParamsT", bound=MCPModel)


def _params(model: type[ParamsT], request: IncomingRequest) -> ParamsT:
    """The request's params as ``model``, with ``_meta`` checked by hand: an object, and
    a progress token that is a string or an integer. The rest of ``_meta`` is the
    2026-07-28 declaration, which ``_modern_client`` has checked, and which the model
    would validate again on every request (about 4 µs) although ``_declaration`` keeps
    it validated."""
    params = request.params or {}
    if "_meta" in params:
        meta = as_object(params["_meta"])
        if meta is None:
            raise InvalidParamsError("Invalid params: _meta must be an object.")
        if "progressToken" in meta and as_request_id(meta["progressToken"]) is None:
            raise InvalidParamsError(
                "Invalid params: _meta.progressToken must be a string or an integer."
            )
        params = {key: value for key, value in params.items() if key != "_meta"}
    try:
        return model.model_validate(params)
    except pydantic.ValidationError as exc:
        raise invalid_params(exc) from None


def _modern_client(meta: JSONObject) -> ClientState:
    """The client as a 2026-07-28 request describes itself in its ``_meta``."""
    version = meta.get(META_PROTOCOL_VERSION)
    if version is None:
        raise InvalidParamsError(
            f"Invalid params: _meta must carry {META_PROTOCOL_VERSION!r} on every "
            "2026-07-28 request."
        )
    if version not in MODERN_VERSIONS:
        text, supported = per_request_refusal(version)
        raise UnsupportedProtocolVersionError(text, {"supported": supported, "requested": version})
    raw_capabilities = as_object(meta.get(META_CLIENT_CAPABILITIES))
    if raw_capabilities is None:
        raise InvalidParamsError(
            f"Invalid params: _meta must carry {META_CLIENT_CAPABILITIES!r} (an object; "
            "empty if the client declares nothing)."
        )
    raw_info = meta.get(META_CLIENT_INFO)
    if raw_info is None:  # optional; only its absence means "unknown", not an empty value
        raw_info = {"name": "unknown", "version": "unknown"}
    level = meta.get(META_LOG_LEVEL)
    if level is not None and level not in LOG_LEVELS:
        raise InvalidParamsError(f"Invalid params: unknown log level {level!r}.")
    capabilities, client_info = _declaration(raw_capabilities, raw_info)
    return ClientState(
        protocol_version=str(version),
        capabilities=capabilities,
        client_info=client_info,
        log_level=level,
        modern=True,
    )


_DECLARATIONS_KEPT = 256
_DECLARATION_BYTES_KEPT = 4096
"""Larger declarations are validated on each request and never kept: real ones take a
few hundred bytes, and a hostile client must not make the server hold 256 bodies."""
_declarations: dict[bytes, tuple[ClientCapabilities, Implementation]] = {}
"""Validated client declarations by their JSON. A 2026-07-28 client sends the same
capabilities and info with every request, and validating them anew was two of the few
model validations each request costs. Requests that declare the same share the models,
as a legacy session's requests share its one declaration."""


def _declaration(raw_capabilities: Any, raw_info: Any) -> tuple[ClientCapabilities, Implementation]:
    """The validated capabilities and client info of a 2026-07-28 request."""
    try:
        key = pydantic_core.to_json((raw_capabilities, raw_info))
    except pydantic_core.PydanticSerializationError:  # not JSON (in-process): no key
        key = None
    if key is not None and len(key) > _DECLARATION_BYTES_KEPT:
        key = None
    declared = _declarations.get(key) if key is not None else None
    if declared is None:
        try:
            declared = (
                ClientCapabilities.model_validate(raw_capabilities),
                Implementation.model_validate(raw_info),
            )
        except pydantic.ValidationError as exc:
            raise invalid_params(exc) from None
        if key is not None:
            if len(_declarations) >= _DECLARATIONS_KEPT:
                _declarations.clear()  # a flood of distinct declarations: start over
            _declarations[key] = declared
    return declared


def _not_found(client: ClientState | None, error: ResourceNotFoundError) -> MCPError:
    """``error`` as ``client``'s generation says: -32002 until 2025-11-25, invalid params
    (-32602) with the same message and data on 2026-07-28."""
    modern = client is not None and client.modern
    return InvalidParamsError(error.message, error.data) if modern else error


_RESULT_TYPES: dict[str, type[MCPModel]] = {
    "elicitation/create": ElicitResult,
    "sampling/createMessage": CreateMessageResult,
    "roots/list": ListRootsResult,
}


def _check_input_response(key: str, method: str, response: Any) -> MCPModel:
    """The client's answer to input request ``key``, checked against what was asked."""
    result_type = _RESULT_TYPES[method]
    try:
        return result_type.model_validate(response)
    except pydantic.ValidationError as exc:
        raise InvalidParamsError(
            f"Invalid params: inputResponses[{key!r}] is not a valid answer to {method!r} "
            f"(expected {result_type.__name__}): {exc.errors(include_url=False)[0]['msg']}."
        ) from None


def _completion(values: list[str]) -> Completion:
    """At most 100 values per the spec, saying whether there were more."""
    return Completion(
        values=values[:MAX_COMPLETION_VALUES],
        total=len(values),
        has_more=len(values) > MAX_COMPLETION_VALUES,
    )
