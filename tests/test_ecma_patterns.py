"""JSON Schema patterns run as ECMA-262 means them, judged against Node's own RegExp.

A peer that wrote a ``pattern`` checks values with a JavaScript engine (``new RegExp(p,
"u")``). answerback translates each pattern to the ``regex`` engine's syntax
(``forms/_patterns.py``); every verdict here is compared with the one Node gives for the
same pattern and text, in one Node process for the whole module.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import SchemaError

from answerback.forms import AnswerError, UnsupportedForm, parse_form
from answerback.forms._ecma_regex import MOST_REPEATS, PatternError, translate
from answerback.forms._json_schema import compile_schema
from answerback.forms._patterns import compiled_pattern

_JUDGE = r"""
const lines = require("readline").createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const { pattern, texts } = JSON.parse(line);
  let answer;
  try {
    const compiled = new RegExp(pattern, "u");
    answer = { verdicts: texts.map((text) => compiled.test(text)) };
  } catch (error) {
    answer = { error: String(error.message) };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
});
"""


class Node:
    """One ``node`` process judging patterns, a line of JSON each way."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            ["node", "-e", _JUDGE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )

    def judge(self, pattern: str, texts: list[str]) -> list[bool] | str:
        """Node's verdict on each text, or its error for a pattern it refuses."""
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(json.dumps({"pattern": pattern, "texts": texts}) + "\n")
        self.process.stdin.flush()
        answer = json.loads(self.process.stdout.readline())
        return answer["verdicts"] if "verdicts" in answer else answer["error"]

    def close(self) -> None:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.close()  # Node ends at the end of its input
        self.process.wait()
        self.process.stdout.close()


@pytest.fixture(scope="module")
def node() -> Iterator[Node]:
    if shutil.which("node") is None:
        pytest.skip("node is not on PATH")
    judge = Node()
    yield judge
    judge.close()


def ours(pattern: str, texts: list[str]) -> list[bool] | str:
    """answerback's verdict on each text, or its error for a pattern it refuses."""
    try:
        compiled = compiled_pattern(pattern)
    except PatternError as exc:
        return str(exc)
    return [compiled.search(text) is not None for text in texts]


TRICKY = [
    "",
    "a",
    "A",
    "z",
    "0",
    "9",
    "_",
    " ",
    "-",
    "/",
    "$",
    "\\",
    "[",
    "]",
    ":",
    "\n",
    "\r",
    "\t",
    "\x0b",
    "\x0c",
    "\x00",
    "\x08",
    "\x1c",
    "\x1f",
    "\x85",
    "\xa0",
    "\u2028",
    "\u2029",
    "\u200b",
    "\u3000",
    "\ufeff",
    "é",
    "É",
    "ß",
    "\u0661",  # ARABIC-INDIC DIGIT ONE: \d in Python, not in ECMA-262
    "\u212a",  # KELVIN SIGN
    "\u017f",  # LATIN SMALL LETTER LONG S
    "λ",
    "Λ",
    "\u0342",  # a Greek combining mark, Script_Extensions=Greek
    "😀",
    "\ud83d",  # a lone surrogate, as JSON may carry one
    "a\n",
    "\na",
    "ab",
    "aa",
    "aé",
    "foo bar",
    "$12",
]
"""Characters and short texts where ECMA-262 and Python read patterns differently."""

