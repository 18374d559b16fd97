"""``Client``: connect to a server through any transport and talk MCP with it.

The first argument picks the transport: an ``MCPServer`` (or anything with
``serve_connection``) runs in-process, a ``StdioServer`` starts a subprocess, a URL
string speaks streamable HTTP, and any object with ``connect()`` is used as it is.
"""

from __future__ import annotations

import functools
import logging
import weakref
from collections import Counter
from collections.abc import AsyncGenerator, Collection, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from contextvars import ContextVar
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, cast
from urllib.parse import urlsplit

import anyio
import anyio.lowlevel
import pydantic_core

from answerback._options import instance_or_none, positive_int, positive_seconds_or_none
from answerback.client._arguments import RoundArguments, request_params
from answerback.client._callbacks import (
    REFUSABLE,
    ElicitationCallback,
    ListRootsCallback,
    LoggingCallback,
    MessageHandler,
    SamplingCallback,
    explain_refusal,
)
from answerback.client._header_marks import (
    UnlearnedMarks,
    explain_header_refusal,
    learn_marks,
    warn_unlearned,
)
from answerback.client._negotiation import Mode, ServerFacts, check_mode
from answerback.client._output_schemas import OutputSchemas
from answerback.client._pages import MAX_ITEMS, every_page
from answerback.client._responder import CallbackResponder, Responder, checked_responder
from answerback.client._session import (
    ClientSession,
    ListenStream,
    ResultT,
    Subscription,
    describe_server,
    server_name,
    told_by_server,
)
from answerback.client._url_elicitation import UrlCompletions, UrlElicitations
from answerback.jsonrpc import Endpoint, Envelope, JSONObject, ProgressCallback
from answerback.jsonrpc._attention import Attention, SharesAttention
from answerback.transports import (
    ClientTransport,
    ConnectionServer,
    InProcessTransport,
    StdioServer,
)
from answerback.transports._framing import JSON_DEPTH_LIMIT
from answerback.transports._headers import header_parameters, parameter_headers
from answerback.types import (
    INVALID_PARAMS,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    RESOURCE_NOT_FOUND,
    CallToolResult,
    CompleteRequestParams,
    CompleteResult,
    Completion,
    CompletionArgument,
    CompletionContext,
    ConnectionClosedError,
    EmptyResult,
    GetPromptRequestParams,
    GetPromptResult,
    HeaderMismatchError,
    Implementation,
    InputRequiredResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    LoggingLevel,
    MCPError,
    MethodNotFoundError,
    PaginatedRequestParams,
    Prompt,
    PromptReference,
    ReadResourceRequestParams,
    ReadResourceResult,
    RequestTimeoutError,
    Resource,
    ResourceTemplate,
    ResourceTemplateReference,
    SamplingCapability,
    ServerCapabilities,
    SetLevelRequestParams,
    SubscribeRequestParams,
    SubscriptionFilter,
    SubscriptionsListenRequestParams,
    Tool,
    UnsubscribeRequestParams,
)

if TYPE_CHECKING:
    import httpx2

DEFAULT_CLIENT_INFO = Implementation(name="answerback", version="0.1.0")


logger = logging.getLogger("answerback.client")

_OPEN_IN_TASK: ContextVar[tuple[weakref.ref[Client], ...]] = ContextVar(
    "answerback_open_clients", default=()
)
"""The clients the current task has entered and not yet left, in the order entered:
each must be left in reverse order (see ``Client.__aexit__``). Weakly: every task
started meanwhile copies the tuple, and must not keep a closed client alive."""

DEFAULT_CONNECT_TIMEOUT_SECONDS = 30.0
"""How long ``initialize`` or ``server/discover`` may go unanswered while connecting."""
_MAX_UNKNOWN_TOOLS = 1024
"""Unknown tool names remembered (so each lists the tools once); past this, forgotten."""


def _listen_lost(server: Implementation | None, why: str) -> ConnectionClosedError:
    """The error a ``listen()`` block ends with, in either era, when the server is gone
    but the connection is not closed: why, and what to do."""
    return ConnectionClosedError(
        f"listen() ended: {describe_server(server, starts_sentence=False)} is gone "
        f"({why.rstrip('.')}); nothing it sends can arrive. Wait a few seconds, then open "
        "listen() again (it raises this at once while the server is still gone; if the "
        "client has stopped trying, a request such as ping() sets a session up again), "
        "or close the Client.",
        {"reason": "server_gone"},
    )


def _single_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one error inside nested single-member groups, or the group if there are more."""
    members: Sequence[BaseException] = group.exceptions
    while len(members) == 1:
        only = members[0]
        if not isinstance(only, BaseExceptionGroup):
            return only
        members = cast(Sequence[BaseException], only.exceptions)  # pyright: ignore[reportUnknownMemberType]
    return group


def transport_for(target: Any, auth: httpx2.Auth | None = None) -> ClientTransport:
    """The transport that reaches ``target`` (see the module docstring)."""
    if auth is not None and not (
        isinstance(target, str) and target.startswith(("http://", "https://"))
    ):
        raise TypeError(
            "auth= applies to an http(s) URL target; for a transport object, pass it to "
            "the transport (StreamableHTTPTransport(url, auth=...))."
        )
    if isinstance(target, str):
        if target.startswith(("http://", "https://")):
            from answerback.transports.http import StreamableHTTPTransport

            return StreamableHTTPTransport(target, auth=auth)
        raise ValueError(
            f"Cannot connect to {target!r}: a string target must be an http(s) URL. "
            "For a local program use answerback.StdioServer(command, args=[...])."
        )
    if isinstance(target, ConnectionServer):
        return InProcessTransport(target)
    if isinstance(target, ClientTransport):
        return target
    raise TypeError(
        f"Cannot connect to a {type(target).__name__}: pass an MCPServer, a StdioServer, "
        "an http(s) URL or a transport with a connect() method."
    )


def _shown_target(transport: ClientTransport) -> str:
    """``transport``'s target for a repr, without what may be a secret."""
    if isinstance(transport, InProcessTransport):
        server = transport.server
        return f"{type(server).__name__}({getattr(server, 'name', '')!r})"
    if isinstance(transport, StdioServer):
        return f"StdioServer({transport.command!r}" + (", args=[…])" if transport.args else ")")
    url: object = getattr(transport, "url", None)
    if isinstance(url, str):  # user info and query are where credentials travel
        parts = urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
        return repr(f"{parts.scheme}://{host}{parts.path}" + ("?…" if parts.query else ""))
    return type(transport).__name__


