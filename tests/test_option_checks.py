"""Every option of a public constructor or run function is checked when it is given, not
when it is first used: a value of the wrong type is a ``TypeError``, a value of the right
type that means nothing (a count of 0, a negative timeout, an unknown word) a
``ValueError``, and the message names the option and says what to pass. ``True`` is not
taken for a number, nor a string for a flag. Good values still work."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import stable_id

from answerback import Client, StdioServer
from answerback.client import CallbackResponder, UrlElicitations
from answerback.server import MCPServer
from answerback.transports.http import StreamableHTTPApp
from answerback.types import Implementation, TextContent

pytestmark = pytest.mark.anyio

SERVER = MCPServer("Options")


@SERVER.tool()
def echo(text: str) -> str:
    return text


def client(**options: Any) -> Client:
    return Client(SERVER, **options)


def server(**options: Any) -> MCPServer:
    named: dict[str, Any] = {"name": "Options", **options}
    return MCPServer(**named)


def http_app(**options: Any) -> Any:
    return SERVER.http_app(**options)


def http_app_class(**options: Any) -> StreamableHTTPApp:
    return StreamableHTTPApp(SERVER, **options)


def run(**options: Any) -> None:
    """``mcp.run`` with options that fail before it serves or listens."""
    SERVER.run(**options)


def run_http(**options: Any) -> None:
    SERVER.run("streamable-http", **options)


def stdio_server(**options: Any) -> StdioServer:
    named: dict[str, Any] = {"command": sys.executable, **options}
    return StdioServer(**named)


def url_elicitations(**options: Any) -> UrlElicitations:
    return UrlElicitations(**options)


def callback_responder(**options: Any) -> CallbackResponder:
    return CallbackResponder(**options)


Build = Callable[..., Any]

# (what builds, option, bad value, exception, words the message holds)
REFUSALS: list[tuple[Build, str, Any, type[Exception], tuple[str, ...]]] = [
    # Client
    (client, "input_required_max_rounds", 0, ValueError, ("must be positive", "got 0")),
    (client, "input_required_max_rounds", -3, ValueError, ("must be positive",)),
    (client, "input_required_max_rounds", "3", TypeError, ("must be an int", "rounds")),
    (client, "input_required_max_rounds", True, TypeError, ("must be an int",)),
    (client, "max_input_requests", 0, ValueError, ("must be positive",)),
    (client, "max_input_requests", 2.5, TypeError, ("must be an int",)),
    (client, "log_level", "loud", ValueError, ("'debug'", "'emergency'", "got 'loud'")),
    (client, "log_level", 20, TypeError, ("'info'", "a string", "got 20")),
    (client, "read_timeout_seconds", -1, ValueError, ("positive", "or None (no timeout)")),
    (client, "read_timeout_seconds", 0, ValueError, ("positive", "seconds")),
    (client, "read_timeout_seconds", math.nan, ValueError, ("finite",)),
    (client, "read_timeout_seconds", math.inf, ValueError, ("finite", "None (no timeout)")),
    (client, "read_timeout_seconds", "5", TypeError, ("number of seconds", "got '5'")),
    (client, "read_timeout_seconds", True, TypeError, ("number of seconds",)),
    (client, "connect_timeout_seconds", 0, ValueError, ("positive", "None (wait for ever)")),
    (client, "connect_timeout_seconds", "30", TypeError, ("number of seconds",)),
    (client, "elicitation_callback", "nope", TypeError, ("async function", "(context, params)")),
    (client, "sampling_callback", 1, TypeError, ("async function", "(context, params)")),
    (client, "list_roots_callback", [], TypeError, ("async function", "(context)")),
    (client, "logging_callback", "log", TypeError, ("async function", "(params)")),
    (client, "message_handler", object(), TypeError, ("async function", "(message)")),
    (client, "client_info", {"name": "x", "version": "1"}, TypeError, ("Implementation(",)),
    (client, "url_elicitations", {}, TypeError, ("UrlElicitations(",)),
    (client, "responder", "me", TypeError, ("Responder", "capabilities()")),
    (client, "refusal_reasons", ["sampling"], TypeError, ("dict of capability",)),
    (client, "refusal_reasons", {"sampling": 1}, TypeError, ("refusal_reasons['sampling']",)),
    (client, "mode", 2026, TypeError, ("mode must be a string", "'auto', 'legacy'")),
    (client, "sampling_capabilities", {}, TypeError, ("SamplingCapability(",)),
    # CallbackResponder, which the callbacks make
    (callback_responder, "elicitation_callback", "x", TypeError, ("async function",)),
    # UrlElicitations
    (url_elicitations, "completion_timeout_seconds", -1, ValueError, ("0 or more",)),
    (url_elicitations, "completion_timeout_seconds", "1", TypeError, ("number of seconds",)),
    (url_elicitations, "follow_required", "yes", TypeError, ("True or False",)),
    (url_elicitations, "on_complete", "x", TypeError, ("async function", "id, session)")),
    (url_elicitations, "approved_domains", ["x.org"], TypeError, ("ApprovedDomains(",)),
    # MCPServer
    (server, "name", None, TypeError, ("a string", "server's name")),
    (server, "version", 1, TypeError, ("a string", "version")),
    (server, "instructions", ["x"], TypeError, ("a string",)),
    (server, "max_input_requests", 0, ValueError, ("must be positive",)),
    (server, "max_input_requests", "3", TypeError, ("must be an int",)),
    (server, "page_size", 0, ValueError, ("positive", "or None")),
    (server, "page_size", "10", TypeError, ("must be an int",)),
    (server, "cache_ttl_ms", -1, ValueError, ("0 or more",)),
    (server, "cache_ttl_ms", 1.5, TypeError, ("must be an int", "milliseconds")),
    (server, "cache_scope", "shared", ValueError, ("'public', 'private'",)),
    (server, "cache_scope", None, TypeError, ("'public', 'private'",)),
    (server, "state_ttl_seconds", 0, ValueError, ("positive, finite number of seconds",)),
    (server, "state_ttl_seconds", math.inf, ValueError, ("finite",)),
    (server, "state_ttl_seconds", "600", TypeError, ("number of seconds",)),
    (server, "state_keys", b"k" * 32, TypeError, ("list of keys", "[key]")),
    (server, "state_keys", ["k" * 32], TypeError, ("bytes", "os.urandom(32)")),
    (server, "state_keys", [b"k"], ValueError, ("32 random bytes", "1 bytes")),
    (server, "error_details", "all", ValueError, ("'local'", "'redacted'")),
    (server, "error_details", 0, TypeError, ("'local'", "a string")),
    (server, "single_use_state", "yes", TypeError, ("True or False",)),
    # mcp.http_app() and StreamableHTTPApp
    (http_app, "path", "mcp", ValueError, ("must start with '/'", "'/mcp'")),
    (http_app, "path", None, TypeError, ("a string starting with '/'",)),
    (http_app, "max_body_bytes", "4096", TypeError, ("must be an int", "bytes")),
    (http_app, "max_body_bytes", 0, ValueError, ("must be positive",)),
    (http_app, "body_timeout_seconds", 0, ValueError, ("positive, finite",)),
    (http_app, "max_sessions", True, TypeError, ("must be an int",)),
    (http_app, "session_idle_seconds", -1, ValueError, ("positive, finite",)),
    (http_app, "json_response", "no", TypeError, ("True or False",)),
    (http_app, "host_policy", "localhost", TypeError, ("HostPolicy(",)),
    (http_app_class, "keepalive_seconds", 0, ValueError, ("positive, finite",)),
    (http_app_class, "keepalive_seconds", "15", TypeError, ("number of seconds",)),
    (http_app_class, "retry_ms", -1, ValueError, ("0 or more",)),
    (http_app_class, "retry_ms", 0.5, TypeError, ("must be an int", "milliseconds")),
    (http_app_class, "max_backlog", 0, ValueError, ("must be positive",)),
    (http_app_class, "max_requests_in_flight", "9", TypeError, ("must be an int",)),
    (http_app_class, "max_sessions_per_principal", 0, ValueError, ("positive", "None (half)")),
    (http_app_class, "max_request_bytes_per_principal", "1", TypeError, ("None (half)",)),
    # mcp.run()
    (run, "transport", "http", ValueError, ("'stdio', 'streamable-http'",)),
    (run, "transport", None, TypeError, ("'stdio', 'streamable-http'",)),
    (run, "backend", "curio", ValueError, ("'asyncio', 'trio'",)),
    (run_http, "port", "8000", TypeError, ("port must be an int", "65535")),
    (run_http, "port", 70000, ValueError, ("from 0 to 65535",)),
    (run_http, "host", 1, TypeError, ("a string", "'127.0.0.1'")),
    (run_http, "path", "mcp", ValueError, ("must start with '/'",)),
    # StdioServer
    (stdio_server, "command", 3, TypeError, ("program to run",)),
    (stdio_server, "command", "", ValueError, ("program to run",)),
    (stdio_server, "args", "server.py", TypeError, ("a list of strings",)),
    (stdio_server, "args", [1], TypeError, ("strings",)),
    (stdio_server, "env", {"PORT": 8000}, TypeError, ("strings to strings", "str()")),
    (stdio_server, "env", ["PORT"], TypeError, ("a dict",)),
    (stdio_server, "cwd", 3, TypeError, ("directory",)),
    (stdio_server, "max_message_bytes", 0, ValueError, ("must be positive",)),
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
    assert option in message
    for word in words:
        assert word in message


@pytest.mark.parametrize(
    ("options", "error", "words"),
    [
        ({"read_timeout_seconds": "5"}, TypeError, ("read_timeout_seconds", "number of seconds")),
        ({"read_timeout_seconds": -1}, ValueError, ("read_timeout_seconds", "positive")),
        ({"read_timeout_seconds": True}, TypeError, ("read_timeout_seconds",)),
        ({"progress_callback": "x"}, TypeError, ("progress_callback", "(progress, total")),
    ],
)
async def test_call_tool_refuses_a_bad_option_before_sending(
    options: dict[str, Any], error: type[Exception], words: tuple[str, ...]
) -> None:
    async with Client(SERVER, mode="legacy") as connected:
        with pytest.raises(error) as raised:
            await connected.call_tool("echo", {"text": "hi"}, **options)
        for word in words:
            assert word in str(raised.value)
        result = await connected.call_tool("echo", {"text": "still here"})
    assert result.content == [TextContent(text="still here")]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_good_options_still_work(mode: str) -> None:
    async with Client(
        server(page_size=2, cache_ttl_ms=0, state_ttl_seconds=60, max_input_requests=4),
        mode=mode,
        read_timeout_seconds=30,
        connect_timeout_seconds=None,
        input_required_max_rounds=3,
        max_input_requests=4,
        log_level="info",
        client_info=Implementation(name="checked", version="1.0"),
        url_elicitations=UrlElicitations(completion_timeout_seconds=0, follow_required=True),
        refusal_reasons={"sampling": "This app has no model."},
    ) as connected:
        assert connected.log_level == "info"
        assert await connected.list_all_tools() == []


async def test_good_call_tool_options_still_work() -> None:
    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        pass

    async with Client(SERVER, read_timeout_seconds=29.5) as connected:
        result = await connected.call_tool(
            "echo", {"text": "ok"}, read_timeout_seconds=10, progress_callback=on_progress
        )
        assert result.content == [TextContent(text="ok")]
        result = await connected.call_tool("echo", {"text": "ok"}, read_timeout_seconds=2.5)
        assert result.content == [TextContent(text="ok")]


def test_good_transport_options_still_work(tmp_path: Path) -> None:
    app = SERVER.http_app(path="/api/mcp", json_response=True, body_timeout_seconds=1)
    assert app.path == "/api/mcp"
    app = StreamableHTTPApp(SERVER, retry_ms=0, max_sessions_per_principal=None)
    assert app.retry_ms == 0
    stdio = StdioServer(Path(sys.executable), [Path("server.py"), "-v"], {"A": "1"}, tmp_path)
    assert stdio.command == sys.executable
    assert stdio.args == ["server.py", "-v"]
    assert UrlElicitations(completion_timeout_seconds=None).completion_timeout_seconds is None
