"""``MCPServer``: declare tools with decorators, then serve them over any transport."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

import anyio
import pydantic

from answerback.jsonrpc import (
    Endpoint,
    Envelope,
    IncomingRequest,
    JSONObject,
    ReadStream,
    WriteStream,
)
from answerback.jsonrpc._endpoint import as_object
from answerback.server._asking import InputNeeded, LiveAsker, ReplayAsker
from answerback.server._context import Context
from answerback.server._request_state import PREFIX as STATE_PREFIX
from answerback.server._request_state import RequestStateSealer, binding_for
from answerback.server._session import LOG_LEVELS, ClientState, ServerSession
from answerback.server._tools import RegisteredTool, tool_error_result
from answerback.transports import stdio_server_streams
from answerback.types import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    CallToolRequestParams,
    CallToolResult,
    ClientCapabilities,
    CreateMessageResult,
    DiscoverResult,
    ElicitResult,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    InputRequiredResult,
    InvalidParamsError,
    ListRootsResult,
    ListToolsResult,
    LoggingCapability,
    MCPError,
    MCPModel,
    MethodNotFoundError,
    ServerCapabilities,
    SetLevelRequestParams,
    ToolAnnotations,
    ToolsCapability,
    UnsupportedProtocolVersionError,
)
from answerback.types._errors import INTERNAL_ERROR, INVALID_REQUEST
from answerback.types._versions import (
    LATEST_LEGACY_VERSION,
    LEGACY_VERSIONS,
    MODERN_VERSIONS,
    SUPPORTED_VERSIONS,
    has_feature,
)

if TYPE_CHECKING:
    from answerback.transports.http import EventStore, HostPolicy, StreamableHTTPApp

logger = logging.getLogger("answerback.server")

FunctionT = TypeVar("FunctionT", bound=Callable[..., Any])
Handler = Callable[["_Connection", ClientState | None, IncomingRequest], Awaitable[JSONObject]]


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
        instructions: str | None = None,
        state_keys: Sequence[bytes] | None = None,
        state_ttl_seconds: float = 600.0,
        cache_ttl_ms: int = 0,
        cache_scope: Literal["public", "private"] = "private",
    ) -> None:
        """``state_keys`` seal 2026-07-28 ``requestState`` (32 random bytes each; the
        first seals, all open). Give every instance of a scaled-out server the same keys;
        by default each process makes its own. ``cache_ttl_ms``/``cache_scope`` are the
        caching hints on 2026-07-28 lists ("private": per user, the safe default)."""
        self.cache_ttl_ms = cache_ttl_ms
        self.cache_scope: Literal["public", "private"] = cache_scope
        self.name = name
        self.version = version
        self.instructions = instructions
        self._tools: dict[str, RegisteredTool] = {}
        self._sealer = RequestStateSealer(state_keys, state_ttl_seconds)
        shared: dict[str, Handler] = {
            "ping": _Connection.ping,
            "tools/list": _Connection.list_tools,
            "tools/call": _Connection.call_tool,
        }
        self._legacy_handlers: dict[str, Handler] = {
            **shared,
            "initialize": _Connection.initialize,
            "logging/setLevel": _Connection.set_level,
        }
        self._modern_handlers: dict[str, Handler] = {
            **shared,
            "server/discover": _Connection.discover,
        }

    # -- declaring -------------------------------------------------------------------

    def tool(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | None = None,
        structured_output: bool | None = None,
    ) -> Callable[[FunctionT], FunctionT]:
        """Register a function as a tool; its signature is the input schema.

        The docstring is the description unless one is given. ``structured_output``
        defaults to "whenever the return annotation allows it".
        """

        def register(function: FunctionT) -> FunctionT:
            registered = RegisteredTool.from_function(
                function,
                name=name,
                title=title,
                description=description,
                annotations=annotations,
                structured_output=structured_output,
                context_type=Context,
            )
            self._tools[registered.definition.name] = registered
            return function

        return register

    @property
    def capabilities(self) -> ServerCapabilities:
        return ServerCapabilities(
            tools=ToolsCapability(list_changed=False) if self._tools else None,
            logging=LoggingCapability(),
        )

    @property
    def server_info(self) -> Implementation:
        return Implementation(name=self.name, version=self.version)

    # -- serving ---------------------------------------------------------------------

    async def serve_connection(self, read_stream: ReadStream, write_stream: WriteStream) -> None:
        """Answer one connection until the client closes it."""
        connection = _Connection(self)
        async with Endpoint(
            read_stream,
            write_stream,
            on_request=connection.handle,
            on_notification=connection.notification,
            name="client",
        ) as endpoint:
            await endpoint.closed.wait()

    async def run_stdio_async(self) -> None:
        """Serve this process's stdin/stdout until the client closes them."""
        async with stdio_server_streams() as (read_stream, write_stream):
            await self.serve_connection(read_stream, write_stream)

    def http_app(
        self,
        *,
        path: str = "/mcp",
        host_policy: HostPolicy | None = None,
        event_store: EventStore | None = None,
        json_response: bool = False,
        max_body_bytes: int = 4 * 1024 * 1024,
        session_idle_seconds: float = 3600.0,
    ) -> StreamableHTTPApp:
        """This server as an ASGI application serving streamable HTTP at ``path``.

        It accepts only localhost ``Host``/``Origin`` headers unless ``host_policy``
        says otherwise. Mounted inside another Starlette app, pass
        ``lifespan=app.router.lifespan_context`` to the parent so sessions can run.
        """
        from answerback.transports.http import StreamableHTTPApp

        return StreamableHTTPApp(
            self,
            path=path,
            host_policy=host_policy,
            event_store=event_store,
            json_response=json_response,
            max_body_bytes=max_body_bytes,
            session_idle_seconds=session_idle_seconds,
        )

    def run(
        self,
        transport: Literal["stdio", "streamable-http"] = "stdio",
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        path: str = "/mcp",
    ) -> None:
        """Run the server in this process: the blocking entry point of a server script.

        ``"stdio"`` serves stdin/stdout; ``"streamable-http"`` serves
        ``http://host:port/path`` with uvicorn until interrupted.
        """
        if transport == "stdio":
            anyio.run(self.run_stdio_async)
        elif transport == "streamable-http":
            import uvicorn

            from answerback.transports.http import HostPolicy

            policy = (
                None
                if host in ("127.0.0.1", "localhost", "::1")
                else HostPolicy(allowed_hosts=["*"], allowed_origins=["*"])
            )
            app = self.http_app(path=path, host_policy=policy)
            uvicorn.run(app, host=host, port=port, log_level="warning", lifespan="on")
        else:
            raise ValueError(f"Unknown transport {transport!r}: use 'stdio' or 'streamable-http'.")