# Each pattern is judged on every TRICKY text, and on random texts of them.
PATTERNS = [
    # ECMA-262 syntax Python does not have
    "[^]",
    "^[^]$",
    "[]",
    "a[]",
    r"\u{1F600}",
    r"^\u{1F600}$",
    r"^\u{61}\u{000062}$",
    r"\uD83D\uDE00",
    r"[\uD83D\uDE00]",
    r"^\uD83D$",
    r"\cJ",
    r"\cj",
    r"[\cJ]",
    r"^(?<x>a)\k<x>$",
    r"^\k<x>(?<x>a)$",
    r"(?<x>a)|\k<x>b",
    r"(?<\u0061b>a)\k<ab>",
    r"\/",
    r"[\/]",
    r"[\-]",
    r"[a\-z]",
    r"\u0041",
    r"\x41",
    r"[\x41-\x5a]",
    r"\0",
    r"[\0]",
    r"[\b]",
    # compiles in Python, means something else there
    "^a$",
    "a$",
    "$",
    "^",
    r"\d",
    r"^\d+$",
    r"\D",
    r"\w",
    r"^\w+$",
    r"\W",
    r"\bA",
    r"a\b",
    r"é\b",
    r"\B",
    r"a\B",
    ".",
    "^.$",
    "^.+$",
    r"\s",
    r"^\s$",
    r"\S",
    r"[\s\S]",
    r"^[\s\S]$",
    r"[^\s]",
    r"[^\S]",
    r"[\d\s]",
    r"[^\d\s]",
    r"[\w-]",
    r"[-\w]",
    r"[a-z\d]",
    r"[^\W_]",
    r"[\D]",
    r"[[:alpha:]]",
    "[a-z&&[aeiou]]",
    "[a|b]",
    "[a~~b]",
    # Unicode properties
    r"\p{Lu}",
    r"\P{Lu}",
    r"\p{L}",
    r"\p{Letter}",
    r"\p{gc=Nd}",
    r"\p{General_Category=Decimal_Number}",
    r"\p{digit}",
    r"\p{punct}",
    r"\p{cntrl}",
    r"\p{Script=Greek}",
    r"\p{sc=Grek}",
    r"\p{Script_Extensions=Greek}",
    r"\p{scx=Latn}",
    r"\p{Alpha}",
    r"\p{White_Space}",
    r"\p{space}",
    r"\p{Any}",
    r"\p{ASCII}",
    r"\p{Assigned}",
    r"\p{Emoji_Presentation}",
    r"[\p{Lu}\d]",
    r"[^\p{Lu}]",
    r"[\P{L}a]",
    r"^\p{Lu}\p{Ll}+$",
    # groups, backreferences, lookaround, quantifiers
    r"(a)|\1b",
    r"^\1(a)$",
    r"^(a)?\1b$",
    r"(a)x|\1b",
    r"(?:a|)",
    "|",
    "",
    "a|",
    "(?=a)",
    "(?!a)",
    r"(?<=\$)\d+",
    r"(?<!a)b",
    r"(?<=(a+)\1)b",
    r"(?<=\1(a+))b",
    r"(?<=(a+))b\1",
    r"(?<=(?<x>a|aa)\k<x>)b",
    r"(a)(?<=\1)",
    "(?<=a)",
    "a{2}",
    "^a{2,}$",
    "a{1,2}?b",
    "x*?y",
    "(?:ab)+",
    "(a|b)*c",
    "a{0,99999999999}",
    # not ECMA-262: both refuse
    r"\-",
    "(?i)a",
    "(?P<n>a)",
    "(?#note)",
    "(?>a)",
    "a++",
    "a**",
    "a*+",
    "{",
    "}",
    "]",
    "a{,3}",
    "a{2,1}",
    r"\c1",
    r"\c",
    r"\00",
    r"\01",
    r"[\1]",
    r"\2(a)",
    r"\k<y>(?<x>a)",
    r"\k",
    r"[\B]",
    r"\a",
    r"\_",
    r"\A",
    r"\Z",
    r"\z",
    r"\h",
    r"\x4",
    r"\u004",
    r"\u{110000}",
    r"\u{}",
    r"\p{lu}",
    r"\p{L&}",
    r"\p{Latin}",
    r"\p{IsLu}",
    r"\p{Script=Nope}",
    r"\p{Lu",
    r"[\d-z]",
    r"[a-\d]",
    "[z-a]",
    "[a--b]",
    "(?<a>x)(?<a>y)",
    "(?<1a>x)",
    "(?<a",
    "(?=a)*",
    "(?<=a)+",
    "^*",
    r"\b+",
    "(",
    ")",
    "[",
    "a)",
]


def texts_for(pattern: str) -> list[str]:
    """TRICKY, and random texts built from it (the same for each run)."""
    rng = random.Random(pattern)
    pieces = [text for text in TRICKY if len(text) == 1]
    built = ["".join(rng.choices(pieces, k=rng.randint(1, 6))) for _ in range(40)]
    return TRICKY + built


