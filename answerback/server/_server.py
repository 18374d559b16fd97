"""``MCPServer``: declare tools with decorators, then serve them over any transport."""

from __future__ import annotations

import atexit
import contextlib
import functools
import inspect
import logging
import os
import re
import secrets
import sys
import traceback
from collections import deque
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Collection,
    Generator,
    Sequence,
)
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TypeVar, cast, get_args

import anyio
import pydantic

from answerback._options import (
    flag,
    http_url,
    one_of,
    port_number,
    positive_int,
    positive_int_or_none,
    positive_seconds,
    text,
    text_or_none,
    whole_number,
)
from answerback.jsonrpc import Endpoint, IncomingRequest, JSONObject, ReadStream, WriteStream
from answerback.jsonrpc._budget import RequestBytes
from answerback.jsonrpc._endpoint import REQUESTS_IN_FLIGHT
from answerback.server._arguments import (
    bad_value,
    check_optional_text,
    check_text,
    wrong_type,
)
from answerback.server._connection import Connection
from answerback.server._context import Context
from answerback.server._elicitation_binding import bound_elicitation_id, elicitation_principal
from answerback.server._error_details import ErrorDetails, check_error_details, redacts
from answerback.server._functions import running_in_threads, written_at
from answerback.server._icons_and_meta import URI_SCHEME, checked_icons, checked_meta_dict
from answerback.server._lifespan import Lifespan, checked_lifespan, failed_lifespan
from answerback.server._prompts import RegisteredPrompt
from answerback.server._registry import CompletionHandler, Registry
from answerback.server._request_state import RequestStateSealer
from answerback.server._resources import RegisteredResource, is_template
from answerback.server._tools import RegisteredTool
from answerback.transports import stdio_server_streams
from answerback.transports._framing import DEFAULT_MAX_MESSAGE_BYTES, checked_message_limit
from answerback.transports._loop import asyncio_loop_options
from answerback.transports._stdio_server import (
    StdioFailedError,
    greet_a_person_at_a_terminal,
    serve_until_stopped,
)
from answerback.transports.http._notification_bus import Notice, NotificationBus, SharedState
from answerback.transports.http._used_states import InMemoryUsedStates, UsedStates
from answerback.types import (
    META_SUBSCRIPTION_ID,
    CacheScope,
    CompletionsCapability,
    Icon,
    Implementation,
    LoggingCapability,
    MCPError,
    PromptsCapability,
    Resource,
    ResourcesCapability,
    ResourceTemplate,
    ServerCapabilities,
    SubscriptionFilter,
    ToolAnnotations,
    ToolsCapability,
)
from answerback.types._errors import argument_error

if TYPE_CHECKING:
    from answerback.transports.http import (
        AuthInfo,
        EventStore,
        HostPolicy,
        RequestAuthenticator,
        ServerState,
        StreamableHTTPApp,
    )

logger = logging.getLogger("answerback.server")

_REMEMBERED_NOTICES = 1024

_ADVISED_TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")
"""The tool names the specification advises: 1 to 128 of these characters."""
"""How many notice ids a server remembers to drop a notice that arrives twice."""

FunctionT = TypeVar("FunctionT", bound=Callable[..., Any])
CompletionHandlerT = TypeVar("CompletionHandlerT", bound=CompletionHandler)