class Client:
    """An MCP client. Use as ``async with Client(target, ...) as client:``.

    A ``Responder`` (or the callbacks, shorthand for one) answers the server's
    questions and is, at the same time, the capability declaration: the client
    declares exactly what the responder declares.
    """

    def __init__(
        self,
        target: Any,
        *,
        mode: Mode = "auto",
        responder: Responder | None = None,
        elicitation_callback: ElicitationCallback | None = None,
        sampling_callback: SamplingCallback | None = None,
        sampling_capabilities: SamplingCapability | None = None,
        list_roots_callback: ListRootsCallback | None = None,
        logging_callback: LoggingCallback | None = None,
        message_handler: MessageHandler | None = None,
        log_level: LoggingLevel | None = None,
        client_info: Implementation | None = None,
        read_timeout_seconds: float | None = None,
        input_required_max_rounds: int = 10,
        connect_timeout_seconds: float | None = DEFAULT_CONNECT_TIMEOUT_SECONDS,
        max_input_requests: int = 32,
        url_elicitations: UrlElicitations | None = None,
        auth: httpx2.Auth | None = None,
        refusal_reasons: Mapping[str, str] | None = None,
    ) -> None:
        """``auth`` authorizes every HTTP request to a URL target, e.g.
        ``answerback.client.OAuth`` for a server protected by the MCP authorization
        specification. ``connect_timeout_seconds`` bounds each setup request (``initialize``,
        ``server/discover``) so a silent server fails the connection instead of hanging
        it (``None``: wait for ever); calls have ``read_timeout_seconds`` (none by
        default), which never expires while a callback is answering. On 2026-07-28,
        ``max_input_requests`` is the most questions one round may ask (more is refused
        as a server bug) and ``input_required_max_rounds`` the most rounds per call; in
        the handshake era it is the most questions (elicitation, sampling) answered at
        once per request in progress, more being refused as busy.
        ``connect_timeout_seconds`` also bounds the wait for a ``listen()`` to start.
        ``url_elicitations`` sets how URL-mode elicitation is judged and whether error
        -32042 is followed (see ``UrlElicitations``).

        ``responder`` answers everything the server asks and declares what it can; the
        callback arguments are a shorthand for a ``CallbackResponder`` made of them, so
        give one or the other.

        A server asking for a capability the responder does not declare is refused with
        advice for this program's developer ("pass sampling_callback= to Client"), which
        servers pass on to whoever made the call. A host whose users cannot act on that
        gives its own words instead, by capability (``"elicitation"``, ``"sampling"``,
        ``"roots"``), in ``refusal_reasons``.

        Every option is checked here, not when first used: a wrong type raises
        ``TypeError``, a value that means nothing (``input_required_max_rounds=0``, a
        negative timeout, an unknown ``log_level``) ``ValueError``, naming the option."""
        check_mode(mode)
        reasons = _refusal_reasons(refusal_reasons)
        callbacks = {
            "elicitation_callback": elicitation_callback,
            "sampling_callback": sampling_callback,
            "sampling_capabilities": sampling_capabilities,
            "list_roots_callback": list_roots_callback,
            "logging_callback": logging_callback,
            "message_handler": message_handler,
        }
        given = [name for name, value in callbacks.items() if value is not None]
        if responder is not None and given:
            raise TypeError(
                f"Pass either responder= or callbacks ({', '.join(given)}), not both: the "
                "responder answers everything. Wrap the callbacks in a CallbackResponder "
                "and compose it with the responder (see ResponderWrapper)."
            )
        if responder is not None:
            responder = checked_responder("responder", responder)
        else:
            responder = CallbackResponder(
                elicitation_callback=elicitation_callback,
                sampling_callback=sampling_callback,
                sampling_capabilities=sampling_capabilities,
                list_roots_callback=list_roots_callback,
                logging_callback=logging_callback,
                message_handler=message_handler,
            )
        client_info = instance_or_none(
            "client_info",
            client_info,
            Implementation,
            "an answerback.types.Implementation(name=..., version=...)",
        )
        self.input_required_max_rounds = positive_int(
            "input_required_max_rounds", input_required_max_rounds, "rounds per call"
        )
        instance_or_none(
            "url_elicitations",
            url_elicitations,
            UrlElicitations,
            "an answerback.client.UrlElicitations(...)",
        )
        self._transport = transport_for(target, auth)
        self.client_info = client_info or DEFAULT_CLIENT_INFO
        self.session = ClientSession(
            responder=responder,
            mode=mode,
            connect_timeout_seconds=connect_timeout_seconds,
            read_timeout_seconds=read_timeout_seconds,
            client_info=self.client_info,
            log_level=log_level,
            max_input_requests=max_input_requests,
            refusal_reasons=reasons,
        )
        self.session.transport_kind = type(self._transport).__name__
        self.session.on_tools_changed = self._forget_tools
        self.session.on_session_expired = self._set_up_again
        if url_elicitations is not None:
            self.session.url_elicitations = url_elicitations
        self._exit_stack: AsyncExitStack | None = None
        self._entered_in: int | None = None
        """The task that connected it, the one that must close it."""
        self._header_parameters: dict[str, dict[str, tuple[str, ...]]] | None = None
        """Tool name → its ``x-mcp-header`` parameters (2026-07-28 over HTTP only)."""
        self._unknown_tools: set[str] = set()
        """Names the last full listing did not have, so calling one lists only once."""
        self._marks_unlearned: str | None = None
        """Why the hidden listing could not learn the header marks, for good (calls go
        without them until the tool list changes), or ``None``."""
        self._tools_generation = 0
        """Counts tool list changes, so a listing that straddles one is not trusted."""
        self._output_schemas = OutputSchemas()
        """Each listed tool's output schema, which checks its structured results."""
        self._logs_unasked = logging_callback is not None and log_level is None
        """A logging callback but no level: 2026-07-28 servers will send it nothing."""
        self._session_listeners: dict[Subscription, SubscriptionFilter] = {}
        """Legacy-era ``listen()`` streams, fed from the session's notifications, with
        what each asked for."""
        self._subscribed_by_host: set[str] = set()
        """URIs ``subscribe_resource()`` subscribed (and ``unsubscribe_resource()`` did
        not end): a session set up again is subscribed to them again."""
        self._listened_uris: Counter[str] = Counter()
        """How many open legacy ``listen()`` blocks follow each URI: the last one to end
        unsubscribes a URI the host did not subscribe itself."""
        self._subscribed_on_server: set[str] = set()
        """URIs the current session has confirmed subscribed, so a listen subscribes
        only what is not yet."""
        self._maybe_subscribed: set[str] = set()
        """URIs whose ``resources/subscribe`` was given up unanswered (timed out or
        cancelled): the server may have handled it, so the end of following one
        unsubscribes it as if confirmed; a listen still subscribes it again."""
        self._gone: str | None = None
        """Why the transport finds the server gone (``_server_gone``), until it is back."""
        self._gone_news = anyio.Event()
        """Set (and replaced) when the server is found gone: legacy listens end."""
        self._turns: dict[str, _Turn] = {}
        """URI → its turn to change its subscription on the server (see ``_turn``)."""

    def __repr__(self) -> str:
        """Where it connects, the era asked for, its state and, once connected, the
        protocol version and server: what a log line or a debugger needs. Never a
        credential: no URL user info or query, header, token, or a child's arguments
        and environment."""
        shown = [_shown_target(self._transport), f"mode={self.mode!r}", f"state={self._state()!r}"]
        facts = self.session.negotiation.facts
        if facts is not None:
            shown += [
                f"protocol={facts.protocol_version!r}",
                f"server={told_by_server(facts.server_info.name, quoted=True)}",
            ]
        return f"Client({', '.join(shown)})"

    def _state(self) -> str:
        try:
            endpoint = self.session.endpoint
        except RuntimeError:
            return "not connected"
        if endpoint.closed.is_set() and self._exit_stack is not None:
            return "server disconnected"
        if endpoint.closing:
            return "closed"
        return "connected" if self._exit_stack is not None else "connecting"

    async def __aenter__(self) -> Self:
        if self._exit_stack is not None:
            raise RuntimeError("This Client is already connected; a Client connects once.")
        try:
            await self._connect()
        except BaseExceptionGroup as group:
            raise _single_error(group) from None
        self._entered_in = anyio.get_current_task().id
        _OPEN_IN_TASK.set((*_OPEN_IN_TASK.get(), weakref.ref(self)))
        if self._logs_unasked and self.session.modern_version is not None:
            logger.warning(
                "logging_callback is set but log_level is not: a %s server sends log "
                "messages only to requests that ask for a level, so none will arrive. "
                "Pass Client(log_level='info') (or another level) to receive them.",
                self.session.modern_version,
            )
        return self

    async def _connect(self) -> None:
        async with AsyncExitStack() as stack:
            auth: object = getattr(self._transport, "auth", None)
            if isinstance(auth, SharesAttention):
                # A login in the browser happens inside a request: its timer, and every
                # other request's, must not run while the person logs in.
                if self.session.attention is None:
                    self.session.attention = Attention()
                stack.enter_context(auth.sharing_attention(self.session.attention))
            if hasattr(self._transport, "on_session_ended"):
                # An HTTP transport whose GET stream learns the server ended the session
                # sets it up again as a request would, so a host that only listens hears.
                # Let go at the end: a transport used again must not call a closed session.
                transport = cast(Any, self._transport)
                transport.on_session_ended = self.session.set_up_again
                stack.callback(setattr, transport, "on_session_ended", None)
            if hasattr(self._transport, "on_server_gone"):
                # A legacy listen() hears through the GET stream: when that cannot reach
                # the server for as long as connecting may take, the listen ends.
                transport = cast(Any, self._transport)
                transport.gone_after_seconds = self.connect_timeout_seconds
                transport.on_server_gone = self._server_gone
                stack.callback(setattr, transport, "on_server_gone", None)
            read_stream, write_stream = await stack.enter_async_context(self._transport.connect())
            endpoint = Endpoint(
                read_stream,
                write_stream,
                on_request=self.session.handle_request,
                on_notification=self._notified,
                on_transport_error=self.session.handle_transport_error,
                name=lambda: server_name(self.session.server_info),
                attention=self.session.attention,
            )
            self.session.attach(await stack.enter_async_context(endpoint))
            await self.session.negotiation.start()
            self._exit_stack = stack.pop_all()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._exit_stack is None:
            return
        self._check_leaving_in_order()
        stack, self._exit_stack = self._exit_stack, None
        _OPEN_IN_TASK.set(tuple(ref for ref in _OPEN_IN_TASK.get() if ref() is not self))
        try:
            await stack.__aexit__(exc_type, exc, tb)
        except BaseExceptionGroup as group:
            # The task groups underneath wrap what left the block; show it as it was.
            raise _single_error(group) from None

    def _check_leaving_in_order(self) -> None:
        """Refuse to close out of order, the client left open: its task groups are
        anyio cancel scopes, which close only in the task that entered them and in
        reverse order. Closed otherwise, anyio raised its own RuntimeError and left the
        task's scopes broken, cancelling the other clients and the task's next work."""
        how = (
            "give each client a task of its own (the task holds its 'async with' and "
            "ends to close it), or close clients entered in one task in reverse order "
            "(nested 'async with', or one AsyncExitStack); see docs/broker.md"
        )
        if anyio.get_current_task().id != self._entered_in:
            raise RuntimeError(
                f"{self!r} is closed in a task other than the one that connected it, which "
                f"anyio cannot do: {how}. It is left open."
            )
        opened = [client for ref in _OPEN_IN_TASK.get() if (client := ref()) is not None]
        if self in opened and opened[-1] is not self:
            raise RuntimeError(
                f"{self!r} is closed while {opened[-1]!r}, connected after it in the same "
                f"task, is still open, which anyio cannot do: close that one first, or "
                f"{how}. It is left open."
            )

    async def _set_up_again(self) -> None:
        """The session's ``on_session_expired``: the handshake again, then the
        subscriptions the old session held, since a new session has none (a listen
        would otherwise hear no update again). Other requests wait until this is done."""
        self._subscribed_on_server.clear()
        self._maybe_subscribed.clear()
        await self.session.negotiation.initialize()
        uris = self._subscribed_by_host | {uri for uri, n in self._listened_uris.items() if n > 0}
        if not uris:
            return
        resources = self.server_capabilities.resources
        if resources is None or not resources.subscribe:
            logger.warning(
                "the new session's server no longer declares %s, so updates of %s will not "
                "arrive; read them again when you need them fresh",
                _SUBSCRIBE,
                ", ".join(sorted(uris)),
            )
            return
        async with anyio.create_task_group() as tg:
            for uri in sorted(uris):
                tg.start_soon(self._subscribe_again, uri)

    async def _subscribe_again(self, uri: str) -> None:
        """Subscribe the new session to ``uri``; a failure is logged, not raised, so
        the session set up again still serves every other request."""
        try:
            await self._send_subscribe(uri, setup=True)
        except Exception as exc:
            logger.warning(
                "could not subscribe the new session to %r (%s): its updates will not "
                "arrive; call subscribe_resource(%r) to try again",
                uri,
                exc,
                uri,
            )
            return
        if self._unfollowed(uri):
            # The last block following it ended meanwhile and found nothing to
            # unsubscribe, this session not having confirmed it yet.
            await self._unsubscribe_left(uri, setup=True)
            return
        self._subscribed_on_server.add(uri)

    def _server_gone(self, why: str | None) -> None:
        """The transport's word that the server is gone (``why``) or back (``None``):
        open legacy ``listen()`` blocks end, and new ones fail to open, while it is gone."""
        self._gone = why
        if why is not None:
            self._gone_news.set()
            self._gone_news = anyio.Event()

    async def _until_server_gone(self) -> None:
        """Legacy ``listen()``: raise once the transport finds the server gone."""
        while self._gone is None:
            await self._gone_news.wait()
        raise _listen_lost(self.session.server_info, self._gone)

    async def _notified(self, method: str, params: JSONObject | None, envelope: Envelope) -> None:
        """A server notification: to each legacy-era ``listen()`` stream that asked for
        it (taken at once, so it never waits), then to the session."""
        if self._session_listeners:
            for subscription, wanted in list(self._session_listeners.items()):
                if _asked_for(wanted, method, params):
                    await subscription.deliver(method, params)
        await self.session.handle_notification(method, params, envelope)

    # -- what the server said about itself -------------------------------------------

    @property
    def protocol_version(self) -> str:
        """The protocol version in use: negotiated (legacy) or chosen (2026-07-28)."""
        return self._connected().protocol_version

    @property
    def server_info(self) -> Implementation:
        """The server's name and version, as it introduced itself when connecting.

        Raises ``RuntimeError`` outside ``async with``.
        """
        return self._connected().server_info

    @property
    def server_capabilities(self) -> ServerCapabilities:
        """What the server declared it offers (tools, prompts, resources, logging...).

        Raises ``RuntimeError`` outside ``async with``.
        """
        return self._connected().capabilities

    @property
    def instructions(self) -> str | None:
        """The server's hints on how to use it (for a model's prompt), if it gave any.

        Raises ``RuntimeError`` outside ``async with``.
        """
        return self._connected().instructions

    @property
    def url_elicitations(self) -> UrlElicitations:
        """How this client handles URL-mode elicitation: the ``UrlElicitations`` given as
        ``Client(url_elicitations=...)`` (or its default one), perhaps shared with other
        clients; its completions are ``url_completions``."""
        return self.session.url_elicitations

    @property
    def url_completions(self) -> UrlCompletions:
        """Which of this client's URL elicitations its server said have completed
        (``is_completed``, ``wait_completed``). Only this connection's, even when its
        ``UrlElicitations`` is shared with other clients."""
        return self.session.url_elicitations.completions(self.session)

    @property
    def mode(self) -> Mode:
        """The era asked for: ``"auto"``, ``"legacy"`` or a pinned version."""
        return self.session.negotiation.mode

    @property
    def connect_timeout_seconds(self) -> float | None:
        """How long each setup request may go unanswered (``None``: for ever)."""
        return self.session.negotiation.connect_timeout_seconds

    @property
    def log_level(self) -> LoggingLevel | None:
        """The log level asked for at connection (2026-07-28: sent with every request)."""
        return self.session.log_level

    @property
    def responder(self) -> Responder:
        """What answers the server's questions (built from the callbacks if given)."""
        return self.session.responder

    def _connected(self) -> ServerFacts:
        facts = self.session.negotiation.facts
        if facts is None:
            raise RuntimeError("Not connected: use the Client as `async with Client(...)`.")
        return facts

    # -- requests --------------------------------------------------------------------

    async def ping(self) -> None:
        """Check that the server still answers; raises ``MCPError`` if it does not (in
        time, or at all)."""
        await self.session.send_request("ping", None, EmptyResult)

    async def list_tools(self, cursor: str | None = None) -> ListToolsResult:
        """One page of the server's tools (pass ``next_cursor`` for the next).

        On 2026-07-28 over HTTP, a tool whose ``x-mcp-header`` marks break the rules is
        left out (with a warning), as the specification requires.
        """
        params = _page_params("list_tools", cursor)
        result = await self.session.send_request("tools/list", params, ListToolsResult)
        if not self._mirrors_parameters():
            self._output_schemas.remember(result.tools)
            return result
        return result.model_copy(update={"tools": self._learn_tools(result)})

    def _learn_tools(self, result: ListToolsResult) -> list[Tool]:
        """Remember a page's output schemas and header marks (for at most
        ``MAX_ITEMS`` tools); the tools kept, without those whose marks break the
        rules."""
        self._output_schemas.remember(result.tools)
        known = self._header_parameters = self._header_parameters or {}
        kept: list[Tool] = []
        for tool in result.tools:
            try:
                designated = header_parameters(tool.input_schema)
            except ValueError as exc:
                logger.warning("left out tool %r: %s", tool.name, exc)
                continue
            if tool.name in known or len(known) < MAX_ITEMS:
                known[tool.name] = designated
            self._unknown_tools.discard(tool.name)
            kept.append(tool)
        return kept

    def _forget_tools(self) -> None:
        """The tool list changed: what was learned from the old one no longer holds."""
        self._header_parameters = None
        self._unknown_tools.clear()
        self._marks_unlearned = None
        self._output_schemas.forget()
        self._tools_generation += 1

    def _mirrors_parameters(self) -> bool:
        return self.session.modern_version is not None and bool(
            getattr(self._transport, "mirrors_parameters", False)
        )

    async def _parameter_headers(
        self, name: str, arguments: dict[str, Any] | None
    ) -> tuple[dict[str, str] | None, str | None]:
        """The ``Mcp-Param-*`` headers of a call (listing the tools first if needed;
        see ``_header_marks``), and why the tool's headers are unknown if the listing
        failed (``None`` otherwise)."""
        if not self._mirrors_parameters():
            return None, None
        known = self._header_parameters
        if known is not None and name in known:
            designated = known[name]
            return (parameter_headers(designated, arguments) if designated else None), None
        if self._marks_unlearned is not None:
            return None, self._marks_unlearned
        if name not in self._unknown_tools:
            generation = self._tools_generation
            try:
                await learn_marks(self.server_info, self._list_tools_raw, self._learn_page)
            except UnlearnedMarks as exc:
                warn_unlearned(self.server_info, exc.reason, lasting=exc.lasting)
                if exc.lasting and generation == self._tools_generation:
                    self._marks_unlearned = exc.reason
                return None, exc.reason
            known = self._header_parameters
            if generation == self._tools_generation and (known is None or name not in known):
                if len(self._unknown_tools) >= _MAX_UNKNOWN_TOOLS:
                    self._unknown_tools.clear()
                self._unknown_tools.add(name)
        designated = (known or {}).get(name)
        return (parameter_headers(designated, arguments) if designated else None), None

    async def _list_tools_raw(self, cursor: str | None) -> JSONObject:
        params = _page_params("list_tools", cursor)
        return await self.session.request_raw(
            "tools/list", None if params is None else params.to_wire()
        )

    def _learn_page(self, raw: JSONObject) -> str | None:
        result = self.session.complete_result("tools/list", raw, ListToolsResult)
        self._learn_tools(result)
        return result.next_cursor

    async def list_all_tools(self) -> list[Tool]:
        """Every tool, following pagination to the end (see ``list_all_prompts``)."""
        return await every_page(
            "tools/list", self.server_info, self.list_tools, lambda page: page.tools
        )

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        read_timeout_seconds: float | None = None,
        progress_callback: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> CallToolResult:
        """Call a tool; a failing tool gives ``is_error=True``, a protocol error raises.

        On a 2026-07-28 connection a tool that needs input comes back as an
        ``InputRequiredResult``; the client answers it through the same callbacks as
        the legacy path and retries, up to ``input_required_max_rounds`` rounds.
        ``progress_callback(progress, total, message)`` receives progress reports;
        progress also keeps ``read_timeout_seconds`` from expiring. ``meta`` goes in the
        request's ``_meta`` (trace context, say), in every round; a key the client sets
        there itself (``progressToken``, the 2026-07-28 protocol keys) is refused.

        A successful result of a tool listed (by ``list_tools``) with an
        ``output_schema`` must carry ``structured_content`` that fits it, or the call
        raises ``InvalidServerResultError``; a tool never listed is not checked.
        """
        params = _tool_call_params("call_tool", name, arguments, meta)
        if read_timeout_seconds is not None:
            positive_seconds_or_none("read_timeout_seconds", read_timeout_seconds, "no timeout")
        if progress_callback is not None and not callable(progress_callback):
            raise TypeError(
                "progress_callback must be an async function taking (progress, total, "
                f"message) or None, got {progress_callback!r}"
            )
        headers, unlearned = await self._parameter_headers(name, arguments)
        try:
            result = await self._with_input(
                "tools/call",
                params,
                CallToolResult,
                timeout=read_timeout_seconds,
                on_progress=progress_callback,
                transport_context=headers,
            )
        except HeaderMismatchError as exc:
            if unlearned is None:
                raise
            raise explain_header_refusal(self.server_info, name, unlearned, exc) from exc
        self._output_schemas.check(self.session.server_info, name, result)
        return result

    async def call_tool_round(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        input_responses: dict[str, Any] | None = None,
        request_state: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> CallToolResult | InputRequiredResult:
        """One round of a 2026-07-28 tool call, driven by hand.

        Use it to keep a multi-round call across processes: persist the
        ``InputRequiredResult``'s ``request_state`` (echo it back unchanged), gather the
        answers (``answer_input_requests`` runs the callbacks), then call again.
        ``meta`` goes in the round's ``_meta``, as ``call_tool``'s does (pass it to every
        round that should carry it). A server whose tool asks with a server-to-client
        request fails the round with the advice ``call_tool`` gives.
        """
        if self.session.modern_version is None:
            raise RuntimeError(
                "call_tool_round needs a 2026-07-28 connection; on a legacy connection the "
                "server asks during the call itself, so use call_tool."
            )
        params = _tool_call_params("call_tool_round", name, arguments, meta)
        retry = request_params(
            "call_tool_round",
            RoundArguments,
            input_responses=input_responses,
            request_state=request_state,
        )
        if retry.input_responses is not None:
            try:
                params["inputResponses"] = pydantic_core.to_jsonable_python(retry.input_responses)
            except ValueError as exc:  # pydantic's serialisation errors are ValueErrors
                raise TypeError(
                    f"The input_responses of call_tool_round() cannot be sent as JSON ({exc}). "
                    "Pass the dict answer_input_requests() returned."
                ) from exc
        if retry.request_state is not None:
            params["requestState"] = retry.request_state
        headers, unlearned = await self._parameter_headers(name, arguments)
        try:
            raw = await self.session.request_round("tools/call", params, transport_context=headers)
        except HeaderMismatchError as exc:
            if unlearned is None:
                raise
            raise explain_header_refusal(self.server_info, name, unlearned, exc) from exc
        if raw.get("resultType") == "input_required":
            return self.session.input_required("tools/call", raw)
        result = self.session.complete_result("tools/call", raw, CallToolResult)
        self._output_schemas.check(self.session.server_info, name, result)
        return result

    async def answer_input_requests(self, result: InputRequiredResult) -> dict[str, Any]:
        """Answer an ``InputRequiredResult``'s requests through the callbacks."""
        if not isinstance(cast(object, result), InputRequiredResult):
            raise TypeError(
                "answer_input_requests() takes the InputRequiredResult that "
                f"call_tool_round() returned, not {type(result).__name__}."
            )
        try:
            return await self.session.answer_input_requests(result.input_requests or {})
        except MCPError as exc:
            explained = self._explained(exc)
            if explained is exc:
                raise
            raise explained from exc

    async def _with_input(
        self,
        method: str,
        params: JSONObject,
        result_type: type[ResultT],
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        transport_context: Any = None,
    ) -> ResultT:
        """A request that may need input; error -32042 is followed if configured. A
        refusal for a capability the client lacks says which callback provides it."""
        send = functools.partial(
            self._answering_input,
            method,
            params,
            result_type,
            timeout=timeout,
            on_progress=on_progress,
            transport_context=transport_context,
        )
        try:
            return await self.session.url_elicitations.follow(self.session, send)
        except MCPError as exc:
            explained = self._explained(exc)
            if explained is exc:
                raise
            raise explained from exc

    def _explained(self, exc: MCPError) -> MCPError:
        modern = self.session.modern_version is not None
        return explain_refusal(exc, self.session.capabilities, modern=modern)

    async def _answering_input(
        self,
        method: str,
        params: JSONObject,
        result_type: type[ResultT],
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        transport_context: Any = None,
    ) -> ResultT:
        """A request that may need input: live callbacks (legacy) or the MRTR loop."""
        if self.session.modern_version is None:
            raw = await self.session.request_raw(
                method, params, timeout=timeout, on_progress=on_progress
            )
            return self.session.complete_result(method, raw, result_type)
        return await self.session.request_with_input(
            method,
            params,
            result_type,
            max_rounds=self.input_required_max_rounds,
            timeout=timeout,
            on_progress=on_progress,
            transport_context=transport_context,
        )

    async def list_prompts(self, cursor: str | None = None) -> ListPromptsResult:
        """One page of the server's prompts."""
        params = _page_params("list_prompts", cursor)
        return await self.session.send_request("prompts/list", params, ListPromptsResult)

    async def list_all_prompts(self) -> list[Prompt]:
        """Every prompt, following pagination to the end: a server that repeats a cursor,
        or lists past 100 pages, 10,000 items or 32 MiB, fails it with
        ``InvalidServerResultError`` (``list_prompts(cursor=...)`` fetches one page)."""
        return await every_page(
            "prompts/list", self.server_info, self.list_prompts, lambda page: page.prompts
        )

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None
    ) -> GetPromptResult:
        """A prompt's messages, filled in with ``arguments``."""
        params = request_params(
            "get_prompt", GetPromptRequestParams, name=name, arguments=arguments
        ).to_wire()
        return await self._with_input("prompts/get", params, GetPromptResult)

    async def list_resources(self, cursor: str | None = None) -> ListResourcesResult:
        """One page of the server's fixed resources."""
        params = _page_params("list_resources", cursor)
        return await self.session.send_request("resources/list", params, ListResourcesResult)

    async def list_all_resources(self) -> list[Resource]:
        """Every fixed resource, following pagination to the end (see ``list_all_prompts``)."""
        return await every_page(
            "resources/list", self.server_info, self.list_resources, lambda page: page.resources
        )

    async def list_resource_templates(
        self, cursor: str | None = None
    ) -> ListResourceTemplatesResult:
        """One page of the server's resource templates."""
        params = _page_params("list_resource_templates", cursor)
        return await self.session.send_request(
            "resources/templates/list", params, ListResourceTemplatesResult
        )

    async def list_all_resource_templates(self) -> list[ResourceTemplate]:
        """Every resource template, following pagination to the end (see
        ``list_all_prompts``)."""
        return await every_page(
            "resources/templates/list",
            self.server_info,
            self.list_resource_templates,
            lambda page: page.resource_templates,
        )

    async def read_resource(self, uri: str) -> ReadResourceResult:
        """The contents of the resource at ``uri``."""
        params = request_params("read_resource", ReadResourceRequestParams, uri=uri).to_wire()
        return await self._with_input("resources/read", params, ReadResourceResult)

    async def complete(
        self,
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context: CompletionContext | None = None,
    ) -> Completion:
        """Suggested values for a prompt or resource-template argument."""
        params = request_params(
            "complete", CompleteRequestParams, ref=ref, argument=argument, context=context
        )
        result = await self.session.send_request("completion/complete", params, CompleteResult)
        return result.completion

    async def subscribe_resource(self, uri: str) -> None:
        """Legacy era: receive ``notifications/resources/updated`` for ``uri``.

        Raises ``MethodNotFoundError`` without asking a server that did not declare
        ``resources.subscribe``, as a client may use only what the server declared. The
        subscription lasts until ``unsubscribe_resource(uri)``, across a session an HTTP
        server forgot and the client set up again. ``listen(resource_subscriptions=[uri])``
        does this for you, in either era.
        """
        params = request_params("subscribe_resource", SubscribeRequestParams, uri=uri)
        self._check_subscribable("subscribe_resource")
        async with self._turn(uri):
            await self.session.send_request("resources/subscribe", params, EmptyResult)
            self._subscribed_by_host.add(uri)
            self._subscribed_on_server.add(uri)
            self._maybe_subscribed.discard(uri)

    async def unsubscribe_resource(self, uri: str) -> None:
        """Legacy era: stop ``notifications/resources/updated`` for ``uri`` (refused as
        ``subscribe_resource`` is). A URI an open ``listen()`` follows stays subscribed
        until that block ends, so the listen still hears it."""
        params = request_params("unsubscribe_resource", UnsubscribeRequestParams, uri=uri)
        self._check_subscribable("unsubscribe_resource")
        self._subscribed_by_host.discard(uri)
        if self._listened_uris[uri]:
            return  # a listen follows it: its end unsubscribes
        async with self._turn(uri):
            if not self._unfollowed(uri):
                return  # a listen follows it, or the host subscribed again meanwhile
            self._subscribed_on_server.discard(uri)
            self._maybe_subscribed.discard(uri)
            await self.session.send_request("resources/unsubscribe", params, EmptyResult)

    def _check_subscribable(self, call: str) -> None:
        """Refuse ``call`` before it is sent where it cannot work: on a 2026-07-28
        connection (no such method; ``listen()`` follows a resource there), or with a
        server that did not declare subscriptions."""
        resources = self.server_capabilities.resources
        offered = resources is not None and bool(resources.subscribe)
        server = describe_server(self.server_info, starts_sentence=False)
        version = self.session.modern_version
        if version is not None:
            advice = (
                "Follow the resource in a listen() block instead: `async with "
                "client.listen(resource_subscriptions=[uri]) as updates:`."
                if offered
                else f"{describe_server(self.server_info)} does not offer resource updates "
                f"either (it did not declare {_SUBSCRIBE}): read the resource again when you "
                "need it fresh."
            )
            raise MethodNotFoundError(
                f"{call}() not sent: protocol {version}, which {server} speaks, has no "
                f"resources/subscribe. {advice}",
                {"reason": f"resources/subscribe does not exist in protocol {version}"},
            )
        if not offered:
            raise MethodNotFoundError(
                f"{call}() not sent: {server} does not offer resource subscriptions (it did "
                f"not declare {_SUBSCRIBE}), and a client may use only what the server "
                "declared. Read the resource again when you need it fresh.",
                {"reason": f"the server did not declare the capability {_SUBSCRIBE}"},
            )

    @asynccontextmanager
    async def listen(
        self,
        *,
        tools_list_changed: bool = False,
        prompts_list_changed: bool = False,
        resources_list_changed: bool = False,
        resource_subscriptions: Collection[str] | None = None,
    ) -> AsyncGenerator[ListenStream, None]:
        """Receive the list changes and resource updates asked for, in either era.

        Yields a ``ListenStream`` to iterate; it is open (the server has acknowledged)
        when the block starts, and ``honoured`` holds what the server agreed to send.
        Kinds the server did not declare are not asked for, and kinds it does not honour
        are not sent, each with a warning. A server that refuses the request raises its
        error here, before the block runs. Leaving the block ends the subscription.
        Unread, the stream keeps its ``LISTEN_NOTIFICATIONS_KEPT`` newest notifications.

        2026-07-28 opens a ``subscriptions/listen`` stream. A legacy server sends its
        list changes unasked: the stream takes those asked for from the session (they
        reach ``message_handler`` too), and ``honoured`` is what the server declared.
        It subscribes (``resources/subscribe``) each asked URI the client has not
        subscribed yet, and unsubscribes those when the last block following them ends;
        a URI refused as not served or not acceptable is left out of ``honoured`` with
        the warning a 2026-07-28 server's leaving it out gets.

        The block raises ``ConnectionClosedError`` when the server is gone: the
        connection ended; over HTTP, a 2026-07-28 stream broke for good, or a legacy
        GET stream failed to reach the server for ``connect_timeout_seconds`` (or a new
        session could not be set up), whose ``data`` is ``{"reason": "server_gone"}``.
        """
        subscriptions: object = resource_subscriptions
        if isinstance(subscriptions, tuple | set | frozenset):  # checked as a list below
            subscriptions = list(cast(Collection[str], subscriptions))
        asked = request_params(
            "listen",
            SubscriptionFilter,
            tools_list_changed=tools_list_changed or None,
            prompts_list_changed=prompts_list_changed or None,
            resources_list_changed=resources_list_changed or None,
            resource_subscriptions=subscriptions,
        )
        wanted, undeclared = _declared_part(self.server_capabilities, asked)
        if undeclared:
            logger.warning(
                "listen() does not ask %s for what it did not declare: %s",
                describe_server(self.server_info, starts_sentence=False),
                "; ".join(undeclared),
            )
        if self.session.modern_version is None:
            async with self._listening_to_session(wanted) as stream:
                yield stream
            return
        params = SubscriptionsListenRequestParams(notifications=wanted).to_wire()
        request_id = self.session.endpoint.reserve_id()
        subscription = Subscription(self.session.server_info)
        self.session.listeners[request_id] = subscription

        async def hold_open() -> None:
            failure: Exception | None = None
            try:
                await self.session.request_raw(
                    "subscriptions/listen", params, request_id=request_id
                )
            except ConnectionClosedError as exc:
                if subscription.honoured is None:
                    failure = exc  # raised by listen() itself, before the block runs
                elif self.session.endpoint.closed.is_set():
                    # Ended as a legacy listen ends ("Stopped listening for notifications:
                    # why. Open a new connection."), not as a request the host never sent.
                    await self.session.endpoint.until_closed(
                        anyio.lowlevel.checkpoint, "listening for notifications"
                    )
                    raise
                else:  # the stream it reads broke for good, the connection still open
                    server = self.session.server_info
                    raise _listen_lost(server, exc.message) from exc
            except Exception as exc:
                if subscription.honoured is not None:
                    raise  # ends the block: the stream it reads is gone
                failure = exc  # raised by listen() itself, before the block runs
            finally:
                subscription.ended(failure)

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(hold_open)
                with anyio.move_on_after(self.connect_timeout_seconds):
                    await subscription.settled.wait()
                if not subscription.settled.is_set():
                    raise self._listen_unanswered("subscriptions/listen", "acknowledge")
                if subscription.honoured is not None:
                    self._warn_not_honoured(_not_honoured(wanted, subscription.honoured))
                    yield ListenStream(subscription.receive, subscription.honoured)
                tg.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            raise _single_error(group) from None
        finally:
            del self.session.listeners[request_id]
            subscription.receive.close()
        if subscription.honoured is None and subscription.failure is not None:
            raise subscription.failure

    @asynccontextmanager
    async def _listening_to_session(
        self, wanted: SubscriptionFilter
    ) -> AsyncGenerator[ListenStream, None]:
        """Legacy era: ``listen()`` fed from the session's own notifications. There is no
        request to end it, so it ends with the connection, or when the transport finds
        the server gone (an HTTP GET stream that cannot reach it), raising
        ``ConnectionClosedError`` as a 2026-07-28 stream does."""
        # Yield first: a host retrying while the server is gone must let the task that
        # finds it back run.
        await anyio.lowlevel.checkpoint()
        if self._gone is not None:
            raise _listen_lost(self.session.server_info, self._gone)
        uris = list(dict.fromkeys(wanted.resource_subscriptions or ()))
        if refused := await self._follow(uris):
            uris = [uri for uri in uris if uri not in refused]
            self._warn_not_honoured([f"updates of {uri!r}" for uri in refused])
            wanted = wanted.model_copy(update={"resource_subscriptions": uris or None})
        subscription = Subscription(self.session.server_info)
        self._session_listeners[subscription] = wanted
        endpoint = self.session.endpoint
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(
                    endpoint.until_closed, self._until_server_gone, "listening for notifications"
                )
                yield ListenStream(subscription.receive, wanted)
                tg.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            raise _single_error(group) from None
        finally:
            del self._session_listeners[subscription]
            subscription.send.close()
            subscription.receive.close()
            with anyio.CancelScope(shield=True):  # a cancelled block unsubscribes too
                await self._unfollow(uris)

    def _warn_not_honoured(self, left_out: list[str]) -> None:
        """Say what a ``listen()`` asked for that will not arrive, alike in both eras."""
        if left_out:
            logger.warning(
                "%s did not agree to send %s on its listen() stream; they will not arrive",
                describe_server(self.server_info),
                ", ".join(left_out),
            )

    async def _follow(self, uris: list[str]) -> list[str]:
        """Legacy ``listen()``: count the block as following each URI and subscribe
        those the session is not subscribed to yet; returns the URIs the server refused
        to subscribe as not served (-32002) or not acceptable (-32602), no longer
        counted: a 2026-07-28 server leaves those out of its acknowledgement, so the
        block runs without them in both eras. Any other refusal undoes the block's part
        and raises, before the block runs; so does a wait longer than
        ``connect_timeout_seconds``, turns included.

        Counted at once, subscribed in each URI's turn (``_turn``): whatever order
        blocks open and end in, the server's subscriptions end up matching the open
        blocks. A URI already subscribed needs no turn: once counted, no block's end
        unsubscribes it."""
        self._listened_uris.update(uris)
        refused: list[str] = []
        try:
            with anyio.move_on_after(self.connect_timeout_seconds) as bounded:
                for uri in uris:
                    if uri in self._subscribed_on_server:
                        continue
                    async with self._turn(uri):
                        if uri in self._subscribed_on_server:
                            continue  # subscribed while this block waited its turn
                        try:
                            await self._send_subscribe(uri)
                        except RequestTimeoutError as exc:
                            raise self._listen_unanswered("resources/subscribe", "answer") from exc
                        except MCPError as exc:
                            if exc.code not in (RESOURCE_NOT_FOUND, INVALID_PARAMS):
                                raise
                            refused.append(uri)
                            continue
                        self._subscribed_on_server.add(uri)
            if bounded.cancelled_caught:
                raise self._listen_unanswered("resources/subscribe", "answer")
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._unfollow(uris)
            raise
        if refused:
            with anyio.CancelScope(shield=True):
                await self._unfollow(refused)
        return refused

    async def _send_subscribe(self, uri: str, *, setup: bool = False) -> None:
        """``resources/subscribe`` for a listen (``_follow``) or a session set up again
        (``setup``, ``_subscribe_again``), bounded by ``connect_timeout_seconds`` as
        setting up is. Each caller handles a failure its own way: a listen raises it
        to the host, a set-up logs it so other requests still go. One given up
        unanswered (timed out, or cancelled with its listen) may have been handled by
        the server, so it is kept in ``_maybe_subscribed`` for the end of following
        ``uri`` to unsubscribe."""
        try:
            await self.session.send_request(
                "resources/subscribe",
                SubscribeRequestParams(uri=uri),
                EmptyResult,
                timeout=self.connect_timeout_seconds,
                setup=setup,
            )
        except (RequestTimeoutError, anyio.get_cancelled_exc_class()):
            self._maybe_subscribed.add(uri)
            raise
        self._maybe_subscribed.discard(uri)

    @asynccontextmanager
    async def _turn(self, uri: str) -> AsyncGenerator[None, None]:
        """Hold ``uri``'s turn to change its subscription on the server: a listen
        opening as another ends must not subscribe before the other's unsubscribe is
        answered, or the server could end up unsubscribed while it listens. One lock
        per URI, dropped when nobody holds or waits for it, so a change the server
        never answers holds up only changes of its own URI. ``_set_up_again`` never
        takes a turn: a holder's request may be waiting for it."""
        turn = self._turns.get(uri)
        if turn is None:
            turn = self._turns[uri] = _Turn()
        turn.users += 1
        try:
            async with turn.lock:
                yield
        finally:
            turn.users -= 1
            if not turn.users:
                del self._turns[uri]

    def _listen_unanswered(self, method: str, verb: str) -> RequestTimeoutError:
        """The error of a ``listen()`` the server never let start: waiting for it is
        set-up, so it is bounded as connecting is, by ``connect_timeout_seconds``."""
        return RequestTimeoutError(
            f"listen() did not start: {describe_server(self.server_info, starts_sentence=False)} "
            f"did not {verb} {method!r} within {self.connect_timeout_seconds:g} s "
            "(Client(connect_timeout_seconds=...)). Check that the server handles "
            f"{method!r} (its log may say why it hangs), or raise the timeout if it is "
            "only slow.",
            {"method": method},
        )

    async def _unfollow(self, uris: list[str]) -> None:
        """A legacy ``listen()`` block is over: unsubscribe each URI no other block
        follows and the host did not subscribe itself, all at once, each in its URI's
        turn (see ``_turn``); a URI that needs no change needs no turn. Shielded (a
        cancelled block unsubscribes too), so bounded: ``UNSUBSCRIBE_SECONDS`` at most,
        turns included, then a warning says what was left, as the block's own outcome
        matters more. Over a closed connection there is nothing to end."""
        self._listened_uris.subtract(uris)
        for uri in uris:
            if self._listened_uris[uri] <= 0:
                del self._listened_uris[uri]
        if self.session.endpoint.closing:
            return
        changing = [uri for uri in dict.fromkeys(uris) if self._left_subscribed(uri)]
        if not changing:
            return
        with anyio.move_on_after(UNSUBSCRIBE_SECONDS) as bounded:
            async with anyio.create_task_group() as tg:
                for uri in changing:
                    tg.start_soon(self._unsubscribe_leaving, uri)
        if bounded.cancelled_caught and (left := [u for u in changing if self._unfollowed(u)]):
            logger.warning(
                "listen() ended but %s did not unsubscribe %s within %g s: their updates "
                "may still reach message_handler",
                describe_server(self.server_info, starts_sentence=False),
                ", ".join(map(repr, left)),
                UNSUBSCRIBE_SECONDS,
            )

    def _unfollowed(self, uri: str) -> bool:
        """Whether the server should no longer be subscribed to ``uri``: no listen
        follows it and the host did not subscribe itself."""
        return not self._listened_uris[uri] and uri not in self._subscribed_by_host

    def _left_subscribed(self, uri: str) -> bool:
        """Whether the server is (or may be) subscribed to ``uri`` that no one follows."""
        return self._unfollowed(uri) and (
            uri in self._subscribed_on_server or uri in self._maybe_subscribed
        )

    async def _unsubscribe_leaving(self, uri: str) -> None:
        """In ``uri``'s turn, unsubscribe it if no one follows it still."""
        async with self._turn(uri):
            if not self._left_subscribed(uri):
                return
            self._subscribed_on_server.discard(uri)
            self._maybe_subscribed.discard(uri)
            await self._unsubscribe_left(uri)

    async def _unsubscribe_left(self, uri: str, *, setup: bool = False) -> None:
        params = UnsubscribeRequestParams(uri=uri)
        try:
            await self.session.send_request(
                "resources/unsubscribe",
                params,
                EmptyResult,
                timeout=self.connect_timeout_seconds if setup else None,
                setup=setup,
            )
        except ConnectionClosedError:
            pass
        except Exception as exc:
            logger.warning(
                "listen() ended but %s did not unsubscribe %r (%s): its updates may "
                "still reach message_handler",
                describe_server(self.server_info, starts_sentence=False),
                uri,
                exc,
            )

    async def set_logging_level(self, level: LoggingLevel) -> None:
        """Legacy era: ask the server to send log messages at ``level`` and above.

        Raises ``MethodNotFoundError`` without asking a server that did not declare
        ``logging``, or on a 2026-07-28 connection, which has no ``logging/setLevel``:
        there every request carries ``Client(log_level=...)``.
        """
        params = request_params("set_logging_level", SetLevelRequestParams, level=level)
        server = describe_server(self.server_info, starts_sentence=False)
        version = self.session.modern_version
        if version is not None:
            raise MethodNotFoundError(
                f"set_logging_level() not sent: protocol {version}, which {server} speaks, "
                "has no logging/setLevel; each request carries its own log level instead. "
                f"Pass Client(log_level={level!r}) to receive log messages at that level "
                "and above.",
                {"reason": f"logging/setLevel does not exist in protocol {version}"},
            )
        if self.server_capabilities.logging is None:
            raise MethodNotFoundError(
                f"set_logging_level() not sent: {server} does not send log messages (it "
                'did not declare {"logging": {}}), and a client may use only what the '
                "server declared.",
                {"reason": 'the server did not declare the capability {"logging": {}}'},
            )
        await self.session.send_request("logging/setLevel", params, EmptyResult)

    async def send_roots_list_changed(self) -> None:
        """Tell the server the roots changed, so it asks for them again. 2026-07-28 has
        no such notification (a server asks for the roots in each request that needs
        them, and gets the current list), so on those connections this does nothing."""
        if self.session.modern_version is not None:
            return
        await self.session.send_notification("notifications/roots/list_changed")


