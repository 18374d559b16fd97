"""The answerback client under test by the official MCP conformance suite.

The suite starts this program once per client scenario, with the mock server's URL as
the last argument and the scenario in the environment::

    MCP_CONFORMANCE_SCENARIO          which scenario this run is (e.g. ``tools_call``)
    MCP_CONFORMANCE_PROTOCOL_VERSION  the protocol version to speak (always set)
    MCP_CONFORMANCE_CONTEXT           JSON with scenario data (only some scenarios)

Each scenario is one small function in ``SCENARIOS`` below; together they double as
a tour of the client API. An unknown scenario exits with status 2. Run it by hand
against any server::

    MCP_CONFORMANCE_SCENARIO=tools_call MCP_CONFORMANCE_PROTOCOL_VERSION=2026-07-28 \\
        python conformance/client.py http://localhost:3000/mcp

The suite starts some forty of these at once, so answerback is imported inside the
scenario functions: an unknown scenario exits before paying for the import.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from answerback.client import ClientRequestContext
    from answerback.types import (
        CreateMessageRequestParams,
        CreateMessageResult,
        ElicitRequestParams,
        ElicitResult,
        ListRootsResult,
    )

logger = logging.getLogger("conformance.client")


@dataclass(frozen=True)
class Run:
    """One run of a scenario: where the mock server is and what the suite asked for."""

    url: str
    version: str
    """The protocol version to speak; it is the ``Client``'s ``mode``."""
    context: dict[str, Any] = field(default_factory=dict[str, Any])


# -- callbacks: how this client answers the server's questions ----------------------------
# Registering a callback is what declares the matching client capability.


async def accept_with_defaults(
    context: ClientRequestContext, params: ElicitRequestParams
) -> ElicitResult:
    """Accept the form without filling anything in: answerback adds the schema's
    defaults for every omitted field (SEP-1034)."""
    from answerback.types import ElicitResult

    return ElicitResult(action="accept", content={})


