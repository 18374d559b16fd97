"""The options of the authorization classes (``OAuth``, its token stores, ``ResourceServer``
and the token verifiers), of ``StreamableHTTPTransport``, of the responders a host
composes, and of the HTTP server's ``HostPolicy`` and state are checked when given, as
``Client``'s and ``MCPServer``'s are (tests/test_option_checks.py): a value of the wrong
type is a ``TypeError``, one that means nothing a ``ValueError``, naming the option and
saying what to pass. Before, most were taken and failed at connect, at the first request
or token, or never (a ``HostPolicy`` of one string matched hosts letter by letter)."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest

from answerback import Client, StdioServer
from answerback.client import (
    CallbackResponder,
    CheckedForms,
    ClientRequestContext,
    FileTokenStore,
    InMemoryTokenStore,
    KeyringTokenStore,
    OAuth,
    ResponderWrapper,
)
from answerback.forms import AnswerError
from answerback.server import IntrospectionVerifier, JWTVerifier, MCPServer, ResourceServer
from answerback.transports.http import (
    HostPolicy,
    InMemoryEventStore,
    InMemoryState,
    StreamableHTTPTransport,
)
from answerback.types import ElicitRequestFormParams, ElicitResult, ErrorData

URL = "http://127.0.0.1:9/mcp"
ISSUER = "https://auth.example.com"


async def _authorize(url: str) -> dict[str, str]:
    return {}


def oauth(**options: Any) -> OAuth:
    """A client-credentials ``OAuth`` (the grant that needs no person) with ``options``."""
    named: dict[str, Any] = {
        "grant": "client_credentials",
        "client_id": "app",
        "client_secret": "secret",
        **options,
    }
    return OAuth(**named)


def login_oauth(**options: Any) -> OAuth:
    named: dict[str, Any] = {
        "redirect_uri": "http://127.0.0.1:5173/callback",
        "authorize": _authorize,
        **options,
    }
    return OAuth(**named)


def transport(**options: Any) -> StreamableHTTPTransport:
    named: dict[str, Any] = {"url": URL, **options}
    return StreamableHTTPTransport(**named)


def client(**options: Any) -> Client:
    named: dict[str, Any] = {"target": URL, **options}
    return Client(**named)


def jwt_verifier(**options: Any) -> JWTVerifier:
    named: dict[str, Any] = {"issuer": ISSUER, **options}
    return JWTVerifier(**named)


def introspection(**options: Any) -> IntrospectionVerifier:
    named: dict[str, Any] = {
        "url": f"{ISSUER}/introspect",
        "client_id": "rs",
        "client_secret": "secret",
        **options,
    }
    return IntrospectionVerifier(**named)


def resource_server(**options: Any) -> ResourceServer:
    named: dict[str, Any] = {
        "resource": "https://mcp.example.com/mcp",
        "authorization_servers": [ISSUER],
        "verifier": JWTVerifier(issuer=ISSUER),
        **options,
    }
    return ResourceServer(**named)


def host_policy(**options: Any) -> HostPolicy:
    return HostPolicy(**options)


def event_store(**options: Any) -> InMemoryEventStore:
    return InMemoryEventStore(**options)


def state(**options: Any) -> InMemoryState:
    return InMemoryState(**options)


def file_store(**options: Any) -> FileTokenStore:
    return FileTokenStore(**options)


def keyring_store(**options: Any) -> KeyringTokenStore:
    pytest.importorskip("keyring")
    return KeyringTokenStore(**options)


class Kiosk(CallbackResponder):
    """A form renderer that never answers: enough to be composed."""

    async def elicit_again(
        self,
        context: ClientRequestContext,
        params: ElicitRequestFormParams,
        previous: ElicitResult,
        problems: AnswerError,
    ) -> ElicitResult | ErrorData:
        return previous


def checked_forms(**options: Any) -> CheckedForms:
    named: dict[str, Any] = {"renderer": Kiosk(), **options}
    return CheckedForms(**named)


def wrapper(**options: Any) -> ResponderWrapper:
    return ResponderWrapper(**options)


Build = Callable[..., Any]

# (what builds, option, bad value, exception, words the message holds)
REFUSALS: list[tuple[Build, str, Any, type[Exception], tuple[str, ...]]] = [
    # OAuth
    (oauth, "grant", 1, TypeError, ("'client_credentials'", "a string")),
    (oauth, "grant", "password", ValueError, ("'authorization_code'", "got 'password'")),
    (login_oauth, "redirect_uri", 5173, TypeError, ("a string", "sends the person back")),
    (login_oauth, "authorize", "open the browser", TypeError, ("async function",)),
    (oauth, "scopes", "read write", TypeError, ("a list of strings", "['read']")),
    (oauth, "scopes", ["read", 1], TypeError, ("a list of strings", "got 1 in it")),
    (oauth, "client_id", 42, TypeError, ("a string", "registered beforehand")),
    (oauth, "client_secret", b"secret", TypeError, ("a string",)),
    (oauth, "token_endpoint_auth_method", 1, TypeError, ("a string", "client_secret_basic")),
    (oauth, "client_metadata_url", 1, TypeError, ("a string", "https URL")),
    (oauth, "client_name", None, TypeError, ("a string", "registers as")),
    (oauth, "private_key", 1, TypeError, ("PEM private key", "JWK dict")),
    (oauth, "assertion", 1, TypeError, ("a JWT", "async function")),
    (oauth, "dpop", "yes", TypeError, ("True, False or None",)),
    (oauth, "store", {}, TypeError, ("TokenStore", "FileTokenStore(path)")),
    (oauth, "max_step_ups", "2", TypeError, ("must be an int", "re-authorizations")),
    (oauth, "max_step_ups", True, TypeError, ("must be an int",)),
    (oauth, "timeout", 0, ValueError, ("positive, finite number of seconds",)),
    (oauth, "timeout", math.nan, ValueError, ("finite",)),
    (oauth, "timeout", "30", TypeError, ("number of seconds",)),
    (oauth, "timeout", None, TypeError, ("number of seconds",)),
    (oauth, "http_client", "client", TypeError, ("httpx2.AsyncClient",)),
    # the token stores
    (file_store, "path", 3, TypeError, ("str or Path",)),
    (file_store, "path", "", ValueError, ("name the store file",)),
    (keyring_store, "service", None, TypeError, ("a string", "keyring service")),
    (keyring_store, "service", "", ValueError, ("must not be empty",)),
    # StreamableHTTPTransport, and Client(url, auth=...) which makes one
    (transport, "url", 8000, TypeError, ("a string", "'http://127.0.0.1:8000/mcp'")),
    (transport, "url", "127.0.0.1:8000/mcp", ValueError, ("http(s) endpoint URL",)),
    (transport, "url", "ftp://example.com/mcp", ValueError, ("http(s) endpoint URL",)),
    (transport, "url", "http://:8000/mcp", ValueError, ("Cannot connect to", "names no host")),
    (transport, "headers", [("X-Key", "v")], TypeError, ("a dict of header names",)),
    (transport, "headers", {"X-Port": 8000}, TypeError, ("strings", "str()", "'X-Port': a int")),
    (transport, "http_client", "client", TypeError, ("httpx2.AsyncClient",)),
    (transport, "timeout", 0, ValueError, ("positive, finite number of seconds",)),
    (transport, "timeout", "30", TypeError, ("number of seconds",)),
    (transport, "timeout", None, TypeError, ("number of seconds",)),
    (transport, "max_retry_seconds", -1, ValueError, ("0 or more", "0: retry at once")),
    (transport, "max_retry_seconds", math.inf, ValueError, ("finite",)),
    (transport, "max_message_bytes", 0, ValueError, ("must be positive",)),
    (transport, "max_message_bytes", "1", TypeError, ("must be an int", "bytes")),
    (transport, "auth", "Bearer abc", TypeError, ("httpx2.Auth", "OAuth(")),
    (transport, "auth", ("user", "pass"), TypeError, ("httpx2.Auth",)),
    (client, "auth", "Bearer abc", TypeError, ("httpx2.Auth", "OAuth(")),
    # ResourceServer
    (resource_server, "resource", 3, TypeError, ("a string", "MCP endpoint's URL")),
    (resource_server, "authorization_servers", [1], TypeError, ("a list of strings",)),
    (resource_server, "authorization_servers", None, TypeError, ("a list of strings",)),
    (resource_server, "authorization_servers", ["auth.example.com"], ValueError, ("http(s)",)),
    (resource_server, "verifier", "jwt", TypeError, ("TokenVerifier", "async verify(")),
    (resource_server, "scopes", "mcp", TypeError, ("a list of strings", "['mcp']")),
    (resource_server, "scopes", [1], TypeError, ("a list of strings",)),
    (resource_server, "scopes_supported", "mcp", TypeError, ("a list of strings",)),
    (resource_server, "resource_name", 1, TypeError, ("a string",)),
    (resource_server, "resource_documentation", 1, TypeError, ("a string",)),
    # JWTVerifier
    (jwt_verifier, "issuer", None, TypeError, ("a string", "iss")),
    (jwt_verifier, "issuer", "", ValueError, ("must not be empty",)),
    (jwt_verifier, "issuer", "auth.example.com", ValueError, ("http(s) URL",)),
    (jwt_verifier, "jwks_url", 1, TypeError, ("http(s) URL", "JWKS")),
    (jwt_verifier, "jwks_url", "keys.json", ValueError, ("absolute http(s) URL",)),
    (jwt_verifier, "audience", 1, TypeError, ("a list of strings", "one string")),
    (jwt_verifier, "audience", [1], TypeError, ("a list of strings",)),
    (jwt_verifier, "algorithms", "RS256", TypeError, ("a list of strings", "['RS256'")),
    (jwt_verifier, "algorithms", [], ValueError, ("at least one",)),
    (jwt_verifier, "algorithms", [256], TypeError, ("a list of strings",)),
    (jwt_verifier, "algorithms", ["XX1"], ValueError, ("does not know", "['XX1']", "RS256")),
    (jwt_verifier, "algorithms", ["rs256"], ValueError, ("case-sensitive", "ES256", "EdDSA")),
    (jwt_verifier, "algorithms", ["RS256", "ES257"], ValueError, ("['ES257']",)),
    (jwt_verifier, "leeway_seconds", -1, ValueError, ("0 or more",)),
    (jwt_verifier, "leeway_seconds", "60", TypeError, ("number of seconds",)),
    (jwt_verifier, "cache_seconds", 0, ValueError, ("positive, finite",)),
    (jwt_verifier, "min_refresh_seconds", -1, ValueError, ("0 or more",)),
    (jwt_verifier, "timeout_seconds", 0, ValueError, ("positive, finite",)),
    (jwt_verifier, "timeout_seconds", True, TypeError, ("number of seconds",)),
    # IntrospectionVerifier
    (introspection, "url", 1, TypeError, ("http(s) URL", "introspection endpoint")),
    (introspection, "url", "introspect", ValueError, ("absolute http(s) URL",)),
    (introspection, "client_id", 1, TypeError, ("a string",)),
    (introspection, "client_secret", None, TypeError, ("a string",)),
    (introspection, "auth_method", "basic", ValueError, ("'client_secret_basic'", "got 'basic'")),
    (introspection, "issuer", 1, TypeError, ("a string", "or None")),
    (introspection, "audience", 1, TypeError, ("a list of strings",)),
    (introspection, "leeway_seconds", -1, ValueError, ("0 or more",)),
    (introspection, "timeout_seconds", "10", TypeError, ("number of seconds",)),
    # the responders
    (checked_forms, "renderer", "kiosk", TypeError, ("FormRenderer", "elicit_again(")),
    (checked_forms, "renderer", CallbackResponder(), TypeError, ("FormRenderer",)),
    (checked_forms, "attempts", "3", TypeError, ("must be an int",)),
    (checked_forms, "attempts", True, TypeError, ("must be an int",)),
    (wrapper, "inner", None, TypeError, ("Responder", "capabilities()")),
    (wrapper, "inner", "responder", TypeError, ("Responder",)),
    # HostPolicy and the HTTP server's state
    (host_policy, "allowed_hosts", "mcp.example.com", TypeError, ("a list of strings",)),
    (host_policy, "allowed_hosts", None, TypeError, ("a list of strings",)),
    (host_policy, "allowed_hosts", [1], TypeError, ("a list of strings",)),
    (host_policy, "allowed_origins", "https://app.example.com", TypeError, ("a list of",)),
    (state, "event_store", {}, TypeError, ("EventStore", "InMemoryEventStore()")),
    (event_store, "max_events", "10", TypeError, ("must be an int", "events")),
    (event_store, "max_events", True, TypeError, ("must be an int",)),
    (event_store, "max_bytes", 1.5, TypeError, ("must be an int", "bytes")),
    (event_store, "max_age_seconds", math.nan, ValueError, ("finite",)),
    (event_store, "max_age_seconds", math.inf, ValueError, ("finite",)),
    (event_store, "max_events_per_stream", "5", TypeError, ("must be an int",)),
]


@pytest.mark.parametrize(
    ("build", "option", "value", "error", "words"),
    REFUSALS,
    ids=[f"{build.__name__}-{option}-{value!r}" for build, option, value, *_ in REFUSALS],
)
def test_a_bad_option_is_refused_when_given(
    build: Build, option: str, value: Any, error: type[Exception], words: tuple[str, ...]
) -> None:
    with pytest.raises(error) as raised:
        build(**{option: value})
    message = str(raised.value)
    assert type(raised.value) is error
    assert option in message or "Cannot connect to" in message
    for word in words:
        assert word in message


def stdio_server(**options: Any) -> StdioServer:
    return StdioServer("python", **options)


def mcp_server(**options: Any) -> MCPServer:
    return MCPServer("Secrets", **options)


SECRET = "hunter2-do-not-print"


@pytest.mark.parametrize(
    ("build", "option", "value"),
    [
        (oauth, "client_secret", SECRET.encode()),
        (oauth, "assertion", [SECRET]),
        (oauth, "private_key", [SECRET]),
        (introspection, "client_secret", SECRET.encode()),
        (transport, "auth", ("user", SECRET)),
        (transport, "headers", [("Authorization", SECRET)]),
        (transport, "headers", {"Authorization": SECRET.encode()}),
        (stdio_server, "env", {"API_KEY": SECRET.encode()}),
        (mcp_server, "state_keys", [SECRET]),
    ],
    ids=[
        "oauth-client_secret",
        "oauth-assertion",
        "oauth-private_key",
        "introspection",
        "transport-auth",
        "transport-headers",
        "transport-header-value",
        "stdio-env",
        "server-state_keys",
    ],
)
def test_a_refused_secret_is_not_repeated_in_the_error(
    build: Build, option: str, value: Any
) -> None:
    """An exception's text ends up in logs and tracebacks: a secret of the wrong type is
    named by its type only."""
    with pytest.raises(TypeError) as raised:
        build(**{option: value})
    assert option in str(raised.value)
    assert SECRET not in str(raised.value)


def test_redis_state_options_are_checked_before_connecting() -> None:
    """``RedisState`` connects lazily, so these are refused with no Redis running."""
    pytest.importorskip("redis")
    from answerback.transports.http import RedisState

    refusals: list[tuple[dict[str, Any], type[Exception], tuple[str, ...]]] = [
        ({"url": 6379}, TypeError, ("url must be a string", "redis://")),
        ({"url": "127.0.0.1:6379"}, ValueError, ("url must start with redis://", "unix://")),
        ({"url": "http://127.0.0.1:6379"}, ValueError, ("rediss://",)),
        ({"url": ""}, ValueError, ("url must start with redis://",)),
        ({"heartbeat_seconds": "1"}, TypeError, ("heartbeat_seconds", "number of seconds")),
        ({"heartbeat_seconds": 0}, ValueError, ("heartbeat_seconds", "positive")),
        ({"key_prefix": 1}, TypeError, ("key_prefix must be a string",)),
        ({"replica_id": 1}, TypeError, ("replica_id must be a string",)),
        ({"max_events_per_stream": 2.5}, TypeError, ("max_events_per_stream", "an int")),
        ({"event_max_age_seconds": math.inf}, ValueError, ("event_max_age_seconds", "finite")),
    ]
    for options, error, words in refusals:
        with pytest.raises(error) as raised:
            RedisState(**options)
        for word in words:
            assert word in str(raised.value)
    assert RedisState(heartbeat_seconds=0.5, replica_id="web-1").replica_id == "web-1"
    for url in ("rediss://cache.example.com:6380/1", "unix:///run/redis.sock", "REDIS://h"):
        assert RedisState(url).url == url


def test_redis_clients_are_checked_before_connecting() -> None:
    """``RedisNotificationBus`` and ``RedisUsedStates`` take the caller's asyncio client:
    a URL, a synchronous client or nothing is refused when they are made, not at the
    first notice or request. Nothing connects (no Redis runs here)."""
    pytest.importorskip("redis")
    import redis
    import redis.asyncio

    from answerback.transports.http import RedisNotificationBus, RedisUsedStates

    for make in (RedisNotificationBus, RedisUsedStates):
        refusals: list[tuple[Any, tuple[str, ...]]] = [
            ("redis://127.0.0.1:6379/0", ("redis must be a redis.asyncio client", "from_url(")),
            (redis.Redis(), ("synchronous Redis", "cannot be awaited")),
            (None, ("redis must be a redis.asyncio client", "got None")),
            (object(), ("redis must be a redis.asyncio client",)),
        ]
        for client, words in refusals:
            with pytest.raises(TypeError) as raised:
                make(client)
            for word in words:
                assert word in str(raised.value)
    with pytest.raises(TypeError, match="key_prefix must be a string"):
        RedisUsedStates(redis.asyncio.Redis(), key_prefix=1)  # type: ignore[arg-type]
    client = redis.asyncio.Redis()
    assert RedisNotificationBus(client).key == "answerback:notifications"
    assert RedisUsedStates(client, key_prefix="tea:") is not None


def test_a_redis_password_is_not_repeated_in_the_error() -> None:
    pytest.importorskip("redis")
    from answerback.transports.http import RedisNotificationBus, RedisState

    with pytest.raises(ValueError, match="url must start with redis://") as raised:
        RedisState(f"http://user:{SECRET}@cache.example.com:6379")
    assert "user:***@cache.example.com" in str(raised.value)
    assert SECRET not in str(raised.value)
    with pytest.raises(TypeError) as refused:
        RedisNotificationBus(f"redis://:{SECRET}@cache.example.com")  # type: ignore[arg-type]
    assert SECRET not in str(refused.value)


def test_good_options_still_work(tmp_path: Path) -> None:
    async def assertion(issuer: str, resource: str) -> str:
        return "jwt"

    http = httpx2.AsyncClient()
    made = oauth(
        scopes=("read", "write"),
        client_name="checked",
        dpop=None,
        store=FileTokenStore(tmp_path / "tokens.json"),
        max_step_ups=0,
        timeout=2.5,
        http_client=http,
        token_endpoint_auth_method="client_secret_post",
    )
    assert made.scopes == ["read", "write"]
    assert made.timeout == 2.5
    assert OAuth(grant="jwt_bearer", assertion=assertion, dpop=True).dpop is True
    assert OAuth(grant="jwt_bearer", assertion="a.b.c", store=InMemoryTokenStore()).grant
    assert login_oauth(scopes=["mcp"]).redirect_uri == "http://127.0.0.1:5173/callback"

    made_transport = transport(
        url="HTTPS://mcp.example.com/mcp",
        headers={"X-Key": "v"},
        timeout=1,
        max_retry_seconds=0,
        max_message_bytes=1024,
        auth=made,
        http_client=http,
    )
    assert made_transport.max_retry_seconds == 0
    assert made_transport.auth is made
    assert Client(URL, auth=made) is not None

    verifier = jwt_verifier(
        audience=("https://api.example.com",),
        algorithms=("ES256",),
        leeway_seconds=0,
        min_refresh_seconds=0,
        cache_seconds=60,
        timeout_seconds=0.5,
    )
    assert verifier.algorithms == ("ES256",)
    assert jwt_verifier(algorithms=["ES256K", "Ed25519"]).algorithms == ("ES256K", "Ed25519")
    assert jwt_verifier(issuer="urn:example:issuer", jwks_url=f"{ISSUER}/jwks").issuer
    assert introspection(audience="https://api.example.com", issuer=ISSUER, leeway_seconds=0)
    protected = resource_server(
        scopes=("mcp",), scopes_supported=["mcp", "admin"], resource_name="Tea"
    )
    assert protected.scopes == frozenset({"mcp"})
    assert protected.scopes_supported == ["mcp", "admin"]

    assert CheckedForms(Kiosk(), attempts=1).attempts == 1
    assert isinstance(ResponderWrapper(CallbackResponder()).inner, CallbackResponder)
    assert HostPolicy(allowed_hosts=("mcp.example.com",)).host_allowed("mcp.example.com")
    assert not HostPolicy(allowed_hosts=["mcp.example.com"]).host_allowed("m")
    store = InMemoryEventStore(max_events=1, max_bytes=10, max_age_seconds=0.5)
    assert InMemoryState(event_store=store).events is store
    assert FileTokenStore(Path("~") / "tokens.json").path.name == "tokens.json"
