"""What a server ported from FastMCP or the official SDK is told where its muscle memory
lands: each mistake gets an error naming answerback's way, and there is no second way.

- ``mcp.add_tool(fn)`` (and ``add_prompt``, ``add_resource``) is an ``AttributeError``
  saying to call the decorator on the function; a type checker still reports it.
- ``mcp.run(transport="http")`` says streamable HTTP is ``"streamable-http"`` here, and
  ``"sse"`` that the 2024-11-05 HTTP+SSE transport is not served.
- A tool whose output is wrapped as ``{"result": value}`` marks its schema the way
  FastMCP's client reads, so its ``.data`` is the value (see also
  ``test_interop_fastmcp_data.py``).
"""

from __future__ import annotations

import copy

import pytest
from pydantic import BaseModel

from answerback import Client
from answerback.server import MCPServer

MODES = ["legacy", "2026-07-28"]


@pytest.mark.parametrize(
    ("method", "advice"),
    [
        ("add_tool", "mcp.tool()(function)"),
        ("add_tool", "mcp.remove_tool(name) takes one away"),
        ("add_tool", "await mcp.notify_tools_changed() tells connected clients"),
        ("add_prompt", "mcp.prompt()(function)"),
        ("add_resource", "mcp.resource(uri)(function)"),
    ],
)
def test_an_add_method_names_the_decorator(method: str, advice: str) -> None:
    mcp = MCPServer("Ported")
    with pytest.raises(AttributeError) as caught:
        getattr(mcp, method)
    message = str(caught.value)
    assert message.startswith(f"'MCPServer' object has no attribute {method!r}: ")
    assert advice in message
    assert caught.value.name == method
    assert caught.value.obj is mcp


def test_another_missing_attribute_is_python_s_plain_error() -> None:
    mcp = MCPServer("Ported")
    with pytest.raises(AttributeError) as caught:
        mcp.set_state  # type: ignore[attr-defined]  # noqa: B018
    assert str(caught.value) == "'MCPServer' object has no attribute 'set_state'"
    assert not hasattr(mcp, "add_tools")


def test_an_attribute_error_inside_a_subclass_property_names_the_real_attribute() -> None:
    """Only the three ported names carry advice: a typo inside a subclass's property is
    reported as itself, not as the property missing."""

    class Sub(MCPServer):
        @property
        def banner(self) -> str:
            return self.titel  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue]

    with pytest.raises(AttributeError) as caught:
        Sub("s").banner  # noqa: B018
    assert caught.value.name == "titel"
    assert "'titel'" in str(caught.value)


def test_the_ported_names_are_no_attributes_of_the_class_or_a_copy() -> None:
    mcp = MCPServer("Ported")
    assert not hasattr(mcp, "add_tool")
    assert not hasattr(MCPServer, "add_prompt")
    with pytest.raises(AttributeError) as caught:
        MCPServer.add_resource  # type: ignore[attr-defined]  # noqa: B018
    assert str(caught.value).startswith(
        "type object 'MCPServer' has no attribute 'add_resource': "
        "register the function that reads a resource with mcp.resource(uri)(function)"
    )
    assert not hasattr(copy.copy(mcp), "add_tool")


def test_run_http_says_streamable_http() -> None:
    mcp = MCPServer("Ported")
    with pytest.raises(ValueError, match="transport must be one of") as caught:
        mcp.run(transport="http")  # type: ignore[arg-type]
    assert str(caught.value) == (
        "transport must be one of 'stdio', 'streamable-http', got 'http': answerback "
        "calls streamable HTTP 'streamable-http'; pass that."
    )


def test_run_sse_says_it_is_not_served() -> None:
    mcp = MCPServer("Ported")
    with pytest.raises(ValueError, match="transport must be one of") as caught:
        mcp.run(transport="sse")  # type: ignore[arg-type]
    message = str(caught.value)
    assert message.startswith("transport must be one of 'stdio', 'streamable-http', got 'sse': ")
    assert "does not serve the HTTP+SSE transport of protocol 2024-11-05" in message
    assert "pass 'streamable-http'" in message


def test_run_with_another_unknown_transport_lists_the_choices() -> None:
    with pytest.raises(ValueError, match="transport must be one of") as caught:
        MCPServer("Ported").run(transport="websocket")  # type: ignore[arg-type]
    assert str(caught.value) == (
        "transport must be one of 'stdio', 'streamable-http', got 'websocket'"
    )


class Confirm(BaseModel):
    ok: bool


@pytest.mark.anyio
async def test_a_wrapped_output_schema_carries_fastmcp_s_mark() -> None:
    """The mark sits at the root of a wrapped schema only: an object is sent as itself."""
    mcp = MCPServer("Marks")

    @mcp.tool()
    def count() -> int:
        return 3

    @mcp.tool()
    def confirm() -> Confirm:
        return Confirm(ok=True)

    async with Client(mcp) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        result = await client.call_tool("count")
    assert tools["count"].output_schema == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
        "x-fastmcp-wrap-result": True,
    }
    assert tools["confirm"].output_schema is not None
    assert "x-fastmcp-wrap-result" not in tools["confirm"].output_schema
    assert result.structured_content == {"result": 3}