async def confirm(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    """Say yes to a confirmation form."""
    from answerback.types import ElicitResult

    return ElicitResult(action="accept", content={"confirmed": True})


async def sample(
    context: ClientRequestContext, params: CreateMessageRequestParams
) -> CreateMessageResult:
    """A stand-in language model."""
    from answerback.types import CreateMessageResult, TextContent

    return CreateMessageResult(
        role="assistant", content=TextContent(text="A sampled answer."), model="conformance"
    )


async def list_roots(context: ClientRequestContext) -> ListRootsResult:
    from pydantic import FileUrl

    from answerback.types import ListRootsResult, Root

    return ListRootsResult(roots=[Root(uri=FileUrl("file:///tmp/conformance"), name="Conformance")])


# -- scenarios ----------------------------------------------------------------------------


async def initialize(run: Run) -> None:
    """Connect (the handshake is the test), look around, disconnect."""
    from answerback import Client

    async with Client(run.url, mode=run.version) as client:
        logger.info("connected to %s at %s", client.server_info.name, client.protocol_version)
        await client.list_tools()


async def tools_call(run: Run) -> None:
    """List the tools and call ``add_numbers`` with numeric arguments."""
    from answerback import Client

    async with Client(run.url, mode=run.version) as client:
        tools = await client.list_all_tools()
        assert any(tool.name == "add_numbers" for tool in tools), tools
        result = await client.call_tool("add_numbers", {"a": 2, "b": 3})
        logger.info("add_numbers: %s", result.content)


async def elicitation_defaults(run: Run) -> None:
    """The server elicits a form with defaults; the callback accepts it empty."""
    from answerback import Client

    async with Client(run.url, mode=run.version, elicitation_callback=accept_with_defaults) as c:
        result = await c.call_tool("test_client_elicitation_defaults", {})
        logger.info("result: %s", result.content)


async def sse_retry(run: Run) -> None:
    """The tool's response stream closes early; the transport resumes it with
    ``Last-Event-ID`` after the server's ``retry`` delay and gets the result."""
    from answerback import Client

    async with Client(run.url, mode=run.version) as client:
        await client.list_tools()
        result = await client.call_tool("test_reconnection")
        logger.info("test_reconnection: %s", result.content)


async def json_schema_preservation(run: Run) -> None:
    """Echo a tool's input schema back to the server exactly as the client stored it."""
    from answerback import Client

    async with Client(run.url, mode=run.version) as client:
        tools = {tool.name: tool for tool in await client.list_all_tools()}
        schema = tools["json_schema_2020_12_tool"].input_schema
        await client.call_tool("json_schema_echo", {"schema": schema})


async def request_metadata(run: Run) -> None:
    """2026-07-28: every request carries its version, capabilities and client info; the
    first is refused as an unsupported version and the client retries with one the
    server named. The callbacks are here to declare roots, sampling and elicitation."""
    from answerback import Client

    async with Client(
        run.url,
        mode=run.version,
        elicitation_callback=confirm,
        sampling_callback=sample,
        list_roots_callback=list_roots,
    ) as client:
        await client.list_tools()


async def request_state(run: Run) -> None:
    """2026-07-28 multi-round tool calls (SEP-2322), driven by hand where it matters."""
    from answerback import Client
    from answerback.types import InputRequiredResult

    async with Client(run.url, mode=run.version, elicitation_callback=confirm) as client:
        # Round one asks for confirmation and hands over an opaque requestState.
        first = await client.call_tool_round("test_mrtr_echo_state")
        assert isinstance(first, InputRequiredResult), first
        # Another call meanwhile must not pick up that call's state.
        await client.call_tool("test_mrtr_unrelated")
        # Round two: the answers, and the state echoed back unchanged.
        answers = await client.answer_input_requests(first)
        done = await client.call_tool_round(
            "test_mrtr_echo_state", input_responses=answers, request_state=first.request_state
        )
        logger.info("test_mrtr_echo_state: %s", done)
        # call_tool runs the same loop by itself (no state to echo here) ...
        await client.call_tool("test_mrtr_no_state")
        # ... and a result without resultType is a complete one.
        await client.call_tool("test_mrtr_no_result_type")


async def standard_headers(run: Run) -> None:
    """2026-07-28 over HTTP: every request names its method (and tool, prompt or
    resource) in headers. Use every kind of request once."""
    from answerback import Client

    async with Client(run.url, mode=run.version) as client:
        for tool in await client.list_all_tools():
            await client.call_tool(tool.name, {})
        for resource in (await client.list_resources()).resources:
            await client.read_resource(str(resource.uri))
        for prompt in (await client.list_prompts()).prompts:
            await client.get_prompt(prompt.name)


async def custom_headers(run: Run) -> None:
    """2026-07-28 over HTTP: arguments marked ``x-mcp-header`` are mirrored as
    ``Mcp-Param-*`` headers. The suite says which calls to make."""
    from answerback import Client

    async with Client(run.url, mode=run.version) as client:
        await client.list_all_tools()
        for call in run.context["toolCalls"]:
            await client.call_tool(call["name"], call["arguments"])


async def invalid_tool_headers(run: Run) -> None:
    """Tools whose ``x-mcp-header`` marks break the rules are left out of the list;
    call every tool that is left."""
    from answerback import Client

    async with Client(run.url, mode=run.version) as client:
        for tool in await client.list_all_tools():
            properties = tool.input_schema.get("properties", {})
            await client.call_tool(tool.name, dict.fromkeys(properties, "us-west1"))


async def ref_no_deref(run: Run) -> None:
    """A tool schema with a network ``$ref``: listing it must not fetch anything."""
    from answerback import Client

    async with Client(run.url, mode=run.version) as client:
        await client.list_all_tools()


# -- authorization: the suite's mock authorization servers --------------------------------

CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
"""The client ID metadata document URL the suite's servers accept without fetching it."""
REDIRECT_URI = "http://localhost:3000/callback"


async def follow_login(authorization_url: str) -> dict[str, str]:
    """The browser stand-in: the suite's authorization endpoint approves at once and
    redirects; the redirect's query parameters are the answer."""
    import httpx2

    async with httpx2.AsyncClient() as http:
        response = await http.get(authorization_url, follow_redirects=False)
    location = response.headers.get("location")
    if location is None:
        raise RuntimeError(f"no redirect from {authorization_url}: HTTP {response.status_code}")
    return dict(httpx2.URL(location).params)


async def use_protected_server(run: Run, auth: Any, *, call: bool = True) -> None:
    """List the tools (and call ``test-tool``): each request is authorized by ``auth``."""
    from answerback import Client

    async with Client(run.url, mode=run.version, auth=auth) as client:
        await client.list_tools()
        if call:
            await client.call_tool("test-tool", {})


async def oauth_login(run: Run) -> None:
    """The whole flow with a person's login: discovery, registration (a client ID
    metadata document where supported, else dynamic registration), PKCE, step-up."""
    from answerback.client import OAuth

    auth = OAuth(
        redirect_uri=REDIRECT_URI,
        authorize=follow_login,
        client_metadata_url=CLIENT_METADATA_URL,
        client_name="answerback-conformance",
    )
    await use_protected_server(run, auth)


async def oauth_pre_registered(run: Run) -> None:
    """A client registered beforehand: its id and secret come from the suite."""
    from answerback.client import OAuth

    auth = OAuth(
        redirect_uri=REDIRECT_URI,
        authorize=follow_login,
        client_id=run.context["client_id"],
        client_secret=run.context["client_secret"],
    )
    await use_protected_server(run, auth, call=False)


async def oauth_client_credentials(run: Run) -> None:
    """No person: the client authenticates as itself, with a secret or a signed JWT."""
    from answerback.client import OAuth

    auth = OAuth(
        grant="client_credentials",
        client_id=run.context["client_id"],
        client_secret=run.context.get("client_secret"),
        private_key=run.context.get("private_key_pem"),
    )
    await use_protected_server(run, auth, call=False)


async def oauth_jwt_bearer(run: Run) -> None:
    """Workload identity federation: a JWT from the workload's identity provider is
    traded for an access token (RFC 7523 JWT bearer grant)."""
    from answerback.client import OAuth

    auth = OAuth(
        grant="jwt_bearer",
        assertion=run.context["valid_jwt"],
        client_id=run.context["client_id"],
    )
    await use_protected_server(run, auth, call=False)


async def oauth_enterprise_managed(run: Run) -> None:
    """Enterprise-managed authorization (SEP-990): the enterprise identity provider
    trades the person's ID token for an identity assertion grant (RFC 8693 token
    exchange) naming the authorization server and the resource; the authorization
    server trades that for an access token (JWT bearer grant)."""
    import httpx2

    from answerback.client import OAuth

    async def identity_assertion(issuer: str, resource: str) -> str:
        form = {
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
            "audience": issuer,
            "resource": resource,
            "subject_token": run.context["idp_id_token"],
            "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
            "client_id": run.context["idp_client_id"],
        }
        async with httpx2.AsyncClient() as http:
            response = await http.post(run.context["idp_token_endpoint"], data=form)
        response.raise_for_status()
        return str(response.json()["access_token"])

    auth = OAuth(
        grant="jwt_bearer",
        assertion=identity_assertion,
        client_id=run.context["client_id"],
        client_secret=run.context["client_secret"],
        token_endpoint_auth_method="client_secret_basic",
    )
    await use_protected_server(run, auth)


AUTH_LOGIN_SCENARIOS = [
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/authorization-server-migration",
    "auth/basic-cimd",
    "auth/basic-dcr",
    "auth/dpop",
    "auth/dpop-nonce",
    "auth/iss-normalized",
    "auth/iss-not-advertised",
    "auth/iss-supported",
    "auth/iss-supported-missing",
    "auth/iss-unexpected",
    "auth/iss-wrong-issuer",
    "auth/metadata-default",
    "auth/metadata-issuer-mismatch",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/offline-access-not-supported",
    "auth/offline-access-scope",
    "auth/resource-mismatch",
    "auth/scope-from-scopes-supported",
    "auth/scope-from-www-authenticate",
    "auth/scope-omitted-when-undefined",
    "auth/scope-retry-limit",
    "auth/scope-step-up",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-none",
    "auth/token-endpoint-auth-post",
]


SCENARIOS: dict[str, Callable[[Run], Awaitable[None]]] = {
    **dict.fromkeys(AUTH_LOGIN_SCENARIOS, oauth_login),
    "auth/pre-registration": oauth_pre_registered,
    "auth/client-credentials-basic": oauth_client_credentials,
    "auth/client-credentials-jwt": oauth_client_credentials,
    "auth/wif-jwt-bearer": oauth_jwt_bearer,
    "auth/enterprise-managed-authorization": oauth_enterprise_managed,
    "initialize": initialize,
    "tools_call": tools_call,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "sse-retry": sse_retry,
    "json-schema-2020-12-preservation": json_schema_preservation,
    "request-metadata": request_metadata,
    "sep-2322-client-request-state": request_state,
    "http-standard-headers": standard_headers,
    "http-custom-headers": custom_headers,
    "http-invalid-tool-headers": invalid_tool_headers,
    "json-schema-ref-no-deref": ref_no_deref,
}


def main() -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    handler = SCENARIOS.get(scenario)
    if handler is None or len(sys.argv) < 2:
        print(f"unknown scenario {scenario!r} (usage: client.py SERVER_URL)", file=sys.stderr)
        return 2
    run = Run(
        url=sys.argv[-1],
        version=os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION", "auto"),
        context=json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}"),
    )
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")

    import anyio

    anyio.run(handler, run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