def _refusal_reasons(reasons: Mapping[str, str] | None) -> dict[str, str]:
    """``Client(refusal_reasons=...)`` as a dict, if its keys are capabilities and its
    values the words to say."""
    if reasons is None:
        return {}
    if not isinstance(cast(object, reasons), Mapping):
        raise TypeError(
            "refusal_reasons must be a dict of capability to the reason to give, "
            f"such as {{'sampling': 'This app has no model.'}}, or None, got {reasons!r}"
        )
    if unknown := sorted(set(reasons) - set(REFUSABLE), key=repr):
        raise ValueError(
            f"refusal_reasons has {', '.join(map(repr, unknown))}: its keys are the "
            f"capabilities a server asks for, {', '.join(map(repr, REFUSABLE))}."
        )
    for capability, reason in reasons.items():
        if not isinstance(cast(object, reason), str):
            raise TypeError(
                f"refusal_reasons[{capability!r}] must be a string (the reason the server "
                f"is given), got {reason!r}"
            )
    return dict(reasons)


def _page_params(method: str, cursor: str | None) -> PaginatedRequestParams | None:
    """A list request's params: none for the first page."""
    return None if cursor is None else request_params(method, PaginatedRequestParams, cursor=cursor)


def _tool_call_params(
    call: str, name: str, arguments: dict[str, Any] | None, meta: Mapping[str, Any] | None
) -> JSONObject:
    """``tools/call`` params for ``call`` (``call_tool`` or ``call_tool_round``), built
    by hand because this runs on every call: the arguments become JSON-ready values
    (dates as strings, models as objects), as they would on any transport, so an
    in-process server sees what a remote one would; ``meta`` becomes ``_meta``."""
    if not isinstance(cast(object, name), str):
        raise TypeError(f"The tool name must be a string, not {type(name).__name__}.")
    params: JSONObject = {"name": name}
    if arguments is not None:
        if not isinstance(cast(object, arguments), dict):
            raise TypeError(
                f"Tool arguments must be a dict of argument names to values, not "
                f"{type(arguments).__name__}."
            )
        try:
            params["arguments"] = pydantic_core.to_jsonable_python(arguments)
        except ValueError as exc:  # pydantic's serialisation errors are ValueErrors
            raise TypeError(
                f"The arguments of tool {name!r} cannot be sent as JSON ({exc}). Pass "
                "strings, numbers, booleans, None, and lists and dicts of them (models, "
                f"dataclasses and dates are converted), nested at most {JSON_DEPTH_LIMIT} "
                "levels deep."
            ) from exc
    if meta is not None:
        params["_meta"] = _request_meta(call, meta)
    return params