class _Connection:
    """One connection: legacy requests share its handshake state, modern ones carry their
    own (a connection may serve both eras, as a dual-era server should)."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server
        self.legacy_client: ClientState | None = None

    async def handle(self, request: IncomingRequest) -> JSONObject:
        meta = request.meta
        if request.method == "server/discover" or (meta and META_PROTOCOL_VERSION in meta):
            client = _modern_client(meta or {})
            handler = self.server._modern_handlers.get(request.method)
        else:
            client = self.legacy_client
            handler = self.server._legacy_handlers.get(request.method)
            if client is None and request.method not in ("initialize", "ping"):
                if handler is None:
                    raise MethodNotFoundError(f"Method not found: {request.method!r}")
                raise MCPError(
                    INVALID_REQUEST,
                    f"Received {request.method!r} before initialization: send 'initialize' "
                    "first, or use the 2026-07-28 protocol (per-request _meta).",
                )
        if handler is None:
            raise MethodNotFoundError(f"Method not found: {request.method!r}")
        result = await handler(self, client, request)
        if client is not None and client.modern:
            result.setdefault("resultType", "complete")
        return result

    async def notification(self, method: str, params: JSONObject | None, _: Envelope) -> None:
        if method == "notifications/initialized" and self.legacy_client is not None:
            self.legacy_client.initialized = True
        elif method != "notifications/roots/list_changed":
            logger.debug("ignored notification %r", method)

    # -- both eras -------------------------------------------------------------------

    async def ping(self, client: ClientState | None, request: IncomingRequest) -> JSONObject:
        return {}

    async def list_tools(self, client: ClientState | None, request: IncomingRequest) -> JSONObject:
        assert client is not None
        tools = [tool.definition for tool in self.server._tools.values()]
        if not has_feature(client.protocol_version, "structured_content"):
            # Before 2025-06-18 tools had no output schema; older clients may reject it.
            tools = [tool.model_copy(update={"output_schema": None}) for tool in tools]
        return {**ListToolsResult(tools=tools).to_wire(), **self._cache_hints(client)}

    async def call_tool(self, client: ClientState | None, request: IncomingRequest) -> JSONObject:
        assert client is not None
        params = CallToolRequestParams.model_validate(request.params or {})
        tool = self.server._tools.get(params.name)
        if tool is None:
            raise InvalidParamsError(
                f"Unknown tool {params.name!r}; call tools/list to see the tools available."
            )
        arguments = params.arguments or {}
        if not client.modern:
            context = Context(ServerSession(client, request, LiveAsker(request)), request)
            result = await self._run_tool(tool, arguments, context)
            if isinstance(result, InputRequiredResult):
                raise MCPError(
                    INTERNAL_ERROR,
                    f"Tool {params.name!r} returned an InputRequiredResult, which a "
                    f"{client.protocol_version} client cannot receive. Ask with ctx.elicit "
                    "(and friends), which work in both protocol generations.",
                )
            if not has_feature(client.protocol_version, "structured_content"):
                result = result.model_copy(update={"structured_content": None})
            return result.to_wire()
        binding = binding_for("tools/call", params.name, arguments)
        raw_responses = as_object((request.params or {}).get("inputResponses"))
        answers = self._recorded_answers(params.request_state, raw_responses, binding)
        context = Context(
            ServerSession(client, request, ReplayAsker(answers)),
            request,
            input_responses=raw_responses,
            request_state=params.request_state,
        )
        try:
            result = await self._run_tool(tool, arguments, context)
        except InputNeeded as needed:
            state = {"answers": answers, "asked": {needed.key: needed.method}}
            return InputRequiredResult(
                input_requests={needed.key: needed.input_request},  # type: ignore[dict-item]
                request_state=self.server._sealer.seal(state, binding),
            ).to_wire()
        return result.to_wire()

    async def _run_tool(
        self, tool: RegisteredTool, arguments: dict[str, Any], context: Context
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await tool.call(arguments, context)
        except MCPError:
            raise
        except Exception as exc:
            logger.warning("tool %r failed: %s", tool.definition.name, exc, exc_info=True)
            return tool_error_result(exc)

    def _recorded_answers(
        self, request_state: str | None, input_responses: JSONObject | None, binding: bytes
    ) -> dict[str, JSONObject]:
        """The answers so far: those sealed in the state plus this retry's responses to
        the questions the state says were asked. Unasked keys are ignored (spec)."""
        if request_state is None or not request_state.startswith(STATE_PREFIX):
            return {}
        state = self.server._sealer.open(request_state, binding)
        answers: dict[str, JSONObject] = dict(state.get("answers") or {})
        asked: dict[str, str] = state.get("asked") or {}
        for key, method in asked.items():
            response = (input_responses or {}).get(key)
            if response is None:
                continue
            answers[key] = _check_input_response(key, method, response)
        return answers

    def _cache_hints(self, client: ClientState) -> JSONObject:
        """2026-07-28 lists say how long a client may cache them."""
        if not client.modern:
            return {}
        return {"ttlMs": self.server.cache_ttl_ms, "cacheScope": self.server.cache_scope}

    # -- legacy only -----------------------------------------------------------------

    async def initialize(self, client: ClientState | None, request: IncomingRequest) -> JSONObject:
        params = InitializeRequestParams.model_validate(request.params or {})
        requested = params.protocol_version
        version = requested if requested in LEGACY_VERSIONS else LATEST_LEGACY_VERSION
        self.legacy_client = ClientState(version, params.capabilities, params.client_info)
        return InitializeResult(
            protocol_version=version,
            capabilities=self.server.capabilities,
            server_info=self.server.server_info,
            instructions=self.server.instructions,
        ).to_wire()

    async def set_level(self, client: ClientState | None, request: IncomingRequest) -> JSONObject:
        assert client is not None
        client.log_level = SetLevelRequestParams.model_validate(request.params or {}).level
        return {}

    # -- modern only -----------------------------------------------------------------

    async def discover(self, client: ClientState | None, request: IncomingRequest) -> JSONObject:
        return DiscoverResult(
            supported_versions=list(SUPPORTED_VERSIONS),
            capabilities=self.server.capabilities,
            instructions=self.server.instructions,
            ttl_ms=self.server.cache_ttl_ms,
            cache_scope=self.server.cache_scope,
            meta={META_SERVER_INFO: self.server.server_info.to_wire()},
        ).to_wire()


def _modern_client(meta: JSONObject) -> ClientState:
    """The client as a 2026-07-28 request describes itself in its ``_meta``."""
    version = meta.get(META_PROTOCOL_VERSION)
    if version not in MODERN_VERSIONS:
        raise UnsupportedProtocolVersionError(
            "Unsupported protocol version",
            {"supported": list(SUPPORTED_VERSIONS), "requested": version},
        )
    raw_capabilities = meta.get(META_CLIENT_CAPABILITIES)
    if not isinstance(raw_capabilities, dict):
        raise InvalidParamsError(
            f"Invalid params: _meta must carry {META_CLIENT_CAPABILITIES!r} (an object; "
            "empty if the client declares nothing)."
        )
    raw_info = meta.get(META_CLIENT_INFO) or {"name": "unknown", "version": "unknown"}
    level = meta.get(META_LOG_LEVEL)
    if level is not None and level not in LOG_LEVELS:
        raise InvalidParamsError(f"Invalid params: unknown log level {level!r}.")
    return ClientState(
        protocol_version=version,
        capabilities=ClientCapabilities.model_validate(raw_capabilities),
        client_info=Implementation.model_validate(raw_info),
        log_level=level,
        modern=True,
    )


_RESULT_TYPES: dict[str, type[MCPModel]] = {
    "elicitation/create": ElicitResult,
    "sampling/createMessage": CreateMessageResult,
    "roots/list": ListRootsResult,
}


def _check_input_response(key: str, method: str, response: Any) -> JSONObject:
    """The client's answer to input request ``key``, checked against what was asked."""
    result_type = _RESULT_TYPES[method]
    try:
        result_type.model_validate(response)
    except pydantic.ValidationError as exc:
        raise InvalidParamsError(
            f"Invalid params: inputResponses[{key!r}] is not a valid answer to {method!r} "
            f"(expected {result_type.__name__}): {exc.errors(include_url=False)[0]['msg']}."
        ) from None
    return cast(JSONObject, response)
