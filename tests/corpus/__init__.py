"""The hostile-input corpus: hundreds of malformed messages, generated from short tables.

Each ``Case`` is the exact bytes a peer sends, the era it belongs to, and what a correct
server does with it: which outcomes are acceptable (a JSON-RPC error code, a normal
result, a tool error result, or no answer at all) and which id the answer must carry.
Where the specifications leave a choice (JSON-RPC does not say whether ``"params": 42``
is an invalid request or invalid params), every reasonable answer is accepted; where
they do not, only the one answer is.

The tables are grouped as a reader would check them: bytes that are not JSON, JSON that
is not a message, envelopes with a bad member, every method with badly typed params,
2026-07-28 ``_meta`` that is wrong, answers and notifications nobody asked for, and odd
but valid messages that must be served normally.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, Final, Literal

Era = Literal["legacy", "modern"]
LEGACY: Final = "legacy"
MODERN: Final = "modern"
ERAS: tuple[Era, ...] = (LEGACY, MODERN)

# Outcomes besides an error code.
RESULT: Final = "result"
TOOL_ERROR: Final = "tool error"  # a result with isError: true
NOTHING: Final = "nothing"  # no answer (stdio: none; HTTP: 202 Accepted)
Outcome = int | str

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
RESOURCE_NOT_FOUND = -32002
HEADER_MISMATCH = -32020
UNSUPPORTED_VERSION = -32022

MODERN_VERSION = "2026-07-28"
PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"
MODERN_META: dict[str, Any] = {
    PROTOCOL_VERSION_KEY: MODERN_VERSION,
    CAPABILITIES_KEY: {},
    CLIENT_INFO_KEY: {"name": "corpus", "version": "0"},
}
INITIALIZE_PARAMS: dict[str, Any] = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "corpus", "version": "0"},
}


@dataclass(frozen=True, slots=True)
class Case:
    """One hostile message and what a correct server does with it."""

    name: str
    era: Era
    body: bytes
    expected: frozenset[Outcome]
    answer_id: object = None
    """The id the answer must carry: the request's own, or ``None`` (JSON null) when the
    message has none a server could use."""


def dumps(message: Any) -> bytes:
    """Compact JSON, non-ASCII kept as is (the corpus chooses its own escapes)."""
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()


class _Ids:
    """Fresh request ids, so that a stray answer names the case that caused it."""

    def __init__(self) -> None:
        self._next = 1000

    def __call__(self) -> int:
        self._next += 1
        return self._next


def request(
    era: Era, request_id: object, method: object, params: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A request as a client of ``era`` sends it (2026-07-28: with its ``_meta``)."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if era == MODERN:
        params = {**(params or {}), "_meta": {**MODERN_META, **(params or {}).get("_meta", {})}}
    if params is not None:
        message["params"] = params
    return message


def probe(era: Era, request_id: int) -> dict[str, Any]:
    """The valid call sent after every case: it must succeed and echo its text."""
    params = {"name": "echo", "arguments": {"text": f"probe {request_id}"}}
    return request(era, request_id, "tools/call", params)


def _case(
    name: str,
    era: Era,
    body: bytes | dict[str, Any],
    expected: Outcome | AbstractSet[Outcome],
    answer_id: object = None,
) -> Case:
    outcomes = expected if isinstance(expected, AbstractSet) else {expected}
    data = body if isinstance(body, bytes) else dumps(body)
    return Case(f"{era}: {name}", era, data, frozenset(outcomes), answer_id)


# -- bytes that are not JSON ---------------------------------------------------------------

_VALID = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}'
_TRAILING = [b"x", b"}", b"]", b",", b"{}", b" {}", b'{"jsonrpc":"2.0"}', b"\x00", b"null", b";"]
_NOT_JSON = [
    b"hello",
    b"}",
    b"[",
    b'{"a"}',
    b'{"a":}',
    b"{'jsonrpc':'2.0','id':1,'method':'tools/list'}",
    b'{jsonrpc:"2.0",id:1,method:"tools/list"}',
    b'{"jsonrpc":"2.0","id":[1,],"method":"tools/list"}',
    b'{"jsonrpc":"2.0","id":01,"method":"tools/list"}',
    b'{"jsonrpc":"2.0","id":0x10,"method":"tools/list"}',
    b'{"jsonrpc":"2.0","id":+1,"method":"tools/list"}',
    b'{"jsonrpc":"2.0","id":.5,"method":"tools/list"}',
    b'{"jsonrpc":"2.0","id":1.,"method":"tools/list"}',
    b'{"jsonrpc":"2.0","id":1e,"method":"tools/list"}',
    b'{"jsonrpc":"2.0","id":-,"method":"tools/list"}',
    b'{"jsonrpc":"2.0","id":tru,"method":"tools/list"}',
    b'{"jsonrpc":"2.0","id":True,"method":"tools/list"}',
    b'{"jsonrpc":"2.0","id":None,"method":"tools/list"}',
    b'{"jsonrpc":"2.0","id":undefined,"method":"tools/list"}',
    b'{"jsonrpc":"2.0","id":1 "method":"tools/list"}',
    b'{"jsonrpc":"2.0","id":1,,"method":"tools/list"}',
    b'{"jsonrpc":"2.0" "id":1}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/list\x01"}',  # raw control character
    b'{"jsonrpc":"2.0","id":1,"method":"tools/list\t"}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools\\/list\\x41"}',  # no \x escape in JSON
    b'{"jsonrpc":"2.0","id":1,"method":"\\u12"}',
    b'{"jsonrpc":"2.0","id":1,"method":"\\uZZZZ"}',
    b'{"jsonrpc":"2.0","id":1,"method":"\\q"}',
    b'{"jsonrpc":"2.0","id":1,"method":"unterminated}',
    b'/* comment */ {"jsonrpc":"2.0","id":1,"method":"tools/list"}',
    b'// comment {"jsonrpc":"2.0","id":1,"method":"tools/list"}',
    b'\xef\xbb\xbf\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"method":"tools/list"}',  # two marks
    b'\x00{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
    b"\x1b[31m red \x1b[0m",
    b"Content-Length: 52",
    b"GET / HTTP/1.1",
]
_NON_NUMBERS = [b"NaN", b"Infinity", b"-Infinity", b"+Infinity", b"nan", b"inf", b"-inf"]
_BAD_UTF8 = [
    b"\xff",
    b"\xfe\xff",
    b"\xc3\x28",  # a lead byte without its continuation
    b"\xc0\xaf",  # an overlong encoding of "/"
    b"\xed\xa0\x80",  # a surrogate, encoded
    b"\xf8\x88\x80\x80\x80",  # five bytes: no such thing
    b"\xe2\x82",  # cut short
    b"\x80",  # a continuation byte alone
]
_LONE_SURROGATES = [
    b"\\ud800",
    b"\\udc00",
    b"\\udbff",
    b"\\ud800x",
    b"\\ud800\\u0041",
    b"\\udc00\\ud800",
    b"\\ud800\\ud800",
]


_NAMED = len(b'{"jsonrpc":"2.0","id":1,"method":"tools/list",')
"""Where ``_VALID``'s leading members end: bytes that break only after them still say
they are request 1, and its parse error names that id (the caller's request fails
instead of waiting); bytes that break sooner get a parse error with a null id."""


def _not_json(era: Era) -> Iterator[Case]:
    for cut in range(1, len(_VALID), 3):
        named = 1 if cut >= _NAMED else None
        yield _case(f"truncated after {cut} bytes", era, _VALID[:cut], PARSE_ERROR, named)
    for suffix in _TRAILING:
        yield _case(f"trailing {suffix!r}", era, _VALID + suffix, PARSE_ERROR, 1)
    for index, text in enumerate(_NOT_JSON):
        yield _case(f"not JSON #{index}: {text[:40]!r}", era, text, PARSE_ERROR)
    trailing_comma = b'{"jsonrpc":"2.0","id":1,"method":"tools/list",}'
    yield _case("a comma after the last member", era, trailing_comma, PARSE_ERROR, 1)
    for word in _NON_NUMBERS:
        yield _case(
            f"{word.decode()} as the id",
            era,
            b'{"jsonrpc":"2.0","id":' + word + b',"method":"tools/list"}',
            PARSE_ERROR,
        )
        yield _case(
            f"{word.decode()} in params",
            era,
            b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":' + word + b"}}",
            PARSE_ERROR,
            1,
        )
    for raw in _BAD_UTF8:
        for where, template, named in (
            ("method", b'{"jsonrpc":"2.0","id":1,"method":"tools/list%s"}', None),
            ("params", b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"%s"}}', 1),
            ("a key", b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"%s":1}}', 1),
        ):
            yield _case(
                f"invalid UTF-8 {raw!r} in {where}", era, template % raw, PARSE_ERROR, named
            )
    for escape in _LONE_SURROGATES:
        for where, template, named in (
            ("method", b'{"jsonrpc":"2.0","id":1,"method":"tools/list%s"}', None),
            ("the id", b'{"jsonrpc":"2.0","id":"a%s","method":"tools/list"}', None),
            ("params", b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"%s"}}', 1),
        ):
            yield _case(
                f"lone surrogate {escape.decode()} in {where}",
                era,
                template % escape,
                PARSE_ERROR,
                named,
            )
    for depth, opening, closing in ((300, b"[", b"]"), (5000, b"[", b"]"), (300, b'{"a":', b"}")):
        nested = opening * depth + b"1" + closing * depth
        yield _case(
            f"nested {depth} deep in {opening.decode()}",
            era,
            b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":' + nested + b"}}",
            PARSE_ERROR,
            1,
        )


# -- JSON that is not a message ------------------------------------------------------------

_NOT_MESSAGES: list[tuple[str, bytes]] = [
    ("an empty array", b"[]"),
    ("a batch of one", b"[" + _VALID + b"]"),
    ("a batch of two", b"[" + _VALID + b"," + _VALID + b"]"),
    ("an array of numbers", b"[1,2,3]"),
    ("a string", b'"tools/list"'),
    ("a number", b"42"),
    ("a negative number", b"-1"),
    ("a fraction", b"3.5"),
    ("true", b"true"),
    ("false", b"false"),
    ("null", b"null"),
    ("an empty object", b"{}"),
    ("an object of nothing known", b'{"hello":"world"}'),
    ("only jsonrpc", b'{"jsonrpc":"2.0"}'),
    ("only params", b'{"jsonrpc":"2.0","params":{}}'),
]


def _not_messages(era: Era) -> Iterator[Case]:
    for name, body in _NOT_MESSAGES:
        yield _case(name, era, body, INVALID_REQUEST)


# -- envelopes with one bad member ---------------------------------------------------------

_BAD_JSONRPC: list[object] = ["1.0", "2", "2.00", " 2.0", "", 2.0, 2, None, True, [], {}]
_BAD_IDS: list[tuple[str, object]] = [
    ("true", True),
    ("false", False),
    ("null", None),
    ("a fraction", 1.5),
    ("a negative fraction", -0.5),
    ("an empty array", []),
    ("an array", [1]),
    ("an empty object", {}),
    ("an object", {"id": 1}),
]
_BAD_METHOD_TYPES: list[object] = [42, None, True, [], ["tools/list"], {}, {"name": "tools/list"}]
_UNKNOWN_METHODS = [
    "tools/nope",
    "TOOLS/LIST",
    "tools/list ",
    " tools/list",
    "tools//list",
    "tools",
    "/tools/list",
    "rpc.discover",
    "notifications/initialized",
    "notifications/cancelled",
    "sampling/createMessage",
    "elicitation/create",
    "roots/list",
    "tools/list\u0000",
    "méthode/inconnue",
    "x" * 10_000,
]
_PARAMS_NOT_OBJECTS: list[object] = [[], [1, 2], "params", 42, True]


def _envelopes(era: Era, ids: _Ids) -> Iterator[Case]:
    for value in _BAD_JSONRPC:
        message = request(era, request_id := ids(), "tools/list")
        message["jsonrpc"] = value
        yield _case(f"jsonrpc {value!r}", era, message, INVALID_REQUEST, request_id)
    message = request(era, request_id := ids(), "tools/list")
    del message["jsonrpc"]
    yield _case("no jsonrpc member", era, message, INVALID_REQUEST, request_id)
    for name, value in _BAD_IDS:
        yield _case(f"id {name}", era, request(era, value, "tools/list"), INVALID_REQUEST)
    yield _case(
        "id 1e999 (a float beyond range)",
        era,
        b'{"jsonrpc":"2.0","id":1e999,"method":"tools/list"}',
        {INVALID_REQUEST, PARSE_ERROR},
    )
    message = request(era, request_id := ids(), "tools/list")
    del message["method"]
    yield _case("no method", era, message, INVALID_REQUEST, request_id)
    for value in _BAD_METHOD_TYPES:
        message = request(era, request_id := ids(), value)
        yield _case(f"method {value!r}", era, message, INVALID_REQUEST, request_id)
    for method in _UNKNOWN_METHODS:
        message = request(era, request_id := ids(), method)
        yield _case(f"method {method[:30]!r}", era, message, METHOD_NOT_FOUND, request_id)
    # An empty method is a string that names nothing, or no method at all: either answer.
    message = request(era, request_id := ids(), "")
    yield _case("method ''", era, message, {METHOD_NOT_FOUND, INVALID_REQUEST}, request_id)
    for value in _PARAMS_NOT_OBJECTS:
        request_id = ids()
        message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/list", "params": value}
        yield _case(
            f"params {value!r}", era, message, {INVALID_PARAMS, INVALID_REQUEST}, request_id
        )
    # ``"params": null`` is not structured, but is read as absent by lenient servers;
    # a 2026-07-28 request without params has no _meta, so it is refused either way.
    request_id = ids()
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/list", "params": None}
    null_params: set[Outcome] = {INVALID_PARAMS, INVALID_REQUEST}
    if era == LEGACY:
        null_params.add(RESULT)
    yield _case("params null", era, message, null_params, request_id)


# -- every method with badly typed params --------------------------------------------------

_CURSORS: list[object] = [42, [], {}, True, "not-a-cursor", "%%%"]


@dataclass(frozen=True, slots=True)
class _Method:
    """A method, valid params for it, and the bad values each field is tried with."""

    method: str
    params: dict[str, Any]
    bad: dict[str, list[object]]
    eras: tuple[Era, ...] = ERAS
    required: tuple[str, ...] = ()


_MISSING = object()  # a field left out altogether

_METHODS = [
    _Method(
        "initialize",
        INITIALIZE_PARAMS,
        {
            "protocolVersion": [42, None, [], {}, _MISSING],
            "capabilities": ["all", [], 42, None, _MISSING, {"roots": "yes please"}],
            "clientInfo": ["me", [], {}, {"name": 42, "version": "1"}, {"version": "1"}, None],
        },
        eras=(LEGACY,),
    ),
    _Method("tools/list", {}, {"cursor": _CURSORS}),
    _Method(
        "tools/call",
        {"name": "echo", "arguments": {"text": "hi"}},
        {
            "name": [42, None, [], {}, True, "no-such-tool", "", _MISSING],
            "arguments": ["text=hi", [], ["hi"], 42, True],
        },
    ),
    _Method("prompts/list", {}, {"cursor": _CURSORS}),
    _Method(
        "prompts/get",
        {"name": "greeting", "arguments": {"name": "Ada"}},
        {
            "name": [42, None, [], {}, "no-such-prompt", _MISSING],
            "arguments": ["name=Ada", [], 42, {"name": 42}, {"name": None}, {"name": ["Ada"]}],
        },
    ),
    _Method("resources/list", {}, {"cursor": _CURSORS}),
    _Method("resources/templates/list", {}, {"cursor": _CURSORS}),
    _Method(
        "resources/read",
        {"uri": "notes://readme"},
        {"uri": [42, None, [], {}, True, _MISSING]},
    ),
    _Method(
        "resources/subscribe",
        {"uri": "notes://readme"},
        {"uri": [42, None, [], {}, _MISSING]},
        eras=(LEGACY,),
    ),
    _Method(
        "resources/unsubscribe",
        {"uri": "notes://readme"},
        {"uri": [42, None, [], {}, _MISSING]},
        eras=(LEGACY,),
    ),
    _Method(
        "completion/complete",
        {
            "ref": {"type": "ref/prompt", "name": "greeting"},
            "argument": {"name": "name", "value": "A"},
        },
        {
            "ref": [
                "greeting",
                42,
                None,
                {},
                {"type": "ref/nope", "name": "greeting"},
                {"type": "ref/prompt"},
                {"type": "ref/resource"},
                {"type": 42, "name": "greeting"},
                _MISSING,
            ],
            "argument": [
                "name",
                42,
                None,
                {},
                {"name": 1, "value": "A"},
                {"name": "name", "value": 1},
                {"name": "name"},
                _MISSING,
            ],
            "context": ["ctx", 42, [], {"arguments": "name=Ada"}, {"arguments": {"name": 1}}],
        },
    ),
    _Method(
        "logging/setLevel",
        {"level": "info"},
        {"level": [42, None, "loud", "INFO", "", [], {}, _MISSING]},
        eras=(LEGACY,),
    ),
    _Method(
        "subscriptions/listen",
        {"notifications": {"toolsListChanged": True}},
        {
            "notifications": [
                "tools",
                42,
                [],
                ["toolsListChanged"],
                None,
                {"toolsListChanged": "maybe"},
                {"resourceSubscriptions": "notes://readme"},
                _MISSING,
            ]
        },
        eras=(MODERN,),
    ),
]

# Methods that exist, but not in this era.
_WRONG_ERA: dict[Era, dict[str, dict[str, Any]]] = {
    LEGACY: {"subscriptions/listen": {"notifications": {"toolsListChanged": True}}},
    MODERN: {
        "initialize": INITIALIZE_PARAMS,
        "logging/setLevel": {"level": "info"},
        "resources/subscribe": {"uri": "notes://readme"},
        "resources/unsubscribe": {"uri": "notes://readme"},
    },
}


def _methods(era: Era, ids: _Ids) -> Iterator[Case]:
    for spec in _METHODS:
        if era not in spec.eras:
            continue
        for field, values in spec.bad.items():
            for value in values:
                params = dict(spec.params)
                if value is _MISSING:
                    del params[field]
                    what = f"{spec.method} without {field}"
                else:
                    params[field] = value
                    what = f"{spec.method} {field}={value!r}"
                expected: set[Outcome] = {INVALID_PARAMS}
                if spec.method == "initialize":  # a second initialize may be refused as such
                    expected.add(INVALID_REQUEST)
                message = request(era, request_id := ids(), spec.method, params)
                yield _case(what, era, message, expected, request_id)
    # Valid shapes that name nothing the server has.
    not_found = RESOURCE_NOT_FOUND if era == LEGACY else INVALID_PARAMS
    for uri in ("nowhere://x", "notes:/", "", "notes://readme/../../etc/passwd?x"):
        message = request(era, request_id := ids(), "resources/read", {"uri": uri})
        # "notes://{name}" matches any single segment; these do not name one.
        expected = {not_found, INVALID_PARAMS}
        yield _case(f"resources/read {uri!r}", era, message, expected, request_id)
    for arguments in ({"text": 42}, {"text": None}, {}, {"text": ["hi"]}, {"words": "hi"}):
        params = {"name": "echo", "arguments": arguments}
        message = request(era, request_id := ids(), "tools/call", params)
        # The spec (2025-11-25 on) wants bad tool arguments as a tool error the model
        # can read; a protocol error is what older servers send.
        yield _case(
            f"tools/call echo {arguments!r}", era, message, {TOOL_ERROR, INVALID_PARAMS}, request_id
        )
    for method, params in _WRONG_ERA[era].items():
        message = request(era, request_id := ids(), method, params)
        yield _case(f"{method} (other era)", era, message, METHOD_NOT_FOUND, request_id)


# -- 2026-07-28 requests with a bad _meta --------------------------------------------------

_META_REPLACEMENTS: list[object] = ["meta", [], 42, True, None, {}]
_META_MEMBERS: dict[str, tuple[list[object], set[Outcome]]] = {
    # A version that is no string or no 2026 version is refused as unsupported (the
    # spec's answer for a version it cannot serve) or as invalid params.
    PROTOCOL_VERSION_KEY: (
        [42, None, [], {}, True, "", "2099-01-01", "2025-11-25", "2026-07-28 ", "2026-7-28"],
        {UNSUPPORTED_VERSION, INVALID_PARAMS},
    ),
    CAPABILITIES_KEY: (
        ["all", [], 42, None, True, {"elicitation": "yes"}, {"sampling": []}],
        {INVALID_PARAMS},
    ),
    CLIENT_INFO_KEY: (
        ["me", [], 42, True, {"name": 42, "version": "1"}, {"version": "1"}],
        {INVALID_PARAMS},
    ),
    LOG_LEVEL_KEY: (["loud", "INFO", 42, [], {}], {INVALID_PARAMS}),
}
_META_METHODS: dict[str, dict[str, Any]] = {
    "server/discover": {},
    "tools/list": {},
    "tools/call": {"name": "echo", "arguments": {"text": "hi"}},
    "resources/read": {"uri": "notes://readme"},
}


def _modern_meta(ids: _Ids) -> Iterator[Case]:
    era: Era = MODERN
    for method, params in _META_METHODS.items():
        for value in _META_REPLACEMENTS:
            message = {
                "jsonrpc": "2.0",
                "id": (request_id := ids()),
                "method": method,
                "params": {**params, "_meta": value},
            }
            # Without a protocol version in _meta the request is not a 2026 one: a
            # connection without a handshake refuses it as invalid or as missing _meta.
            yield _case(
                f"{method} _meta={value!r}",
                era,
                message,
                {INVALID_PARAMS, INVALID_REQUEST},
                request_id,
            )
        for key, (values, expected) in _META_MEMBERS.items():
            for value in [*values, _MISSING] if key in MODERN_META else values:
                meta = dict(MODERN_META)
                if value is _MISSING:
                    del meta[key]
                    what = f"{method} _meta without {key.rsplit('/', 1)[1]}"
                else:
                    meta[key] = value
                    what = f"{method} _meta {key.rsplit('/', 1)[1]}={value!r}"
                outcome: set[Outcome] = set(expected)
                if value is _MISSING and key == PROTOCOL_VERSION_KEY:
                    outcome = {INVALID_PARAMS, INVALID_REQUEST}
                elif value is _MISSING and key == CLIENT_INFO_KEY:
                    outcome = {RESULT}  # optional
                message = {
                    "jsonrpc": "2.0",
                    "id": (request_id := ids()),
                    "method": method,
                    "params": {**params, "_meta": meta},
                }
                yield _case(what, era, message, outcome, request_id)


# -- answers and notifications nobody asked for --------------------------------------------

_STRAY_ANSWERS: list[tuple[str, dict[str, Any]]] = [
    ("a result for an unknown id", {"jsonrpc": "2.0", "id": 424242, "result": {}}),
    ("a string-id result", {"jsonrpc": "2.0", "id": "never-sent", "result": {"x": 1}}),
    (
        "an error for an unknown id",
        {"jsonrpc": "2.0", "id": 424243, "error": {"code": -1, "message": "no"}},
    ),
]
# Answers that are not valid responses either: ignoring them and refusing them as
# invalid (with their id if they have a usable one) are both right.
_MALFORMED_ANSWERS: list[tuple[str, dict[str, Any]]] = [
    ("a result with id null", {"jsonrpc": "2.0", "id": None, "result": {}}),
    ("a result with id true", {"jsonrpc": "2.0", "id": True, "result": {}}),
    ("a result with an array id", {"jsonrpc": "2.0", "id": [1], "result": {}}),
    (
        "both result and error",
        {"jsonrpc": "2.0", "id": 424244, "result": {}, "error": {"code": 1, "message": "x"}},
    ),
    ("a malformed error", {"jsonrpc": "2.0", "id": 424245, "error": {"code": "x"}}),
    ("an error that is a string", {"jsonrpc": "2.0", "id": 424246, "error": "bad"}),
    ("a result that is a string", {"jsonrpc": "2.0", "id": 424247, "result": "done"}),
    ("a result without id", {"jsonrpc": "2.0", "result": {}}),
]
_NOTIFICATIONS: list[tuple[str, object]] = [
    ("notifications/cancelled", {}),
    ("notifications/cancelled", {"requestId": {}}),
    ("notifications/cancelled", {"requestId": 99999, "reason": 42}),
    ("notifications/cancelled", {"requestId": None}),
    ("notifications/cancelled", {"requestId": [1]}),
    ("notifications/cancelled", {"requestId": True}),
    ("notifications/progress", {}),
    ("notifications/progress", {"progressToken": {}, "progress": "half"}),
    ("notifications/progress", {"progressToken": 99999, "progress": 1, "total": "many"}),
    ("notifications/initialized", {"x": [1, 2, 3]}),
    ("notifications/roots/list_changed", {"roots": "all of them"}),
    ("notifications/message", {"level": "loud", "data": None}),
    ("notifications/tools/list_changed", {}),
    ("notifications/nope", {"x": 1}),
    ("notifications/nope", None),
    ("x" * 10_000, {}),
]
_NOTIFICATION_PARAMS_NOT_OBJECTS: list[object] = [[], [1], "params", 42, True]
_INVALID_NOTIFICATIONS: list[tuple[str, dict[str, Any]]] = [
    ("method 42 without id", {"jsonrpc": "2.0", "method": 42}),
    ("method null without id", {"jsonrpc": "2.0", "method": None}),
    ("method [] without id", {"jsonrpc": "2.0", "method": []}),
    ("jsonrpc 1.0 notification", {"jsonrpc": "1.0", "method": "notifications/initialized"}),
    ("notification without jsonrpc", {"method": "notifications/initialized"}),
]


def _unasked(era: Era) -> Iterator[Case]:
    for name, message in _STRAY_ANSWERS:
        yield _case(name, era, message, NOTHING, message["id"])
    for name, message in _MALFORMED_ANSWERS:
        answer_id = message.get("id")
        usable = isinstance(answer_id, int | str) and not isinstance(answer_id, bool)
        yield _case(name, era, message, {NOTHING, INVALID_REQUEST}, answer_id if usable else None)
    for method, params in _NOTIFICATIONS:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        yield _case(f"notification {method[:30]!r} {params!r}", era, message, NOTHING)
    for value in _NOTIFICATION_PARAMS_NOT_OBJECTS:
        message = {"jsonrpc": "2.0", "method": "notifications/initialized", "params": value}
        # Not a valid JSON-RPC notification: it may be refused (id null) or ignored.
        yield _case(
            f"notification params {value!r}",
            era,
            message,
            {NOTHING, INVALID_REQUEST, INVALID_PARAMS},
        )
    for name, message in _INVALID_NOTIFICATIONS:
        yield _case(name, era, message, INVALID_REQUEST)
    empty: dict[str, Any] = {"jsonrpc": "2.0", "method": "", "params": {}}
    yield _case("notification with method ''", era, empty, {NOTHING, INVALID_REQUEST})


# -- odd but valid: served normally --------------------------------------------------------

_ODD_IDS: list[object] = [
    0,
    -1,
    2**53 + 1,
    2**64,
    10**30,
    -(10**30),
    "",
    " ",
    "x" * 1000,
    "é✓😀",
    "\u0000",
    "\n",
    "1",
    "null",
]


def _odd_but_valid(era: Era) -> Iterator[Case]:
    for request_id in _ODD_IDS:
        message = request(era, request_id, "tools/list")
        yield _case(f"id {request_id!r:.40}", era, message, RESULT, request_id)
    base = request(era, 77_001, "tools/list")
    yield _case("an unknown member", era, {**base, "extra": {"x": 1}}, RESULT, 77_001)
    yield _case(
        "unknown params members",
        era,
        request(era, 77_002, "tools/list", {"later": [1, 2, 3], "n": 1e300}),
        RESULT,
        77_002,
    )
    yield _case(
        "params 150 deep",
        era,
        request(era, 77_003, "tools/list", {"deep": json.loads("[" * 150 + "]" * 150)}),
        RESULT,
        77_003,
    )
    text = dumps(request(era, 77_004, "tools/list"))
    yield _case("spaces around", era, b"  \t " + text + b" \t ", RESULT, 77_004)
    marked = codecs.BOM_UTF8 + dumps(request(era, 77_008, "tools/list"))
    yield _case("a byte order mark before it (RFC 8259 8.1)", era, marked, RESULT, 77_008)
    escaped = dumps(request(era, 77_005, "tools/list")).replace(
        b"tools/list", b"\\u0074ools\\/list"
    )
    yield _case("escapes in the method", era, escaped, RESULT, 77_005)
    duplicate = dumps(request(era, 77_006, "tools/list")).replace(
        b'"method":', b'"method":"tools/nope","method":'
    )
    yield _case("a duplicate key (the last counts)", era, duplicate, RESULT, 77_006)
    yield _case(
        "a call echoing every kind of character",
        era,
        request(
            era,
            77_007,
            "tools/call",
            {"name": "echo", "arguments": {"text": '\u2028\u2029\u0085\r\n\t\u0000 ü 😀 \\ "'}},
        ),
        RESULT,
        77_007,
    )


def build() -> list[Case]:
    """The whole corpus, every case once per era it applies to."""
    ids = _Ids()
    cases: list[Case] = []
    for era in ERAS:
        cases += _not_json(era)
        cases += _not_messages(era)
        cases += _envelopes(era, ids)
        cases += _methods(era, ids)
        cases += _unasked(era)
        cases += _odd_but_valid(era)
    cases += _modern_meta(ids)
    return cases


CASES = build()