class _PortedMethod:
    """A method other frameworks have that answerback spells another way
    (``_PORTED_METHODS``): reading it raises the ``AttributeError`` Python would, with
    answerback's way to do the same. One per name, not a ``__getattr__``, which would
    also catch an ``AttributeError`` raised inside a subclass's property and report
    the property itself as missing."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    def __get__(self, server: object, owner: type | None = None) -> NoReturn:
        name = self._name
        problem = (
            f"type object {owner.__name__!r} has no attribute {name!r}"
            if server is None and owner is not None
            else f"{type(server).__name__!r} object has no attribute {name!r}"
        )
        raise AttributeError(f"{problem}: {_PORTED_METHODS[name]}", name=name, obj=server)


class MCPServer:
    """An MCP server: tools (and the rest) declared with decorators, served anywhere.

    ``serve_connection`` answers one connection; ``run`` serves this process's
    stdio (the default) until the client goes away.
    """

    def __init__(
        self,
        name: str,
        *,
        version: str = "0.1.0",
        title: str | None = None,
        description: str | None = None,
        website_url: str | None = None,
        icons: Sequence[Icon | dict[str, Any]] | None = None,
        instructions: str | None = None,
        state_keys: Sequence[bytes] | None = None,
        state_ttl_seconds: float = 600.0,
        cache_ttl_ms: int = 0,
        cache_scope: Literal["public", "private"] = "private",
        page_size: int | None = None,
        max_input_requests: int = 32,
        error_details: ErrorDetails = "local",
        single_use_state: bool = False,
        lifespan: Callable[[MCPServer], AbstractAsyncContextManager[Any]] | None = None,
    ) -> None:
        """``state_keys`` seal 2026-07-28 ``requestState`` (32 random bytes each; the
        first seals, all open). Give every instance of a scaled-out server the same keys;
        by default each process makes its own. ``cache_ttl_ms``/``cache_scope`` are the
        caching hints on 2026-07-28 lists ("private": per user, the safe default).
        ``page_size`` splits lists into pages (``None``: one page).
        ``max_input_requests`` caps the questions in one 2026-07-28 round: a tool's own
        ``InputRequiredResult`` with more is refused, and questions that concurrent tasks
        ask beyond it wait for the next round.
        ``error_details`` says who reads the text of an unexpected exception (in a
        tool's error result or an internal error), which may hold secrets: ``"local"``
        clients on this machine only (stdio, in-process, HTTP from loopback), ``"full"``
        everyone, ``"redacted"`` no one; the others get a reference that the server
        logs with the traceback.
        ``single_use_state`` makes the ``requestState`` that ``ctx.elicit`` and friends
        seal on 2026-07-28 good for one retry only: the same state sent again is
        refused (-32602), on every replica sharing the HTTP app's state.

        ``title``, ``description``, ``website_url`` and ``icons`` go with the name and
        version into the ``serverInfo`` clients are told (``initialize``, and
        ``server/discover`` on 2026-07-28), so a host can show the server to a person
        by more than its name. ``icons`` are ``Icon`` objects or dicts of their wire
        fields, each ``src`` an https or http URL or a ``data:`` URI (what the
        specification allows); ``website_url`` an http(s) URL. A wrong type raises
        ``TypeError``, a value they may not hold ``ValueError``.

        ``lifespan`` opens what every request shares (a database pool, an HTTP client)
        once, however the server is served: a function taking the server and returning
        an async context manager (``@asynccontextmanager``), whose value tools read as
        ``ctx.lifespan_context``. It is entered before the first request is answered
        and left after the last (docs/server-features.md, "Sharing state between
        calls")."""
        self.name = text("name", name, "the server's name, as clients are told it")
        self.version = text("version", version, "the server's version, as clients are told it")
        self.title = text_or_none("title", title, "the server's name for people")
        self.description = text_or_none(
            "description", description, "what the server does, for people"
        )
        self.website_url = (
            None
            if website_url is None
            else http_url("website_url", website_url, "the server's website")
        )
        self.icons = checked_icons("MCPServer()", icons)
        if instructions is not None:
            text("instructions", instructions, "hints for a model on how to use the server")
        self.instructions = instructions
        state_ttl_seconds = positive_seconds("state_ttl_seconds", state_ttl_seconds)
        self.cache_ttl_ms = whole_number(
            "cache_ttl_ms",
            cache_ttl_ms,
            "how many milliseconds a client may reuse a list",
            "not at all",
        )
        self.cache_scope: CacheScope = cast(
            CacheScope, one_of("cache_scope", cache_scope, get_args(CacheScope))
        )
        self.page_size = positive_int_or_none(
            "page_size", page_size, "items per page", "every list in one page"
        )
        self.max_input_requests = positive_int(
            "max_input_requests", max_input_requests, "questions in one round"
        )
        check_error_details(error_details)
        self.error_details: ErrorDetails = error_details
        self.single_use_state = flag("single_use_state", single_use_state)
        self._registry = Registry(RequestStateSealer(state_keys, state_ttl_seconds))
        self._removed_from: set[Literal["tools", "prompts", "resources"]] = set()
        """Kinds something was removed from. They stay declared when the last one goes: a
        server whose tools change is one that offers tools, and a client that connects
        while it has none should still list them when told the list changed."""
        self._connections: set[Connection] = set()
        self._endpoints: set[Endpoint] = set()
        """The connections' JSON-RPC ends, which count what each still serves."""
        self._origin = secrets.token_hex(8)
        """Names this server's notices on a bus (it drops its own when they come back)."""
        self._buses: list[NotificationBus] = []
        self._used_states: list[UsedStates] = [InMemoryUsedStates()]
        self._seen_notices: deque[str] = deque(maxlen=_REMEMBERED_NOTICES)
        self._lifespan = Lifespan(self, checked_lifespan(lifespan))
        self._threads_left: list[str] = []
        """The user functions still running in worker threads when serving last ended
        (see ``run``)."""

    def __repr__(self) -> str:
        """The server's name and version and how much it offers, for a log line or a
        debugger: never its keys or settings."""
        registry = self._registry
        return (
            f"MCPServer({self.name!r}, version={self.version!r}, "
            f"tools={len(registry.tools)}, prompts={len(registry.prompts)}, "
            f"resources={len(registry.fixed_resources())}, "
            f"templates={len(registry.resource_templates())})"
        )

    # -- declaring -------------------------------------------------------------------

    def tool(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | None = None,
        structured_output: bool | None = None,
        input_schema: dict[str, Any] | None = None,
        scopes: Sequence[str] = (),
        icons: Sequence[Icon | dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Callable[[FunctionT], FunctionT]:
        """Register a function as a tool; its signature is the input schema.

        The docstring is the description unless one is given. ``structured_output``
        defaults to "whenever the return annotation allows it". ``input_schema``
        advertises a hand-written JSON Schema exactly as given (2020-12 keywords and
        all); the signature still validates the arguments the function receives.
        ``scopes``: over HTTP with a ``ResourceServer``, a call whose token lacks any of
        them is refused with 403 ``insufficient_scope`` naming them (clients step up).
        ``icons`` (``Icon`` objects or dicts; see ``MCPServer``) and ``meta`` (a dict of
        JSON values, sent as the tool's ``_meta``) are listed with the tool as given, for
        hosts that show icons or read extension metadata.

        An argument of the wrong type raises ``TypeError`` here, and one of the right type
        that is not allowed (an empty name, an icon ``src`` that is no http(s) or
        ``data:`` URI) ``ValueError``; so does decorating anything
        but a function (a class too), or writing ``@mcp.tool`` without its parentheses. A
        name already registered raises ``ValueError``: to replace that tool, take it away
        first with ``remove_tool``.
        """
        call = "mcp.tool()"
        _check_labels(call, name, title, description)
        if annotations is not None and not isinstance(
            cast(object, annotations), ToolAnnotations | dict
        ):
            raise wrong_type(
                call, "annotations", "a ToolAnnotations", annotations, _ANNOTATIONS_ADVICE
            )
        if structured_output is not None and not isinstance(cast(object, structured_output), bool):
            raise wrong_type(
                call,
                "structured_output",
                "True, False or None",
                structured_output,
                "Pass None to decide from the return annotation, or a bool.",
            )
        if input_schema is not None and not isinstance(cast(object, input_schema), dict):
            raise wrong_type(
                call,
                "input_schema",
                "a dict (a JSON Schema)",
                input_schema,
                "Pass the JSON Schema of the tool's arguments, or None to take it from the "
                "signature.",
            )
        _check_scopes(call, scopes)
        checked_icon_list = checked_icons(call, icons)
        checked_meta = checked_meta_dict(call, meta)

        def register(function: FunctionT) -> FunctionT:
            _check_decorated("@mcp.tool()", function, name)
            try:
                registered = RegisteredTool.from_function(
                    function,
                    name=name,
                    title=title,
                    description=description,
                    annotations=annotations,
                    structured_output=structured_output,
                    context_type=Context,
                    input_schema=input_schema,
                    scopes=scopes,
                    icons=checked_icon_list,
                    meta=checked_meta,
                )
            except pydantic.ValidationError as exc:  # what the checks leave: inside a dict
                raise argument_error(call, exc, {"annotations": _ANNOTATIONS_ADVICE}) from None
            tools = self._registry.tools
            taken = registered.definition.name
            if taken in tools:
                raise _name_taken("tool", name, taken, tools[taken].function)
            _warn_of_unusual_tool_name(taken)
            tools[taken] = registered
            return function

        return register

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        icons: Sequence[Icon | dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Callable[[FunctionT], FunctionT]:
        """Register a function producing a resource's contents.

        ``uri`` is fixed (``"config://app"``) or a template whose ``{placeholders}`` are
        the function's parameters (``"users://{user_id}/profile"``), filled percent-decoded
        and converted to their annotations; a parameter no URI text can become (a class
        of your own) raises ``TypeError`` here. ``icons`` and ``meta`` (the ``_meta``)
        are listed with the resource or template as given, checked as for ``tool()``.
        An argument of the wrong type raises
        ``TypeError`` here, and a ``uri`` with no scheme, or a broken
        placeholder, ``ValueError``; so does decorating anything but a function (a class
        too). A ``uri`` already registered raises ``ValueError``, and so does a template
        matching the same URIs as one registered (``users://{id}/profile``): to replace
        that resource, take it away first with ``remove_resource``.
        """
        call = "mcp.resource()"
        if callable(uri):
            raise wrong_type(
                call,
                "uri",
                "a string",
                uri,
                "Write @mcp.resource(uri) with the resource's URI, such as "
                "@mcp.resource('config://app').",
            )
        check_uri(call, uri)
        _check_labels(call, name, title, description)
        check_optional_text(
            call, "mime_type", mime_type, "Pass a MIME type such as 'text/plain', or None."
        )
        checked_icon_list = checked_icons(call, icons)
        checked_meta = checked_meta_dict(call, meta)

        def register(function: FunctionT) -> FunctionT:
            _check_decorated("@mcp.resource()", function)
            taken = self._registry.same_uris(uri)
            if taken is not None:
                raise _uri_taken(uri, *taken)
            registered = RegisteredResource.from_function(
                function,
                uri,
                name=name,
                title=title,
                description=description,
                mime_type=mime_type,
                context_type=Context,
                icons=checked_icon_list,
                meta=checked_meta,
            )
            self._registry.resources[uri] = registered
            return function

        return register

    def prompt(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        icons: Sequence[Icon | dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Callable[[FunctionT], FunctionT]:
        """Register a function as a prompt; its parameters are the prompt's arguments,
        converted from the strings clients send to their annotations (a value that does
        not convert is refused with -32602; a parameter no text can become, such as a
        class of your own, raises ``TypeError`` here). ``icons`` and ``meta`` (the
        ``_meta``) are listed with the prompt as given, checked as for ``tool()``.

        An argument of the wrong type raises ``TypeError`` here, an empty name (or an
        icon ``src`` that is no http(s) or ``data:`` URI) ``ValueError``; so does
        decorating anything but a function (a class too), or writing ``@mcp.prompt``
        without its parentheses. A name already registered raises
        ``ValueError``: to replace that prompt, take it away first with
        ``remove_prompt``."""
        call = "mcp.prompt()"
        _check_labels(call, name, title, description)
        checked_icon_list = checked_icons(call, icons)
        checked_meta = checked_meta_dict(call, meta)

        def register(function: FunctionT) -> FunctionT:
            _check_decorated("@mcp.prompt()", function, name)
            registered = RegisteredPrompt.from_function(
                function,
                name=name,
                title=title,
                description=description,
                context_type=Context,
                icons=checked_icon_list,
                meta=checked_meta,
            )
            prompts = self._registry.prompts
            taken = registered.definition.name
            if taken in prompts:
                raise _name_taken("prompt", name, taken, prompts[taken].function)
            prompts[taken] = registered
            return function

        return register

    def remove_tool(self, name: str) -> None:
        """Take away the tool registered as ``name``: it is no longer listed, and a call
        to it (a 2026-07-28 retry too) fails as one to any unknown tool, while calls
        already running finish. Clients are not told: call ``notify_tools_changed()``.

        A ``name`` that is no string raises ``TypeError``; one no tool has,
        ``ValueError``."""
        call = "mcp.remove_tool()"
        check_text(call, "name", name, "Pass the name the tool was registered under.")
        if self._registry.tools.pop(name, None) is None:
            raise _not_registered(call, "tool", name)
        self._removed_from.add("tools")

    def remove_prompt(self, name: str) -> None:
        """Take away the prompt registered as ``name``: it is no longer listed, and a
        request for it fails as one for any unknown prompt, while those already being
        answered finish. Clients are not told: call ``notify_prompts_changed()``.

        A ``name`` that is no string raises ``TypeError``; one no prompt has,
        ``ValueError``."""
        call = "mcp.remove_prompt()"
        check_text(call, "name", name, "Pass the name the prompt was registered under.")
        if self._registry.prompts.pop(name, None) is None:
            raise _not_registered(call, "prompt", name)
        self._removed_from.add("prompts")

    def remove_resource(self, uri: str) -> None:
        """Take away the resource or template registered with ``uri``, exactly as it was
        given to ``@mcp.resource()``: it is no longer listed, and reading a URI only it
        served fails as for any unknown resource, while reads already running finish.
        Clients are not told: call ``notify_resources_changed()``.

        A ``uri`` that is no string raises ``TypeError``; one not registered,
        ``ValueError`` (which names the template, if a template serves that URI)."""
        call = "mcp.remove_resource()"
        check_text(
            call, "uri", uri, "Pass the URI or URI template the resource was registered with."
        )
        registry = self._registry
        if registry.resources.pop(uri, None) is not None:
            self._removed_from.add("resources")
            return
        if is_template(uri):  # perhaps registered with other placeholder names
            same = registry.same_uris(uri)
            key = same[0] if same is not None else None
            problem = f"{uri!r} is not a URI template registered here; {key!r} matches its URIs"
        else:  # perhaps served by a template
            found = registry.find_resource(uri)
            served = found[0].definition if found is not None else None
            key = served.uri_template if isinstance(served, ResourceTemplate) else None
            problem = (
                f"{uri!r} is not the URI of a registered resource; the template {key!r} serves it"
            )
        if key is not None:
            raise bad_value(call, "uri", problem, f"To take that template away, pass {key!r}.")
        raise bad_value(
            call,
            "uri",
            f"{uri!r} is not the URI of a registered resource or template",
            "Pass the URI or URI template exactly as given to @mcp.resource().",
        )

    def completion(
        self, _forgot_parentheses: None = None, /
    ) -> Callable[[CompletionHandlerT], CompletionHandlerT]:
        """Register the handler suggesting values for prompt and template arguments.

        It gets ``(ref, argument, context)`` and returns a list of strings (or a
        ``Completion``); the server then declares the ``completions`` capability.
        Anything but an async function raises ``TypeError``, and so does writing
        ``@mcp.completion`` without its parentheses.
        """
        if _forgot_parentheses is not None:
            raise TypeError(
                "Invalid use of mcp.completion(): it takes no arguments. Write "
                "@mcp.completion(), with parentheses, above the async handler."
            )

        def register(handler: CompletionHandlerT) -> CompletionHandlerT:
            given = cast(object, handler)
            if not callable(given) or (
                inspect.isfunction(given) and not inspect.iscoroutinefunction(given)
            ):
                raise wrong_type(
                    "@mcp.completion()",
                    "the handler",
                    "an async function",
                    handler,
                    "Decorate an `async def` taking (ref, argument, context).",
                )
            self._registry.completion_handler = handler
            return handler

        return register

    if not TYPE_CHECKING:  # hidden from type checkers, which go on reporting them
        add_tool = _PortedMethod()
        add_prompt = _PortedMethod()
        add_resource = _PortedMethod()

    @property
    def capabilities(self) -> ServerCapabilities:
        """What this server declares to clients: each kind it has registered so far (and
        still declares after removing the last one)."""
        registry = self._registry
        removed_from = self._removed_from
        return ServerCapabilities(
            tools=(
                ToolsCapability(list_changed=True)
                if registry.tools or "tools" in removed_from
                else None
            ),
            prompts=(
                PromptsCapability(list_changed=True)
                if registry.prompts or "prompts" in removed_from
                else None
            ),
            resources=(
                ResourcesCapability(subscribe=True, list_changed=True)
                if registry.resources or "resources" in removed_from
                else None
            ),
            completions=CompletionsCapability() if registry.completion_handler else None,
            logging=LoggingCapability(),
        )

    # -- telling clients about changes -----------------------------------------------

    async def notify_resource_updated(self, uri: str) -> None:
        """Tell the clients subscribed to ``uri`` that it changed (a ``uri`` that is not
        a string raises ``TypeError``)."""
        check_text(
            "mcp.notify_resource_updated()",
            "uri",
            uri,
            "Pass the URI of the resource that changed, as a string.",
        )
        await self._broadcast("notifications/resources/updated", {"uri": uri})

    async def notify_tools_changed(self) -> None:
        """Tell clients the tool list changed (so they list it again)."""
        await self._broadcast("notifications/tools/list_changed")

    async def notify_prompts_changed(self) -> None:
        """Tell clients the prompt list changed (so they list it again)."""
        await self._broadcast("notifications/prompts/list_changed")

    async def notify_resources_changed(self) -> None:
        """Tell clients the resource list changed (so they list it again)."""
        await self._broadcast("notifications/resources/list_changed")

    async def _broadcast(self, method: str, params: JSONObject | None = None) -> None:
        """Deliver to this server's own clients now, then publish on every attached bus
        for the other replicas (a bus that cannot publish raises, after local delivery)."""
        notice = Notice(secrets.token_hex(16), self._origin, method, params)
        await self._deliver(notice)
        for bus in list(self._buses):
            await bus.publish(notice)

    async def _deliver(self, notice: Notice) -> None:
        """Send a notice to the legacy connections that want it (where each is its
        session's home for broadcasts) and to the 2026 listen streams that asked."""
        if notice.id in self._seen_notices:
            return
        self._seen_notices.append(notice.id)
        wants = _listener_filters.get(notice.method)
        if wants is None:
            logger.debug("ignored notice %r from a bus: not a broadcast", notice.method)
            return
        params = notice.params
        uri = (params or {}).get("uri")
        for connection in list(self._connections):
            notify = connection.notify
            if connection.legacy_client is None or notify is None:
                continue
            if not await connection.homed():
                continue
            if notice.method == _RESOURCE_UPDATED and uri not in connection.subscriptions:
                continue
            with contextlib.suppress(MCPError):
                await notify(notice.method, params)
        for listener in list(self._registry.listeners):
            if wants(listener.wanted, uri):
                meta = {META_SUBSCRIPTION_ID: listener.request.id}
                with contextlib.suppress(MCPError):
                    await listener.request.notify(notice.method, {**(params or {}), "_meta": meta})

    @contextlib.asynccontextmanager
    async def attach_state(self, state: SharedState) -> AsyncGenerator[None, None]:
        """Share notifications and single-use state with the other replicas behind
        ``state`` (the HTTP app does this in its lifespan) until the block exits, and
        hold the server's own ``lifespan`` meanwhile (entered first: one that fails to
        start fails the app's start).

        Meanwhile ``notify_*`` also publish on ``state.notifications``, every notice
        other servers publish there reaches this server's clients, and single-use
        ``requestState`` is claimed in ``state.used_states``.
        """
        bus, used_states = state.notifications, state.used_states
        async with contextlib.AsyncExitStack() as stack:
            await stack.enter_async_context(self._lifespan.in_use())
            if used_states is not None:
                self._used_states.append(used_states)
                stack.callback(self._used_states.remove, used_states)
            if bus is not None:
                notices = await stack.enter_async_context(bus.subscribe())
                tg = await stack.enter_async_context(anyio.create_task_group())
                tg.start_soon(self._deliver_from, notices)
                stack.callback(tg.cancel_scope.cancel)
                self._buses.append(bus)
                stack.callback(self._buses.remove, bus)
            try:
                yield
            finally:  # the app's sessions are over: what they leave running, ``run`` tells
                self._threads_left = running_in_threads()

    async def _deliver_from(self, notices: AsyncIterator[Notice]) -> None:
        """Deliver other servers' notices for as long as the state is attached."""
        async for notice in notices:
            if notice.origin == self._origin:
                continue
            try:
                await self._deliver(notice)
            except Exception:
                # One bad delivery must not end delivery (and the app's lifespan) for all.
                logger.exception("Delivering %s from another replica failed", notice.method)

    @property
    def used_states(self) -> UsedStates:
        """Where single-use ``requestState`` is claimed: the attached state's record, or
        this process's own."""
        return self._used_states[-1]

    def bound_elicitation_id(self, user: AuthInfo) -> str:
        """A new URL-mode elicitation id bound to ``user`` (``ctx.auth``): put it in the
        link, and have the page it opens compare ``elicitation_principal(id)`` with the
        principal of the person there, so a forwarded link is useless to anyone else.
        Sealed with ``state_keys``; valid for ``state_ttl_seconds``."""
        return bound_elicitation_id(self._registry.sealer, user)

    def elicitation_principal(self, elicitation_id: str) -> str | None:
        """Whom ``bound_elicitation_id`` made ``elicitation_id`` for (an
        ``AuthInfo.principal``); ``None`` if not made here, altered or expired."""
        return elicitation_principal(self._registry.sealer, elicitation_id)

    def tool_scopes(self) -> dict[str, frozenset[str]]:
        """The tools that declare OAuth scopes, and theirs (read by ``ResourceServer``)."""
        return {name: tool.scopes for name, tool in self._registry.tools.items() if tool.scopes}

    def tool_input_schema(self, name: str) -> JSONObject | None:
        """A tool's input schema (the HTTP layer checks ``Mcp-Param-*`` headers with it)."""
        tool = self._registry.tools.get(name)
        return tool.definition.input_schema if tool is not None else None

    @property
    def server_info(self) -> Implementation:
        """The name and version this server introduces itself with, and the title,
        description, website and icons it was given."""
        return Implementation(
            name=self.name,
            version=self.version,
            title=self.title,
            description=self.description,
            website_url=self.website_url,
            icons=list(self.icons) if self.icons is not None else None,
        )

    # -- serving ---------------------------------------------------------------------

    async def serve_connection(
        self,
        read_stream: ReadStream,
        write_stream: WriteStream,
        *,
        receives_broadcasts: Callable[[], bool | Awaitable[bool]] | None = None,
        max_requests_in_flight: int | None = REQUESTS_IN_FLIGHT,
        request_bytes: RequestBytes | None = None,
        answer_after_input_ends: bool = False,
        keeps_roots: bool = True,
        max_request_bytes: int | None = None,
    ) -> None:
        """Answer one connection until the client closes it.

        ``receives_broadcasts`` (asked, and awaited if it returns an awaitable, at each
        broadcast) says whether this connection is its session's home for list-changed
        and resource-updated notifications: with replicas, several may serve one legacy
        session, and only one must deliver them. Being async, it may first bring the
        connection up to date (resource subscriptions made through other replicas).
        ``None``: always. ``max_requests_in_flight`` bounds the client's requests
        answered at once (see ``REQUESTS_IN_FLIGHT``); ``None`` where each request holds
        a transport connection of its own, and so is bounded by those.
        ``request_bytes``: the budget the client's requests hold their sizes from while
        answered, which connections may share (``None``: one of this connection's own;
        see ``answerback.jsonrpc._budget``).
        ``answer_after_input_ends``: the client may close its side and still read this
        one (a pipe), so the requests already read are answered before this returns;
        otherwise the end of input cancels them (the client is gone).
        ``keeps_roots``: a legacy client's roots, once listed, serve its later requests
        until it says they changed; false where other processes serve the same session
        and may be the ones told (each request then asks for itself).
        ``max_request_bytes``: the largest request the transport accepts (the HTTP app's
        ``max_body_bytes``, stdio's message limit; ``None``: no limit). A 2026-07-28
        round whose ``requestState`` would make the client's retry larger fails at once
        with an error saying so, rather than the retry being refused.

        The server's ``lifespan`` runs while this does: entered first, unless another
        connection (or the HTTP app) already holds it, whose value is then shared.
        """
        async with self._lifespan.in_use():
            await self._serve(
                read_stream,
                write_stream,
                receives_broadcasts,
                max_requests_in_flight,
                request_bytes,
                answer_after_input_ends,
                keeps_roots,
                max_request_bytes,
            )

    async def _serve(
        self,
        read_stream: ReadStream,
        write_stream: WriteStream,
        receives_broadcasts: Callable[[], bool | Awaitable[bool]] | None,
        max_requests_in_flight: int | None,
        request_bytes: RequestBytes | None,
        answer_after_input_ends: bool,
        keeps_roots: bool,
        max_request_bytes: int | None,
    ) -> None:
        connection = Connection(
            self, self._registry, receives_broadcasts, keeps_roots, max_request_bytes
        )
        async with Endpoint(
            read_stream,
            write_stream,
            on_request=connection.handle,
            on_notification=connection.notification,
            name="client",
            redact_errors=self.redacts_errors,
            max_in_flight=max_requests_in_flight,
            request_bytes=request_bytes,
            answer_after_input_ends=answer_after_input_ends,
        ) as endpoint:
            connection.notify = endpoint.notify
            self._connections.add(connection)
            self._endpoints.add(endpoint)
            try:
                await endpoint.closed.wait()
            finally:
                self._connections.discard(connection)
                self._endpoints.discard(endpoint)

    def calls_in_progress(self) -> tuple[int, int]:
        """The clients' requests being answered now, over every connection, and this
        server's own requests to them (elicitation, sampling, roots) still waiting for
        their answers: what a server that stops now cuts off, for its operator's log.
        A 2026-07-28 ``subscriptions/listen`` is a stream the client holds open, not a
        call: it is left out, or a drained server would never read as idle."""
        endpoints = list(self._endpoints)
        requests = sum(endpoint.in_flight_count for endpoint in endpoints)
        return (
            max(requests - len(self._registry.listeners), 0),
            sum(endpoint.pending_count for endpoint in endpoints),
        )

    @property
    def lifespan_context(self) -> Any:
        """What the ``lifespan`` yielded, while it runs (a connection is served, or the
        HTTP app's lifespan is running); ``None`` otherwise, and without a lifespan."""
        return self._lifespan.value

    def redacts_errors(self, request: IncomingRequest) -> bool:
        """Whether an unexpected exception answering ``request`` keeps its text here
        (``error_details``)."""
        return redacts(self.error_details, request)

    async def run_stdio_async(self, *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        """Serve this process's stdin/stdout until the client closes stdin, answering
        every request read before it did (``server < requests.jsonl`` gets every answer).

        ``max_message_bytes`` caps one message either way (64 MiB unless given): a larger
        request gets an error response, a larger answer is replaced by one, and a
        2026-07-28 round whose retry would not fit fails saying so. Raises ``TypeError``
        or ``ValueError`` if it is not a positive ``int``; ``OSError`` if stdout cannot be
        written (answers were lost), or if this process has no stdin or stdout."""
        async with stdio_server_streams(max_message_bytes=max_message_bytes) as streams:
            await self.serve_connection(
                *streams,
                answer_after_input_ends=True,
                max_request_bytes=max_message_bytes,
            )

    def http_app(
        self,
        *,
        path: str = "/mcp",
        host_policy: HostPolicy | None = None,
        event_store: EventStore | None = None,
        json_response: bool = False,
        max_body_bytes: int = 4 * 1024 * 1024,
        body_timeout_seconds: float = 30.0,
        max_sessions: int = 1000,
        session_idle_seconds: float = 3600.0,
        state: ServerState | None = None,
        auth: RequestAuthenticator | None = None,
    ) -> StreamableHTTPApp:
        """This server as an ASGI application serving streamable HTTP at ``path``.

        It accepts only localhost ``Host``/``Origin`` headers unless ``host_policy``
        says otherwise. Mounted inside another Starlette app, pass
        ``lifespan=app.router.lifespan_context`` to the parent so sessions can run.
        ``state`` keeps sessions, events and calls: in this process by default, or
        ``RedisState(url)`` for replicas behind a load balancer (docs/transports.md,
        "Scaling out"). ``auth`` authenticates each request (a ``RequestAuthenticator``, such as
        ``ResourceServer``, which also enforces ``@tool(scopes=...)``).
        The limits are described with ``StreamableHTTPApp`` (docs/transports.md).
        """
        from answerback.server._auth import ResourceServer
        from answerback.transports.http import StreamableHTTPApp

        if isinstance(auth, ResourceServer):
            auth.attach(self)  # it checks the scopes of this server's tools
        return StreamableHTTPApp(
            self,
            path=path,
            host_policy=host_policy,
            event_store=event_store,
            json_response=json_response,
            max_body_bytes=max_body_bytes,
            body_timeout_seconds=body_timeout_seconds,
            max_sessions=max_sessions,
            session_idle_seconds=session_idle_seconds,
            state=state,
            auth=auth,
        )

    def run(
        self,
        transport: Literal["stdio", "streamable-http"] = "stdio",
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        path: str = "/mcp",
        host_policy: HostPolicy | None = None,
        backend: Literal["asyncio", "trio"] = "asyncio",
        state: ServerState | None = None,
        auth: RequestAuthenticator | None = None,
        max_message_bytes: int | None = None,
    ) -> None:
        """Run the server in this process: the blocking entry point of a server script.

        ``"stdio"`` serves stdin/stdout until the client closes them, or until SIGTERM or
        SIGHUP, which cancel the requests still running (their cleanup runs) and return,
        printing nothing (a stray ``print`` in a tool goes to stderr while it runs), except
        one line on stderr for a person who started it in a terminal, saying how to talk
        to it.
        ``"streamable-http"`` serves ``http://host:port/path`` with uvicorn until Ctrl-C,
        SIGTERM or SIGHUP, with one line on stderr saying where (see ``run_uvicorn``). Ctrl-C stops
        either without a traceback and exits with status 130, the shell's code for an
        interrupted program; a port already in use, or a stdout that cannot be written (a
        full disk), exits with a one-line message (status 1).
        Either way, a plain ``def`` function still running in its worker thread once
        serving has ended (stuck on a lock, a socket without a timeout) is not waited
        for, as Python would wait at exit, for ever: a warning on the
        ``answerback.server`` logger names it, the ``atexit`` handlers run, and the
        process ends with the status it would have had (``os._exit``), the thread left:
        ``run`` then never returns, so code after it and the ``finally`` blocks around it
        do not run. (Served otherwise, on asyncio, Python waits for the thread at exit.)
        ``backend="trio"`` serves stdio on trio (uvicorn, and so HTTP, needs asyncio).
        ``state`` and ``auth`` are passed to ``http_app`` (streamable HTTP only).
        ``max_message_bytes`` caps one stdio message either way (64 MiB if ``None``; see
        ``run_stdio_async``); it must be a positive ``int`` (else ``TypeError`` or
        ``ValueError``). It is stdio's only: with ``"streamable-http"`` it raises
        ``ValueError`` (HTTP limits request bodies instead, with
        ``http_app(max_body_bytes=...)`` served by ``run_uvicorn``).
        """
        transports = ("stdio", "streamable-http")
        if transport in _PORTED_TRANSPORTS:
            listed = ", ".join(map(repr, transports))
            raise ValueError(
                f"transport must be one of {listed}, got {transport!r}: "
                f"{_PORTED_TRANSPORTS[transport]}"
            )
        one_of("transport", transport, transports)
        one_of("backend", backend, ("asyncio", "trio"))
        if transport == "stdio":
            limit = (
                DEFAULT_MAX_MESSAGE_BYTES
                if max_message_bytes is None
                else checked_message_limit(max_message_bytes)
            )
            greet_a_person_at_a_terminal(self.name)
            with (
                self._exits_without_waiting_for_threads(),
                self._exits_if_the_lifespan_fails(logged_by_uvicorn=False),
            ):
                try:
                    options = asyncio_loop_options() if backend == "asyncio" else {}
                    anyio.run(
                        serve_until_stopped,
                        functools.partial(self._serve_stdio, limit),
                        backend=backend,
                        backend_options=options,
                    )
                except KeyboardInterrupt:
                    raise SystemExit(130) from None
                except StdioFailedError as exc:
                    raise SystemExit(f"answerback: {exc.strerror}.") from None
                except BaseExceptionGroup as group:
                    # trio delivers Ctrl-C inside the task group that reads stdin.
                    interrupted, rest = group.split(KeyboardInterrupt)
                    if interrupted is None or rest is not None:
                        raise
                    raise SystemExit(130) from None
        elif transport == "streamable-http":
            from answerback.transports.http import HostPolicy, run_uvicorn
            from answerback.transports.http._uvicorn import refuse_inside_event_loop

            if backend != "asyncio":
                raise ValueError(
                    f"backend={backend!r} cannot serve streamable HTTP: uvicorn runs on "
                    "asyncio. Leave the backend out, or use transport='stdio'."
                )
            refuse_inside_event_loop("mcp.run()", "mcp.http_app()")
            if max_message_bytes is not None:
                raise ValueError(
                    "max_message_bytes is stdio's limit; over streamable HTTP, limit requests "
                    "with mcp.http_app(max_body_bytes=...) and serve that app with "
                    "answerback.transports.http.run_uvicorn."
                )
            text("host", host, "the address to listen on, such as '127.0.0.1'")
            port_number(port)

            app = self.http_app(
                path=path,
                host_policy=host_policy or HostPolicy.for_bind(host),
                state=state,
                auth=auth,
            )
            with (
                self._exits_without_waiting_for_threads(),
                self._exits_if_the_lifespan_fails(logged_by_uvicorn=True),
            ):
                run_uvicorn(app, host=host, port=port)

    async def _serve_stdio(self, max_message_bytes: int) -> None:
        """``run_stdio_async``, noting what it leaves running in threads for ``run``."""
        try:
            await self.run_stdio_async(max_message_bytes=max_message_bytes)
        finally:
            self._threads_left = running_in_threads()

    @contextlib.contextmanager
    def _exits_without_waiting_for_threads(self) -> Generator[None, None, None]:
        """End the process, as ``run`` would have (its status, its message), if serving
        ended with user functions still running in worker threads: a plain ``def`` tool
        stuck on a lock or a socket would otherwise hold the process for ever, since
        Python waits for such threads at exit and nothing can stop one. Says which."""
        self._threads_left = []
        try:
            yield
        except SystemExit as stopping:
            if self._threads_left:
                _exit_now(self._threads_left, stopping.code)
            raise
        except BaseException:
            if self._threads_left:
                traceback.print_exc()
                _exit_now(self._threads_left, 1)
            raise
        if self._threads_left:
            _exit_now(self._threads_left, 0)

    @contextlib.contextmanager
    def _exits_if_the_lifespan_fails(
        self, *, logged_by_uvicorn: bool
    ) -> Generator[None, None, None]:
        """End ``run`` with one line naming the error of a lifespan that failed to start
        or to stop (status 1), its traceback logged before (uvicorn logs it itself, then
        exits with status 3 or returns as if stopped), rather than a traceback of task
        groups or, over HTTP, a start that seems to have succeeded."""
        self._lifespan.failure = None
        try:
            yield
        finally:
            failure = self._lifespan.failure
            if failure is not None:
                if not logged_by_uvicorn:
                    logger.error("The server's lifespan failed", exc_info=failure)
                raise SystemExit(f"answerback: {failed_lifespan(failure)}") from None


def _exit_now(functions: list[str], status: object) -> NoReturn:
    """Warn that ``functions`` run on in threads, and end the process with ``status``
    (a ``SystemExit`` code) without waiting for them: as for daemon threads, the
    ``atexit`` handlers run, the threads are left where they are."""
    logger.warning(
        "The server stopped while %s still ran in a worker thread (a thread cannot be "
        "stopped); exiting without waiting for %s. Give blocking calls in plain `def` "
        "tools a timeout, so that they return.",
        ", ".join(functions),
        "it" if len(functions) == 1 else "them",
    )
    if status is not None and not isinstance(status, int):
        print(status, file=sys.stderr)
        status = 1
    atexit._run_exitfuncs()  # pyright: ignore[reportPrivateUsage]
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status or 0)


_RESOURCE_UPDATED = "notifications/resources/updated"
_listener_filters: dict[str, Callable[[SubscriptionFilter, object], bool]] = {
    _RESOURCE_UPDATED: lambda wanted, uri: uri in (wanted.resource_subscriptions or []),
    "notifications/tools/list_changed": lambda wanted, _: bool(wanted.tools_list_changed),
    "notifications/prompts/list_changed": lambda wanted, _: bool(wanted.prompts_list_changed),
    "notifications/resources/list_changed": lambda wanted, _: bool(wanted.resources_list_changed),
}
"""The broadcasts, and which 2026 listen streams want each (by its filter and the URI)."""


_ANNOTATIONS_ADVICE = "Pass ToolAnnotations(read_only_hint=True, ...), or None."

_PORTED_METHODS = {
    "add_tool": (
        "register a function as a tool with mcp.tool()(function) (the decorator, called "
        "on it); mcp.remove_tool(name) takes one away, and "
        "await mcp.notify_tools_changed() tells connected clients."
    ),
    "add_prompt": (
        "register a function as a prompt with mcp.prompt()(function); "
        "mcp.remove_prompt(name) takes one away, and "
        "await mcp.notify_prompts_changed() tells connected clients."
    ),
    "add_resource": (
        "register the function that reads a resource with mcp.resource(uri)(function); "
        "mcp.remove_resource(uri) takes one away, and "
        "await mcp.notify_resources_changed() tells connected clients."
    ),
}
"""What a server ported from the official SDK or FastMCP calls that answerback spells
another way, and that way."""

_PORTED_TRANSPORTS = {
    "http": "answerback calls streamable HTTP 'streamable-http'; pass that.",
    "sse": (
        "answerback does not serve the HTTP+SSE transport of protocol 2024-11-05, which "
        "streamable HTTP replaced; pass 'streamable-http' (clients of the official SDK "
        "and FastMCP speak it)."
    ),
}
"""Transport names other frameworks take for ``run``, and what to pass here instead."""


def _check_labels(call: str, name: object, title: object, description: object) -> None:
    """Refuse a ``name``, ``title`` or ``description`` that is no string (or ``None``),
    and an empty name; a function in ``name`` is ``@mcp.tool`` without its parentheses."""
    decorator = call.removesuffix("()")
    if callable(name):
        raise wrong_type(
            call,
            "name",
            "a string or None",
            name,
            f"Write @{decorator}(), with parentheses: {call} makes the decorator.",
        )
    check_optional_text(
        call, "name", name, "Pass the name clients see, or None for the function's name."
    )
    if name == "":
        raise bad_value(
            call, "name", "is empty", "Pass the name clients see, or None for the function's name."
        )
    check_optional_text(call, "title", title, "Pass a short title for people, or None.")
    check_optional_text(
        call, "description", description, "Pass a string, or None for the function's docstring."
    )


def _check_scopes(call: str, scopes: object) -> None:
    """Refuse ``scopes`` that are not a list of strings (a lone string would be read as
    one scope per letter)."""
    advice = "Pass a list of OAuth scope names, such as ['files:read']."
    if isinstance(scopes, str) or not isinstance(scopes, list | tuple | set | frozenset):
        raise wrong_type(call, "scopes", "a list of strings", scopes, advice)
    for index, scope in enumerate(cast("Collection[object]", scopes)):
        if not isinstance(scope, str):
            raise wrong_type(call, f"scopes[{index}]", "a string", scope, advice)


def _check_decorated(call: str, function: object, name: object = "") -> None:
    """Refuse to register anything but a function, and a lambda with no ``name`` to
    stand for its own (a tool's or a prompt's name is what clients call it by; a
    resource is called by its URI).

    A class is refused too, though calling it makes an instance: what would be served
    is its constructor, which is rarely what decorating a class means (a class with a
    ``__call__`` or ``run`` method, as other libraries' tools are), and a constructor
    makes a poor one: a plain class's ``__init__`` annotations are lost, and what it
    returns is the object's repr, or a prompt's error, with no output schema. A
    ``classmethod`` inside its class body cannot be called until the class exists."""
    if isinstance(function, type):
        raise wrong_type(
            call,
            "the decorated object",
            "a function",
            function,
            f"Decorate a def or async def (one returning a {function.__name__}, if that is "
            "what it should give), or register a method of an instance: "
            f"{call.removeprefix('@')}(instance.method).",
        )
    if isinstance(function, classmethod):
        raise wrong_type(
            call,
            "the decorated object",
            "a function",
            cast(object, function),
            "A classmethod can be registered once its class exists: after the class body, "
            f"write {call.removeprefix('@')}(TheClass.method).",
        )
    if not inspect.isroutine(function):
        raise wrong_type(
            call,
            "the decorated object",
            "a function",
            function,
            "Decorate a def or async def (wrap a partial or a callable object in one).",
        )
    if name is None and getattr(function, "__name__", None) == "<lambda>":
        raise bad_value(
            call.removeprefix("@"),
            "name",
            "is needed for a lambda, which has no name of its own",
            "Pass name=..., or register a def.",
        )


def _name_taken(kind: str, given: str | None, name: str, first: Callable[..., Any]) -> ValueError:
    """The error for a second ``kind`` (tool or prompt) registered under ``name``
    (``given``, or the function's own name when ``given`` is ``None``)."""
    whose = "" if given is not None else ", the function's own name,"
    return bad_value(
        f"mcp.{kind}()",
        "name",
        f"{name!r}{whose} is already taken by the {kind} registered from {_origin(first)}",
        f"Give this one another name with @mcp.{kind}(name=...), or call "
        f"mcp.remove_{kind}({name!r}) first to replace that one.",
    )


def _uri_taken(uri: str, key: str, first: RegisteredResource) -> ValueError:
    """The error for a resource registered at ``uri`` when ``first`` already serves the
    same URIs (registered with ``key``: ``uri`` itself, or a template of its shape)."""
    origin = _origin(first.function)
    if key == uri:
        kind = "resource" if isinstance(first.definition, Resource) else "resource template"
        problem = f"{uri!r} is already taken by the {kind} registered from {origin}"
    else:
        problem = (
            f"{uri!r} matches the same URIs as the template {key!r}, registered from "
            f"{origin}, which would answer every read of them"
        )
    return bad_value(
        "mcp.resource()",
        "uri",
        problem,
        f"Give this one another URI, or call mcp.remove_resource({key!r}) first to replace "
        "that one.",
    )


def _not_registered(call: str, kind: str, name: str) -> ValueError:
    """The error for removing a ``kind`` (tool or prompt) no one registered as ``name``."""
    return bad_value(
        call,
        "name",
        f"{name!r} is not the name of a registered {kind}",
        f"Pass the name it was registered under: @mcp.{kind}(name=...), or else its "
        "function's name.",
    )


def _origin(function: Callable[..., Any]) -> str:
    """Where ``function`` was written, for an error: ``the function weather (server.py,
    line 12)``; the file and line are left out where they are not known."""
    name = getattr(function, "__qualname__", None) or repr(function)
    place = written_at(function)
    return f"the function {name}" if place is None else f"the function {name} ({place})"


def check_uri(call: str, uri: object) -> None:
    """Refuse a resource ``uri`` that is no string, or has no scheme (``config://app``)."""
    check_text(call, "uri", uri, "Pass the resource's URI, such as 'config://app'.")
    if URI_SCHEME.match(cast(str, uri)) is None:
        raise bad_value(
            call,
            "uri",
            f"must start with a scheme, not {uri!r}",
            "Pass an absolute URI, such as 'config://app' or 'users://{user_id}/profile'.",
        )


def _warn_of_unusual_tool_name(name: str) -> None:
    """Warn of a tool name outside what the specification advises. Hosts hand tool names
    to model APIs with rules of their own (Claude's takes no "." either, OpenAI's no more
    than 64 characters), and a name such an API refuses can fail every request the host
    makes, not only this tool's. The specification says SHOULD, so it is a warning."""
    if _ADVISED_TOOL_NAME.fullmatch(name) is None:
        logger.warning(
            "tool name %r is not 1 to 128 of the characters A-Z, a-z, 0-9, '_', '-' and "
            "'.', as the MCP specification advises: hosts and model APIs may refuse it; "
            "give the tool such a name with @mcp.tool(name=...)",
            name,
        )