class _Turn:
    """One URI's turn to change its subscription, and how many hold or wait for it."""

    def __init__(self) -> None:
        self.lock = anyio.Lock()
        self.users = 0


UNSUBSCRIBE_SECONDS = 5.0
"""How long the end of a legacy ``listen()`` block waits for its unsubscribes (and its
turn to send them): it is shielded from the cancellation that may have ended the block,
so it must end by itself."""


_CLIENT_META_KEYS = frozenset(
    {
        "progressToken",
        META_PROTOCOL_VERSION,
        META_CLIENT_CAPABILITIES,
        META_CLIENT_INFO,
        META_LOG_LEVEL,
    }
)
"""The ``_meta`` keys the client sets itself (progress, and 2026-07-28's protocol keys)."""


def _request_meta(call: str, meta: Mapping[str, Any]) -> JSONObject:
    """A caller's ``meta=`` as the request's ``_meta``, if it is a JSON object that sets
    none of the keys the client sets itself (the client's would silently win)."""
    if not isinstance(cast(object, meta), Mapping):
        raise TypeError(
            f"{call}(meta=...) must be a dict of _meta keys to values, such as "
            f"{{'traceparent': '00-...'}}, not {type(meta).__name__}."
        )
    if bad := sorted(
        repr(key) for key in cast(Mapping[object, Any], meta) if not isinstance(key, str)
    ):
        raise TypeError(f"{call}(meta=...) keys must be strings, got {', '.join(bad)}.")
    if taken := sorted(_CLIENT_META_KEYS.intersection(meta)):
        raise ValueError(
            f"{call}(meta=...) sets {', '.join(map(repr, taken))}, which the client sets in "
            "_meta itself; leave it out (for progress, pass progress_callback=)."
        )
    try:
        return pydantic_core.to_jsonable_python(dict(meta))
    except ValueError as exc:  # pydantic's serialisation errors are ValueErrors
        raise TypeError(f"{call}(meta=...) cannot be sent as JSON ({exc}).") from exc


