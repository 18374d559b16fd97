"""``MCPServer``: declare tools with decorators, then serve them over any transport."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio

from answerback.jsonrpc import (
    Endpoint,
    Envelope,
    IncomingRequest,
    JSONObject,
    ReadStream,
    WriteStream,
)
from answerback.server._context import Context
from answerback.server._session import ClientState, ServerSession
from answerback.server._tools import RegisteredTool, tool_error_result
from answerback.transports import stdio_server_streams
from answerback.types import (
    CallToolRequestParams,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    InvalidParamsError,
    ListToolsResult,
    LoggingCapability,
    MCPError,
    MethodNotFoundError,
    ServerCapabilities,
    SetLevelRequestParams,
    ToolAnnotations,
    ToolsCapability,
)
from answerback.types._errors import INVALID_REQUEST
from answerback.types._versions import LATEST_LEGACY_VERSION, LEGACY_VERSIONS, has_feature

if TYPE_CHECKING:
    from answerback.transports.http import EventStore, HostPolicy, StreamableHTTPApp

logger = logging.getLogger("answerback.server")

FunctionT = TypeVar("FunctionT", bound=Callable[..., Any])
Handler = Callable[["_Connection", IncomingRequest], Awaitable[JSONObject]]


class MCPServer:
    """An MCP server: tools (and the rest) declared with decorators, served anywhere.

    ``serve_connection`` answers one connection; ``run`` serves this process's
    stdio (the default) until the client goes away.
    """

    def __init__(
        self, name: str, *, version: str = "0.1.0", instructions: str | None = None
    ) -> None:
        self.name = name
        self.version = version
        self.instructions = instructions
        self._tools: dict[str, RegisteredTool] = {}
        self._handlers: dict[str, Handler] = {
            "initialize": _Connection.initialize,
            "ping": _Connection.ping,
            "tools/list": _Connection.list_tools,
            "tools/call": _Connection.call_tool,
            "logging/setLevel": _Connection.set_level,
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
    """One client's connection: the handshake state and the method handlers."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server
        self.client: ClientState | None = None

    async def handle(self, request: IncomingRequest) -> JSONObject:
        handler = self.server._handlers.get(request.method)
        if handler is None:
            raise MethodNotFoundError(f"Method not found: {request.method!r}")
        if self.client is None and request.method not in ("initialize", "ping"):
            raise MCPError(
                INVALID_REQUEST,
                f"Received {request.method!r} before initialization; send 'initialize' first.",
            )
        return await handler(self, request)

    async def notification(self, method: str, params: JSONObject | None, _: Envelope) -> None:
        if method == "notifications/initialized" and self.client is not None:
            self.client.initialized = True
        elif method != "notifications/roots/list_changed":
            logger.debug("ignored notification %r", method)

    def session(self, request: IncomingRequest) -> ServerSession:
        assert self.client is not None
        return ServerSession(self.client, request)

    async def initialize(self, request: IncomingRequest) -> JSONObject:
        params = InitializeRequestParams.model_validate(request.params or {})
        requested = params.protocol_version
        version = requested if requested in LEGACY_VERSIONS else LATEST_LEGACY_VERSION
        self.client = ClientState(version, params.capabilities, params.client_info)
        return InitializeResult(
            protocol_version=version,
            capabilities=self.server.capabilities,
            server_info=self.server.server_info,
            instructions=self.server.instructions,
        ).to_wire()

    async def ping(self, request: IncomingRequest) -> JSONObject:
        return {}

    async def list_tools(self, request: IncomingRequest) -> JSONObject:
        tools = [tool.definition for tool in self.server._tools.values()]
        assert self.client is not None
        if not has_feature(self.client.protocol_version, "structured_content"):
            # Before 2025-06-18 tools had no output schema; older clients may reject it.
            tools = [tool.model_copy(update={"output_schema": None}) for tool in tools]
        return ListToolsResult(tools=tools).to_wire()

    async def call_tool(self, request: IncomingRequest) -> JSONObject:
        params = CallToolRequestParams.model_validate(request.params or {})
        tool = self.server._tools.get(params.name)
        if tool is None:
            raise InvalidParamsError(
                f"Unknown tool {params.name!r}; call tools/list to see the tools available."
            )
        context = Context(self.session(request), request)
        try:
            result = await tool.call(params.arguments or {}, context)
        except MCPError:
            raise
        except Exception as exc:
            logger.warning("tool %r failed: %s", params.name, exc, exc_info=True)
            result = tool_error_result(exc)
        assert self.client is not None
        if not has_feature(self.client.protocol_version, "structured_content"):
            result = result.model_copy(update={"structured_content": None})
        return result.to_wire()

    async def set_level(self, request: IncomingRequest) -> JSONObject:
        params = SetLevelRequestParams.model_validate(request.params or {})
        assert self.client is not None
        self.client.log_level = params.level
        return {}
