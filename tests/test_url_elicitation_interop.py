"""answerback's client following error -32042 from the TypeScript reference server
(``@modelcontextprotocol/server-everything``, installed by ``make`` with
``npm ci --prefix interop``), over stdio and streamable HTTP.

Its ``trigger-url-elicitation`` tool with ``errorPath`` first fails with -32042 holding a
prerequisite link, and succeeds on the retry (asking for its own link on the way). It
sends no completion notification, so the client waits no time before the retry.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from http_support import (
    EVERYTHING_DIR,
    EVERYTHING_ENTRY,
    PATIENCE_SECONDS,
    free_port,
    serve_process,
)

from answerback import Client, StdioServer
from answerback.client import UrlConsent, UrlConsentRequest, UrlElicitations
from answerback.client._url_elicitation import ConsentAnswer
from answerback.types import TextContent

NODE = shutil.which("node")

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.interop,
    pytest.mark.skipif(NODE is None, reason="node is not installed"),
    pytest.mark.skipif(
        not EVERYTHING_ENTRY.exists(),
        reason=f"{EVERYTHING_DIR} is missing: run `npm ci --prefix interop` (make does)",
    ),
]

AUTH_URL = "https://example.com/authorize?client=answerback"


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    assert NODE is not None
    port = free_port()
    with serve_process(
        [NODE, str(EVERYTHING_ENTRY), "streamableHttp"], port, env={"PORT": str(port)}
    ):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(params=["stdio", "http"])
def everything(request: pytest.FixtureRequest) -> Any:
    if request.param == "stdio":
        assert NODE is not None
        return StdioServer(NODE, [str(EVERYTHING_ENTRY), "stdio"])
    return request.getfixturevalue("http_url")


async def test_a_required_link_is_consented_then_the_call_retried_once(everything: Any) -> None:
    shown: list[UrlConsentRequest] = []
    opened: list[str] = []

    async def ask(request: UrlConsentRequest) -> ConsentAnswer:
        shown.append(request)
        return "accept"

    def opener(url: str) -> bool:
        opened.append(url)
        return True

    follow = UrlElicitations(follow_required=True, completion_timeout_seconds=0)
    with anyio.fail_after(PATIENCE_SECONDS):
        async with Client(
            everything,
            mode="legacy",
            elicitation_callback=UrlConsent(ask, opener=opener),
            url_elicitations=follow,
        ) as client:
            result = await client.call_tool(
                "trigger-url-elicitation", {"url": AUTH_URL, "errorPath": True}
            )
    texts = [item.text for item in result.content if isinstance(item, TextContent)]
    assert "User completed the URL elicitation flow" in texts[0]
    prerequisite, own = shown
    assert prerequisite.verdict.display.url == "https://modelcontextprotocol.io/"
    assert prerequisite.elicitation_id
    assert prerequisite.server is not None
    assert prerequisite.server.name == "mcp-servers/everything"
    assert own.verdict.display.url == AUTH_URL
    assert opened == ["https://modelcontextprotocol.io/", AUTH_URL]