_SUBSCRIBE = '{"resources": {"subscribe": true}}'
_LIST_CHANGES = {
    "toolsListChanged": ("tools", '{"tools": {"listChanged": true}}'),
    "promptsListChanged": ("prompts", '{"prompts": {"listChanged": true}}'),
    "resourcesListChanged": ("resources", '{"resources": {"listChanged": true}}'),
}
"""Each list-change kind of a listen: the capability that offers it, as declared."""


def _declared_part(
    capabilities: ServerCapabilities, asked: SubscriptionFilter
) -> tuple[SubscriptionFilter, list[str]]:
    """The part of ``asked`` the server's capabilities offer, and what was left out and
    why: a client may use only what the server declared."""
    kept = asked.to_wire()
    left_out: list[str] = []
    for kind, (capability, declaration) in _LIST_CHANGES.items():
        offered: object = getattr(capabilities, capability)
        if kept.get(kind) and not getattr(offered, "list_changed", None):
            del kept[kind]
            left_out.append(f"{kind} (no {declaration})")
    resources = capabilities.resources
    if kept.get("resourceSubscriptions") and not (resources is not None and resources.subscribe):
        del kept["resourceSubscriptions"]
        left_out.append(f"resourceSubscriptions (no {_SUBSCRIBE})")
    return SubscriptionFilter.model_validate(kept), left_out