@pytest.mark.parametrize("pattern", PATTERNS)
def test_each_verdict_is_node_s(node: Node, pattern: str) -> None:
    """For each pattern, answerback refuses it when Node does, and otherwise matches
    exactly the texts Node matches."""
    texts = texts_for(pattern)
    theirs = node.judge(pattern, texts)
    mine = ours(pattern, texts)
    if isinstance(theirs, str):
        assert isinstance(mine, str), f"Node refuses {pattern!r}: {theirs}"
        assert mine.startswith("is not a regular expression"), mine
        return
    assert not isinstance(mine, str), f"Node runs {pattern!r}, answerback refuses: {mine}"
    differ = [text for text, a, b in zip(texts, mine, theirs, strict=True) if a != b]
    assert not differ, f"{pattern!r} differs from Node on {differ!r} (ours: {translate(pattern)})"


_ATOMS = [
    "a",
    "b",
    "é",
    "😀",
    ".",
    r"\d",
    r"\D",
    r"\w",
    r"\W",
    r"\s",
    r"\S",
    r"\b",
    r"\B",
    "^",
    "$",
    "[ab]",
    "[^a]",
    r"[\s\d]",
    r"[^\w]",
    r"[a-\u00ff]",
    "[^]",
    "[]",
    r"\n",
    r"\u2028",
    r"\p{Lu}",
    r"\P{L}",
    r"\-",
    r"\/",
    "-",
    "{",
    "}",
    "]",
    ")",
    "(",
    "|",
    "*",
    "+",
    "?",
    "{2}",
    "{1,}",
    "{0,2}",
    "(?:",
    "(?=",
    "(?!",
    "(?<=",
    "(?<!",
    "(?<n>",
    r"\1",
    r"\k<n>",
    r"\0",
    r"\cJ",
    r"\x41",
    r"\u{1F600}",
    r"[\b\-a]",
    "*?",
    "??",
    "{1,2}?",
]


def random_patterns(count: int) -> list[str]:
    """Patterns strung together from ``_ATOMS``, some well formed and some not."""
    rng = random.Random(262)
    patterns: list[str] = []
    while len(patterns) < count:
        pieces = rng.choices(_ATOMS, k=rng.randint(1, 7))
        opened = sum(piece.startswith("(") for piece in pieces)
        closed = sum(piece == ")" for piece in pieces)
        if rng.random() < 0.8:
            pieces += [")"] * max(opened - closed, 0)
        pattern = "".join(pieces)
        if pattern.count("(?<n>") <= 1:
            patterns.append(pattern)
    return patterns


def test_random_patterns_on_random_texts_agree_with_node(node: Node) -> None:
    """Patterns and texts no one chose, so no case was written to pass."""
    disagreements: list[str] = []
    for pattern in random_patterns(600):
        texts = texts_for(pattern)
        theirs = node.judge(pattern, texts)
        mine = ours(pattern, texts)
        if isinstance(theirs, str) or isinstance(mine, str):
            if isinstance(theirs, str) != isinstance(mine, str):
                disagreements.append(f"{pattern!r}: Node {theirs!r}, answerback {mine!r}")
            continue
        differ = [text for text, a, b in zip(texts, mine, theirs, strict=True) if a != b]
        if differ:
            disagreements.append(f"{pattern!r} on {differ[:3]!r}")
    assert not disagreements


@pytest.mark.parametrize(
    ("pattern", "construct"),
    [
        (r"^(?:(a)|b)+\1$", "a backreference to group 1, which sits in a repeat"),
        (r"(?<n>a)*\k<n>", "a backreference to group 1, which sits in a repeat"),
        (r"^(?:(a)|b\1)+$", "a backreference to group 1, which sits in a repeat"),
        ("a{10002}", "10,001 copies of their parts (the most, '{10002}' at character 2)"),
        ("(?:a{101}){100}", "10,099 copies of their parts (the most, '{100}' at character 11)"),
        ("(){10001}", "10,001 copies"),
        ("x{99999999999}", "(the most, '{99999999999}' at character 2)"),
        ("a{4294967294}", "4,294,967,293 copies"),
        ("a{9000}b{9000}", "17,998 copies"),
        ("(" * 101 + "a" + ")" * 101, "groups nested more than 100 deep"),
        (r"\p{CWKCF}", "which the regex engine lacks"),
    ],
)
def test_what_cannot_run_as_ecma_means_is_refused_naming_the_construct(
    node: Node, pattern: str, construct: str
) -> None:
    """Node runs these, but the ``regex`` engine would match other text (a group that
    ECMA-262 forgets on each repeat: ``^(?:(a)|b)+\\1$`` matches "ab" there, as group 1
    is unset after the "b"), lay out a huge compiled form (``a{4294967294}`` exhausted
    memory in the old code), or does not know the property: refused, saying which
    construct and why, rather than checked wrongly."""
    assert not isinstance(node.judge(pattern, ["a"]), str)
    with pytest.raises(PatternError, match=r"^cannot be run as ECMA-262 means it: ") as caught:
        translate(pattern)
    assert construct in str(caught.value)


