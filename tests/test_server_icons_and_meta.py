"""What a server advertises about itself and its definitions, beyond names.

``MCPServer(title=, description=, website_url=, icons=)`` go into the ``serverInfo``
clients are told (``initialize``, and ``server/discover`` on 2026-07-28), and
``icons=`` and ``meta=`` on ``@mcp.tool()``, ``@mcp.prompt()`` and ``@mcp.resource()``
(fixed and template) into the listed definitions, as the official SDK spells them, in
both protocol generations. Each is checked when given: icons are ``Icon`` objects or
dicts of their fields whose ``src`` is what the specification allows (an https or http
URL, or a ``data:`` URI), ``meta`` a dict of JSON values with string keys. Nothing is
sent that was not given.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from support import PATIENCE_SECONDS, REPO

from answerback import Client
from answerback.server import MCPServer
from answerback.types import Icon, Implementation

pytestmark = pytest.mark.anyio

MODES = ["legacy", "2026-07-28"]

PNG = Icon(src="https://example.com/library.png", mime_type="image/png", sizes=["48x48"])
DARK = {"src": "data:image/svg+xml;base64,PHN2Zy8+", "mimeType": "image/svg+xml", "theme": "dark"}
META = {"com.example/tier": "pro", "com.example/limits": {"calls": 3, "ratio": 0.5, "on": True}}

ICON_SRC_ADVICE = (
    "The MCP specification allows an icon's src to be an https or http URL, or a data: URI "
    "with the image in it (clients must refuse other schemes, such as javascript: or "
    "file:): pass Icon(src='https://example.com/icon.png') or "
    "Icon(src='data:image/png;base64,...')."
)
ICONS_ADVICE = (
    "Pass a list of Icon(src='https://example.com/icon.png', mime_type='image/png'), or of "
    "dicts of the same fields, or None."
)
META_ADVICE = "Pass a dict of JSON values with string keys, such as {'com.example/tier': 'pro'}."
JSON_ADVICE = "Pass JSON values only: strings, numbers, booleans, None, lists and dicts."


def decorated_server() -> MCPServer:
    """A server giving every kind of definition icons and ``_meta``, and each kind one
    definition without them."""
    mcp = MCPServer(
        "library",
        version="2.1.0",
        title="The Library",
        description="Books and loans.",
        website_url="https://example.com/library",
        icons=[PNG, DARK],
    )

    @mcp.tool(icons=[PNG], meta=META)
    def lend(book: str) -> str:
        return book

    @mcp.tool()
    def plain_tool() -> str:
        return ""

    @mcp.prompt(icons=[DARK], meta={"com.example/kind": "review"})
    def review(book: str) -> str:
        return book

    @mcp.prompt()
    def plain_prompt() -> str:
        return ""

    @mcp.resource("books://catalogue", icons=[PNG], meta={"com.example/rows": 120})
    def catalogue() -> str:
        return ""

    @mcp.resource("books://plain")
    def plain_resource() -> str:
        return ""

    @mcp.resource("books://{isbn}", icons=[DARK], meta={"com.example/key": ["isbn", 13]})
    def book(isbn: str) -> str:
        return isbn

    @mcp.resource("plain://{isbn}")
    def plain_template(isbn: str) -> str:
        return isbn

    return mcp


PNG_WIRE = {"src": "https://example.com/library.png", "mimeType": "image/png", "sizes": ["48x48"]}


@pytest.mark.parametrize("mode", MODES)
async def test_server_info_carries_the_title_description_website_and_icons(mode: str) -> None:
    async with Client(decorated_server(), mode=mode) as client:
        assert client.server_info.to_wire() == {
            "name": "library",
            "version": "2.1.0",
            "title": "The Library",
            "description": "Books and loans.",
            "websiteUrl": "https://example.com/library",
            "icons": [PNG_WIRE, DARK],
        }


@pytest.mark.parametrize("mode", MODES)
async def test_definitions_are_listed_with_their_icons_and_meta(mode: str) -> None:
    async with Client(decorated_server(), mode=mode) as client:
        tools = {tool.name: tool.to_wire() for tool in (await client.list_tools()).tools}
        prompts = {p.name: p.to_wire() for p in (await client.list_prompts()).prompts}
        resources = {r.name: r.to_wire() for r in (await client.list_resources()).resources}
        templates = (await client.list_resource_templates()).resource_templates
        by_name = {t.name: t.to_wire() for t in templates}
    assert tools["lend"]["icons"] == [PNG_WIRE]
    assert tools["lend"]["_meta"] == META
    assert prompts["review"]["icons"] == [DARK]
    assert prompts["review"]["_meta"] == {"com.example/kind": "review"}
    assert resources["catalogue"]["icons"] == [PNG_WIRE]
    assert resources["catalogue"]["_meta"] == {"com.example/rows": 120}
    assert by_name["book"]["icons"] == [DARK]
    assert by_name["book"]["_meta"] == {"com.example/key": ["isbn", 13]}
    for plain in (
        tools["plain_tool"],
        prompts["plain_prompt"],
        resources["plain_resource"],
        by_name["plain_template"],
    ):
        assert "icons" not in plain
        assert "_meta" not in plain


@pytest.mark.parametrize("mode", MODES)
async def test_a_server_given_none_of_them_introduces_itself_as_before(mode: str) -> None:
    async with Client(MCPServer("bare", version="1.0.0"), mode=mode) as client:
        assert client.server_info.to_wire() == {"name": "bare", "version": "1.0.0"}


def test_server_attributes_hold_what_was_given() -> None:
    mcp = MCPServer("library", title="The Library", website_url="http://localhost:8000/")
    assert (mcp.title, mcp.description, mcp.website_url, mcp.icons) == (
        "The Library",
        None,
        "http://localhost:8000/",
        None,
    )
    assert mcp.server_info == Implementation(
        name="library", version="0.1.0", title="The Library", website_url="http://localhost:8000/"
    )


async def test_what_was_given_is_copied_when_registered() -> None:
    """A list or dict the caller changes afterwards changes nothing listed; tuples are
    sent as lists, and an icon dict may use the Python names ``Icon`` takes."""
    icons: list[Icon | dict[str, Any]] = [{"src": "https://example.com/a.png", "mime_type": "x"}]
    meta: dict[str, Any] = {"com.example/pair": (1, 2), "com.example/inner": {"a": [1]}}
    mcp = MCPServer("copies", icons=icons)

    @mcp.tool(icons=icons, meta=meta)
    def tool() -> str:
        return ""

    icons.append(Icon(src="https://example.com/b.png"))
    meta["com.example/late"] = 1
    meta["com.example/inner"]["a"].append(2)
    async with Client(mcp) as client:
        listed = (await client.list_tools()).tools[0].to_wire()
        info = client.server_info.to_wire()
    wanted = [{"src": "https://example.com/a.png", "mimeType": "x"}]
    assert listed["icons"] == wanted
    assert info["icons"] == wanted
    assert listed["_meta"] == {"com.example/pair": [1, 2], "com.example/inner": {"a": [1]}}


@pytest.mark.parametrize(
    "src",
    [
        "https://example.com/icon.png",
        "HTTP://localhost:8000/icon.png",
        "https://user@example.com/icon.png?size=48#x",
        "data:image/png;base64,iVBORw0KGgo=",
        "data:,",
    ],
)
def test_icon_sources_the_specification_allows_are_taken(src: str) -> None:
    mcp = MCPServer("icons", icons=[Icon(src=src)])
    assert mcp.icons == [Icon(src=src)]


@pytest.mark.parametrize(
    "key",
    [
        "tier",
        "com.example/tier",
        "com.example/",
        "ui/resourceUri",
        "com.example-2.x9/a_b.c-d",
        "com.example.mcp/tools",
        "mcp/x",
        "",
    ],
)
async def test_meta_keys_the_specification_allows_are_taken(key: str) -> None:
    """The key format of the specification's "General fields": ``com.example.mcp/`` and
    a lone ``mcp/`` are not reserved (the second label is what counts), and an empty
    name is allowed."""
    mcp = MCPServer("s")

    @mcp.tool(meta={key: 1})
    def marked() -> None:
        """A tool with one ``_meta`` key."""

    async with Client(mcp) as client:
        [tool] = (await client.list_tools()).tools
    assert tool.meta == {key: 1}


# -- refusals --------------------------------------------------------------------------

Register = Callable[[dict[str, Any]], object]


def _tool(arguments: dict[str, Any]) -> object:
    return MCPServer("s").tool(**arguments)


def _prompt(arguments: dict[str, Any]) -> object:
    return MCPServer("s").prompt(**arguments)


def _resource(arguments: dict[str, Any]) -> object:
    return MCPServer("s").resource("r://x", **arguments)


def _template(arguments: dict[str, Any]) -> object:
    return MCPServer("s").resource("r://{x}", **arguments)


DECORATORS: list[tuple[str, Register]] = [
    ("mcp.tool()", _tool),
    ("mcp.prompt()", _prompt),
    ("mcp.resource()", _resource),
    ("mcp.resource()", _template),
]

ICON_REFUSALS: list[tuple[object, type[Exception], str]] = [
    ("x.png", TypeError, f"icons must be a list of Icon, not str ('x.png'). {ICONS_ADVICE}"),
    (
        PNG,
        TypeError,
        f"icons must be a list of Icon, not Icon. {ICONS_ADVICE}",
    ),
    ([3], TypeError, f"icons[0] must be an Icon or a dict, not int (3). {ICONS_ADVICE}"),
    (
        [{"src": "https://x.example/i.png", "mimetype": "image/png"}],
        ValueError,
        "icons[0] has the key 'mimetype', which is no field of an icon. An icon has src, "
        "and may have mimeType, sizes and theme.",
    ),
    (
        [PNG, {"mimeType": "image/png"}],
        ValueError,
        f"icons[1] has no 'src'. Every icon needs one: {ICONS_ADVICE}",
    ),
    (
        [Icon(src="https://x.example/i.png", colour="red")],  # pyright: ignore[reportCallIssue]
        ValueError,
        "icons[0] has the field 'colour', which an icon does not have. An icon has src, "
        "and may have mime_type, sizes and theme.",
    ),
    ([{"src": 5}], TypeError, f"icons[0].src must be a string, not int (5). {ICON_SRC_ADVICE}"),
    (
        [{"src": "javascript:alert(1)"}],
        ValueError,
        "icons[0].src is 'javascript:alert(1)', whose scheme 'javascript:' is not allowed. "
        + ICON_SRC_ADVICE,
    ),
    (
        [Icon(src="file:///etc/icon.png")],
        ValueError,
        f"icons[0].src is 'file:///etc/icon.png', whose scheme 'file:' is not allowed. "
        f"{ICON_SRC_ADVICE}",
    ),
    (
        [{"src": "ws://example.com/icon"}],
        ValueError,
        f"icons[0].src is 'ws://example.com/icon', whose scheme 'ws:' is not allowed. "
        f"{ICON_SRC_ADVICE}",
    ),
    (
        [{"src": "https:///icon.png"}],
        ValueError,
        f"icons[0].src is 'https:///icon.png', an https URL with no host. {ICON_SRC_ADVICE}",
    ),
    (
        [{"src": "http:icon.png"}],
        ValueError,
        f"icons[0].src is 'http:icon.png', an http URL with no host. {ICON_SRC_ADVICE}",
    ),
    (
        [{"src": "data:image/png;base64"}],
        ValueError,
        "icons[0].src is 'data:image/png;base64', a data: URI with no ',' before its data. "
        + ICON_SRC_ADVICE,
    ),
    (
        [{"src": "icon.png"}],
        ValueError,
        f"icons[0].src is 'icon.png', which is no absolute URI. {ICON_SRC_ADVICE}",
    ),
    (
        [{"src": "javascript:" + "x" * 100}],
        ValueError,
        "icons[0].src is 'javascript:" + "x" * 45 + "..., "  # cut to 60 characters
        f"whose scheme 'javascript:' is not allowed. {ICON_SRC_ADVICE}",
    ),
    (
        [{"src": "https://x.example/i.png", "mimeType": 1}],
        TypeError,
        "icons[0].mime_type must be a string or None, not int (1). Pass the image's MIME "
        "type, such as 'image/png'.",
    ),
    (
        [{"src": "https://x.example/i.png", "sizes": "48x48"}],
        TypeError,
        "icons[0].sizes must be a list of strings, not str ('48x48'). Pass sizes such as "
        "['48x48', '96x96'], or ['any'] for an SVG, or None.",
    ),
    (
        [{"src": "https://x.example/i.png", "sizes": [48]}],
        TypeError,
        "icons[0].sizes[0] must be a string, not int (48). Pass sizes such as "
        "['48x48', '96x96'], or ['any'] for an SVG, or None.",
    ),
    (
        [Icon(src="https://x.example/i.png", theme="sepia")],
        ValueError,
        "icons[0].theme must be 'light' or 'dark', not 'sepia'. Pass 'light' for an icon "
        "made for a light background, 'dark' for a dark one, or None for any.",
    ),
    (
        [{"src": "https://x.example/i.png", "theme": True}],
        TypeError,
        "icons[0].theme must be 'light' or 'dark', not bool (True). Pass 'light' for an icon "
        "made for a light background, 'dark' for a dark one, or None for any.",
    ),
]

META_KEY_ADVICE = (
    "A _meta key is an optional prefix of dot-separated labels ending in '/' (your own, in "
    "reverse DNS: 'com.example/'), then a name that begins and ends with a letter or digit, "
    "with letters, digits, '-', '_' and '.' between: such as 'com.example/tier'."
)
RESERVED_ADVICE = "Use a prefix of your own, in reverse DNS, such as 'com.example/'."

META_REFUSALS: list[tuple[object, type[Exception], str]] = [
    (
        {"com.example/tier": 1, "com.example/plan tier": 2},
        ValueError,
        "meta has the key 'com.example/plan tier', whose name 'plan tier' must begin and end "
        "with a letter or digit, with letters, digits, '-', '_' or '.' between. "
        f"{META_KEY_ADVICE}",
    ),
    (
        {"_private": 1},
        ValueError,
        "meta has the key '_private', whose name '_private' must begin and end with a letter "
        f"or digit, with letters, digits, '-', '_' or '.' between. {META_KEY_ADVICE}",
    ),
    (
        {"com.example/a/b": 1},
        ValueError,
        "meta has the key 'com.example/a/b', which has more than one '/' (only the prefix "
        f"ends in one). {META_KEY_ADVICE}",
    ),
    (
        {"9lives.example/x": 1},
        ValueError,
        "meta has the key '9lives.example/x', whose prefix label '9lives' must begin with a "
        f"letter and end with a letter or digit, with letters, digits or '-' between. "
        f"{META_KEY_ADVICE}",
    ),
    (
        {"com..example/x": 1},
        ValueError,
        "meta has the key 'com..example/x', whose prefix 'com..example/' has an empty label "
        f"(a label is what stands between its dots). {META_KEY_ADVICE}",
    ),
    (
        {"/x": 1},
        ValueError,
        "meta has the key '/x', whose prefix '/' has an empty label (a label is what stands "
        f"between its dots). {META_KEY_ADVICE}",
    ),
    (
        {"io.modelcontextprotocol/related-task": {}},
        ValueError,
        "meta has the key 'io.modelcontextprotocol/related-task', whose prefix "
        "'io.modelcontextprotocol/' the MCP specification reserves for MCP itself (its "
        f"second label is 'modelcontextprotocol'). {RESERVED_ADVICE}",
    ),
    (
        {"dev.MCP.tools/x": 1},
        ValueError,
        "meta has the key 'dev.MCP.tools/x', whose prefix 'dev.MCP.tools/' the MCP "
        f"specification reserves for MCP itself (its second label is 'MCP'). {RESERVED_ADVICE}",
    ),
    ("x", TypeError, f"meta must be a dict, not str ('x'). {META_ADVICE}"),
    ([("k", 1)], TypeError, f"meta must be a dict, not list ([('k', 1)]). {META_ADVICE}"),
    ({1: "x"}, TypeError, f"the key 1 in meta must be a string, not int (1). {META_ADVICE}"),
    (
        {"com.example/when": {1}},
        TypeError,
        f"meta['com.example/when'] must be a JSON value, not set ({{1}}). {JSON_ADVICE}",
    ),
    (
        {"a": {"b": [1, b"raw"]}},
        TypeError,
        f"meta['a']['b'][1] must be a JSON value, not bytes (b'raw'). {JSON_ADVICE}",
    ),
    (
        {"a": {2: "x"}},
        TypeError,
        f"the key 2 in meta['a'] must be a string, not int (2). {META_ADVICE}",
    ),
    (
        {"ratio": float("nan")},
        ValueError,
        "meta['ratio'] is nan, which JSON cannot carry. Pass a finite number.",
    ),
    (
        {"ratio": [float("-inf")]},
        ValueError,
        "meta['ratio'][0] is -inf, which JSON cannot carry. Pass a finite number.",
    ),
]


@pytest.mark.parametrize(("call", "register"), DECORATORS)
@pytest.mark.parametrize(("icons", "error", "message"), ICON_REFUSALS)
def test_decorators_refuse_icons_they_cannot_send(
    call: str, register: Register, icons: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as raised:
        register({"icons": icons})
    assert str(raised.value) == f"Invalid argument for {call}: {message}"


@pytest.mark.parametrize(("call", "register"), DECORATORS)
@pytest.mark.parametrize(("meta", "error", "message"), META_REFUSALS)
def test_decorators_refuse_meta_json_cannot_carry(
    call: str, register: Register, meta: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as raised:
        register({"meta": meta})
    assert str(raised.value) == f"Invalid argument for {call}: {message}"


@pytest.mark.parametrize(("icons", "error", "message"), ICON_REFUSALS)
def test_the_server_refuses_icons_it_cannot_send(
    icons: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as raised:
        MCPServer("s", icons=icons)  # type: ignore[arg-type]
    assert str(raised.value) == f"Invalid argument for MCPServer(): {message}"


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        (
            {"title": 3},
            TypeError,
            "title must be a string (the server's name for people) or None, got 3",
        ),
        (
            {"description": ["Books"]},
            TypeError,
            "description must be a string (what the server does, for people) or None, "
            "got ['Books']",
        ),
        (
            {"website_url": 8000},
            TypeError,
            "website_url must be a string, the http(s) URL of the server's website, such as "
            "'https://example.com/...', got 8000",
        ),
        (
            {"website_url": "example.com"},
            ValueError,
            "website_url must be the absolute http(s) URL of the server's website, such as "
            "'https://example.com/...', got 'example.com'",
        ),
        (
            {"website_url": "javascript:alert(1)"},
            ValueError,
            "website_url must be the absolute http(s) URL of the server's website, such as "
            "'https://example.com/...', got 'javascript:alert(1)'",
        ),
    ],
)
def test_the_server_refuses_labels_of_the_wrong_kind(
    arguments: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as raised:
        MCPServer("s", **arguments)
    assert str(raised.value) == message


def test_a_refused_registration_registers_nothing() -> None:
    mcp = MCPServer("s")
    with pytest.raises(ValueError, match="javascript"):

        @mcp.tool(icons=[{"src": "javascript:alert(1)"}])
        def tool() -> str:  # pyright: ignore[reportUnusedFunction]
            return ""

    assert mcp.capabilities.tools is None


# -- the official SDK's client -----------------------------------------------------------

_STDIO_SERVER = """
from answerback.server import MCPServer
from answerback.types import Icon