_LISTENED = {
    "notifications/tools/list_changed": "tools_list_changed",
    "notifications/prompts/list_changed": "prompts_list_changed",
    "notifications/resources/list_changed": "resources_list_changed",
}
"""Each list-change notification, by the ``SubscriptionFilter`` field that asks for it."""


def _asked_for(wanted: SubscriptionFilter, method: str, params: JSONObject | None) -> bool:
    """Whether a legacy-era ``listen()`` that asked for ``wanted`` takes this notification."""
    if method == "notifications/resources/updated":
        uri: object = (params or {}).get("uri")
        return isinstance(uri, str) and uri in (wanted.resource_subscriptions or ())
    kind = _LISTENED.get(method)
    return kind is not None and bool(getattr(wanted, kind))


def _not_honoured(wanted: SubscriptionFilter, honoured: SubscriptionFilter) -> list[str]:
    """What a listen asked for that the acknowledgement leaves out, by wire name."""
    agreed = honoured.to_wire()
    missing = [
        kind for kind, value in wanted.to_wire().items() if value is True and not agreed.get(kind)
    ]
    uris = set(honoured.resource_subscriptions or ())
    missing.extend(
        f"updates of {uri!r}" for uri in wanted.resource_subscriptions or () if uri not in uris
    )
    return missing