def test_the_largest_repeat_allowed_compiles() -> None:
    assert compiled_pattern(f"^a{{{MOST_REPEATS + 1}}}$").search("a" * (MOST_REPEATS + 1))


def test_an_error_says_where_the_construct_is() -> None:
    with pytest.raises(PatternError) as caught:
        translate(r"ab\-")
    assert str(caught.value) == (
        "is not a regular expression (JSON Schema's patterns are ECMA-262): a '\\-' outside "
        "a class (write '-' itself) (at character 4)"
    )


def form_of(pattern: str, default: str | None = None) -> dict[str, Any]:
    field: dict[str, Any] = {"type": "string", "pattern": pattern}
    if default is not None:
        field["default"] = default
    return {"type": "object", "properties": {"code": field}}


def test_a_form_checks_an_answer_as_the_server_s_javascript_would() -> None:
    """``$`` ends the text in ECMA-262; in Python it also matches before a final newline,
    so "ABC\\n" passed the client's check and the server refused it."""
    field = parse_form(form_of("^[A-Z]{3}$"))["code"]
    assert field.check("ABC") == "ABC"
    for answer in ("ABC\n", "AB\u0661"):
        with pytest.raises(AnswerError, match="must match the pattern"):
            field.check(answer)


def test_a_form_with_ecma_only_syntax_is_usable() -> None:
    """``[^]`` (any character) and ``\\u{...}`` did not compile, so the form was refused."""
    form = parse_form(form_of(r"^[^]\u{1F600}$", default="\n😀"))
    assert form["code"].check("x😀") == "x😀"


def test_a_form_and_an_output_schema_refuse_the_same_pattern_with_the_same_reason() -> None:
    """``\\-`` outside a class is an error in ECMA-262's Unicode mode; Python took it."""
    with pytest.raises(UnsupportedForm) as refused:
        parse_form(form_of(r"^a\-b$"))
    assert (
        '"pattern" is not a regular expression (JSON Schema\'s patterns are ECMA-262): a '
        "'\\-' outside a class (write '-' itself) (at character 4)"
    ) in str(refused.value)
    with pytest.raises(SchemaError, match=r"is not a 'regex'") as unusable:
        compile_schema({"type": "string", "pattern": r"^a\-b$"})
    assert isinstance(unusable.value.cause, PatternError)


def test_an_output_schema_checks_content_as_ecma_262_does() -> None:
    check = compile_schema(
        {
            "type": "object",
            "properties": {"word": {"type": "string", "pattern": r"^\w+$"}},
            "patternProperties": {"^[^]$": {"type": "integer"}},
        }
    )
    assert check.judge({"word": "abc", "x": 1}, "content").problems == []
    assert check.judge({"word": "é", "\n": "one"}, "content").problems == [
        "content.word: 'é' does not match '^\\\\w+$'",
        "content.\n: 'one' is not of type 'integer'",
    ]


def test_a_property_pattern_no_meta_schema_checks_is_named_when_it_cannot_run() -> None:
    """Draft 4's meta-schema leaves ``patternProperties`` keys unchecked, so such a pattern
    reaches the check itself: each property it should judge is named with the reason,
    where Python's reading of ``\\-`` had judged it as a hyphen."""
    check = compile_schema(
        {
            "$schema": "http://json-schema.org/draft-04/schema#",
            "type": "object",
            "patternProperties": {r"\-": {"type": "integer"}},
        }
    )
    assert check.judge({"a-b": "x"}, "content").problems == [
        "content: the property 'a-b' cannot be checked: the pattern \\- is not a regular "
        "expression (JSON Schema's patterns are ECMA-262): a '\\-' outside a class (write "
        "'-' itself) (at character 2)"
    ]