mcp = MCPServer(
    "library",
    version="2.1.0",
    title="The Library",
    description="Books and loans.",
    website_url="https://example.com/library",
    icons=[Icon(src="https://example.com/library.png", mime_type="image/png")],
)


@mcp.tool(icons=[{"src": "data:image/png;base64,AA==", "theme": "dark"}], meta={"k": [1]})
def lend(book: str) -> str:
    return book


@mcp.prompt(icons=[Icon(src="https://example.com/p.png")], meta={"k": "p"})
def review(book: str) -> str:
    return book


@mcp.resource("books://catalogue", icons=[Icon(src="https://example.com/r.png")], meta={"k": 1})
def catalogue() -> str:
    return ""


@mcp.resource("books://{isbn}", icons=[Icon(src="https://example.com/t.png")], meta={"k": 2})
def book(isbn: str) -> str:
    return isbn


mcp.run()
"""


@pytest.mark.interop
@pytest.mark.parametrize(("mode", "version"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
async def test_the_official_sdk_client_sees_them(mode: str, version: str) -> None:
    """The official SDK's client, over stdio, reads the same fields into its own models
    (in ``auto`` mode, which reads ``serverInfo`` from ``server/discover``: pinned to a
    version, it adopts that version without asking the server anything)."""
    from mcp import Client as OfficialClient
    from mcp import StdioServerParameters

    server = StdioServerParameters(
        command=sys.executable, args=["-c", _STDIO_SERVER], cwd=str(REPO)
    )
    with anyio.fail_after(PATIENCE_SECONDS * 3):
        async with OfficialClient(server, mode=mode) as client:  # type: ignore[arg-type]
            info = client.server_info
            assert client.protocol_version == version
            tool = (await client.list_tools()).tools[0]
            prompt = (await client.list_prompts()).prompts[0]
            resource = (await client.list_resources()).resources[0]
            template = (await client.list_resource_templates()).resource_templates[0]
    assert info is not None
    assert (info.name, info.version, info.title, info.description, info.website_url) == (
        "library",
        "2.1.0",
        "The Library",
        "Books and loans.",
        "https://example.com/library",
    )
    assert [(icon.src, icon.mime_type) for icon in info.icons or []] == [
        ("https://example.com/library.png", "image/png")
    ]
    assert [(icon.src, icon.theme) for icon in tool.icons or []] == [
        ("data:image/png;base64,AA==", "dark")
    ]
    assert tool.meta == {"k": [1]}
    assert [icon.src for icon in prompt.icons or []] == ["https://example.com/p.png"]
    assert prompt.meta == {"k": "p"}
    assert [icon.src for icon in resource.icons or []] == ["https://example.com/r.png"]
    assert resource.meta == {"k": 1}
    assert [icon.src for icon in template.icons or []] == ["https://example.com/t.png"]
    assert template.meta == {"k": 2}
