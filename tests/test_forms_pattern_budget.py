"""One time budget for all the pattern checks of a form, an answer or a tool result.

Each check of one value against a server's pattern has a deadline (``PATTERN_SECONDS``),
but a pattern that backtracks for a few milliseconds and then matches never reaches it:
256 such defaults froze the client's event loop for half a minute, a round of three such
forms for a minute, a result of 2,000 such strings for a minute and a half. So all the
checks of one piece of work share a budget (``PATTERN_BUDGET_SECONDS`` and
``PATTERN_SECONDS_PER_CHECK`` for each check), and past it the form, the answer or the
result is refused as too slow to check. The budget grows with the checks, so a large
result whose patterns do not backtrack is checked whole.

The budget's own tests give it a fake clock on which each check costs a fixed time, and
count the checks; the tests with a real slow pattern assert only the refusal, which the
old code never gave (it accepted everything, seconds later).
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections import defaultdict
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field
from support import RawPeer
from test_structured_output_validation import call_against, listing

from answerback import Client, MCPError
from answerback.client import ClientRequestContext, Headless, InvalidServerResultError
from answerback.forms import AnswerError, FieldError, UnsupportedForm, parse_form
from answerback.forms._errors import FormTooSlow
from answerback.forms._fields import NumberField
from answerback.forms._json_schema import Verdict, compile_schema
from answerback.forms._patterns import (
    PATTERN_BUDGET_SECONDS,
    PATTERN_SECONDS_PER_CHECK,
    PATTERN_SECONDS_PER_COMPILE,
    PatternBudget,
    PatternBudgetSpent,
    compiled_pattern,
    pattern_budget,
    pattern_search,
)
from answerback.jsonrpc import JSONObject
from answerback.server import Context, MCPServer
from answerback.types import (
    INVALID_PARAMS,
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    InputRequest,
    InputRequests,
    InputRequiredResult,
    TextContent,
)

SLOW_PATTERN = "^(?:(a|a)*b|[ac]*)$"
"""The probe's pattern: it backtracks, then matches. On ``SLOW_VALUE`` it takes a few
milliseconds, far under the one-value deadline, so only the budget stops it."""

SLOW_VALUE = "a" * 14 + "c"

CHECK_COST = 1 / 16
"""What each check costs on the fake clock."""

ALLOWANCE = 1 / 32
"""What each check adds to a fake budget: half its cost, so each check uses up 1/32 s of
the quarter second, which buys exactly eight (in sums that binary floats keep exact)."""

CHECKS_IN_BUDGET = 8


def spent_message(per_check: float, per_compile: float = PATTERN_SECONDS_PER_COMPILE) -> str:
    return (
        "could not be checked: the server's patterns are too slow to check (together they "
        f"took more than the {PATTERN_BUDGET_SECONDS:g} s, {per_check * 1e6:g} µs a value "
        f"and {per_compile * 1e6:g} µs a new pattern, that one form, answer or result may "
        "spend on them); a pattern that does not backtrack checks a value in microseconds"
    )


SPENT = spent_message(PATTERN_SECONDS_PER_CHECK)

FAKE_SPENT = spent_message(ALLOWANCE)
"""What a ``fake_budget`` says once spent."""


@pytest.fixture(autouse=True)
def plain_pattern_compiled() -> None:
    """The fake-clock tests count checks of ``^a+$``: compiled beforehand, outside any
    budget, it costs them nothing (a cached pattern is not compiled again)."""
    compiled_pattern("^a+$")


class SteppingClock:
    """A fake clock that moves ``CHECK_COST`` each time it is read: the budget reads it
    before and after each check, so each check costs ``CHECK_COST`` however long it took."""

    def __init__(self) -> None:
        self.now = 0.0
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        self.now += CHECK_COST
        return self.now

    @property
    def checks(self) -> int:
        return self.reads // 2


def fake_budget(clock: SteppingClock) -> contextlib.AbstractContextManager[PatternBudget]:
    """A budget on ``clock`` that grows by ``ALLOWANCE`` a check."""
    return pattern_budget(clock=clock, per_check=ALLOWANCE)


def fields(count: int, **definition: Any) -> dict[str, Any]:
    """A form of ``count`` alike fields, ``f0`` onwards."""
    properties = {f"f{n}": {"type": "string", **definition} for n in range(count)}
    return {"type": "object", "properties": properties}


def test_checks_run_until_the_budget_is_spent_then_stop_without_searching() -> None:
    clock = SteppingClock()
    with fake_budget(clock) as budget:
        assert all(pattern_search("^a+$", "aaa") for _ in range(CHECKS_IN_BUDGET))
        assert budget.spent_up
        with pytest.raises(PatternBudgetSpent) as caught:
            pattern_search("^a+$", "aaa")
    assert str(caught.value) == FAKE_SPENT
    assert clock.checks == CHECKS_IN_BUDGET, "the check past the budget never ran"


def test_a_budget_opened_inside_another_shares_it() -> None:
    """Nesting never grants more time: a form read, or an answer checked, under a budget
    the caller opened draws on the caller's."""
    with fake_budget(SteppingClock()) as outer:
        pattern_search("^a+$", "aaa")
        with pattern_budget() as inner:
            assert inner is outer
            pattern_search("^a+$", "aaa")
    assert outer.spent == 2 * CHECK_COST


def test_outside_a_budget_each_value_has_only_its_own_deadline() -> None:
    """A field checked on its own (a keystroke in a form) is one value: never refused
    for what other checks spent."""
    for _ in range(10 * CHECKS_IN_BUDGET):
        assert pattern_search("^a+$", "aaa")


def test_reading_a_form_stops_at_the_field_where_its_budget_runs_out() -> None:
    """Each default's pattern runs once (it ran twice, halving the budget for defaults):
    eight fields fit in eight checks, the ninth is refused."""
    clock = SteppingClock()
    schema = fields(256, pattern="^a+$", default="aaa")
    with fake_budget(clock), pytest.raises(FormTooSlow) as caught:
        parse_form(schema)
    assert isinstance(caught.value, UnsupportedForm)
    assert caught.value.errors == (FieldError("f8", f"its default {FAKE_SPENT}"),)
    assert str(caught.value).startswith("The requested form's patterns are too slow to check: f8")
    assert clock.checks == CHECKS_IN_BUDGET


def test_each_default_is_checked_against_its_pattern_once() -> None:
    """Each ran twice (alone, then with the field's other rules), which halved the
    budget for defaults and doubled the cost of reading every form."""
    clock = SteppingClock()
    with pattern_budget(seconds=100.0, clock=clock):
        parse_form(fields(3, pattern="^a+$", default="aaa"))
    assert clock.checks == 3


def test_a_default_that_does_not_match_its_pattern_is_told_so_with_the_other_rules() -> None:
    schema = fields(1, pattern="^a+$", default="bbb", maxLength=2)
    with pytest.raises(UnsupportedForm) as caught:
        parse_form(schema)
    message = 'its default "bbb" does not fit the field: must be at most 2 characters; '
    assert caught.value.errors == (FieldError("f0", message + "must match the pattern ^a+$"),)


def test_a_form_read_within_its_budget_is_not_touched_by_the_next_one() -> None:
    """Each form has its own budget: reading one that used most of it leaves the next
    form's whole."""
    schema = fields(2, pattern="^a+$", default="aaa")
    for _ in range(3):
        with fake_budget(SteppingClock()):
            assert [field.name for field in parse_form(schema).fields] == ["f0", "f1"]


def test_checking_an_answer_stops_at_the_field_where_its_budget_runs_out() -> None:
    form = parse_form(fields(256, pattern="^a+$"))
    clock = SteppingClock()
    with fake_budget(clock), pytest.raises(AnswerError) as caught:
        form.check({f"f{n}": "aaa" for n in range(256)})
    assert caught.value.errors == (FieldError("f8", FAKE_SPENT),)
    assert clock.checks == CHECKS_IN_BUDGET


def test_reading_typed_answers_stops_where_its_budget_runs_out() -> None:
    form = parse_form(fields(256, pattern="^a+$"))
    clock = SteppingClock()
    with fake_budget(clock), pytest.raises(AnswerError) as caught:
        form.coerce({f"f{n}": "aaa" for n in range(256)})
    assert caught.value.errors == (FieldError("f8", FAKE_SPENT),)
    assert clock.checks == CHECKS_IN_BUDGET


def test_a_field_checked_alone_under_a_spent_budget_says_so_as_an_answer_error() -> None:
    """A host checking one field never meets anything but ``AnswerError``."""
    field = parse_form(fields(1, pattern="^a+$"))["f0"]
    with fake_budget(SteppingClock()):
        for _ in range(CHECKS_IN_BUDGET):
            field.check("aaa")
        with pytest.raises(AnswerError) as caught:
            field.check("aaa")
    assert caught.value.errors == (FieldError("f0", FAKE_SPENT),)


def test_checking_a_result_stops_where_its_budget_runs_out_and_says_it_was_too_slow() -> None:
    check = compile_schema({"type": "array", "items": {"type": "string", "pattern": "^a+$"}})
    clock = SteppingClock()
    with fake_budget(clock):
        verdict = check.judge(["aaa"] * 2000, "structuredContent")
    assert verdict == Verdict([f"structuredContent.8: 'aaa' {FAKE_SPENT}"], too_slow=True)
    assert clock.checks == CHECKS_IN_BUDGET
    assert check.judge(["aaa"] * 2000, "structuredContent") == Verdict([], too_slow=False)


def test_a_budget_spent_where_anyof_hides_the_failure_still_says_too_slow() -> None:
    """A branch of ``anyOf`` that could not be checked fails quietly when another branch
    passes; the content was still not checked whole."""
    schema = {"anyOf": [{"type": "string", "pattern": "^a+$"}, {"type": "string"}]}
    check = compile_schema({"type": "array", "items": schema})
    with fake_budget(SteppingClock()):
        assert check.judge(["aaa"] * 10, "structuredContent") == Verdict([], too_slow=True)


def test_a_check_cut_short_by_the_budget_spends_it_though_the_clock_says_time_is_left() -> None:
    """A check's deadline is wall-clock time and the budget counts CPU time, so a thread
    kept waiting (here: a clock that never moves) times out with CPU time left. Checking
    stops there all the same and says the result was too slow; it went on, listing twenty
    values that "could not be checked", each another timeout, and did not say so."""
    check = compile_schema({"type": "array", "items": {"type": "string", "pattern": SLOW_PATTERN}})
    with pattern_budget(seconds=0.0001, clock=lambda: 0.0) as budget:
        verdict = check.judge([SLOW_VALUE] * 100, "structuredContent")
    assert budget.spent_up
    assert verdict.too_slow
    [problem] = verdict.problems
    assert problem.startswith("structuredContent.0: ")
    assert "the server's patterns are too slow to check" in problem


def test_a_huge_whole_bound_is_stated_in_exponent_form_not_in_309_digits() -> None:
    """A float bound of an integer field is a whole number: written out in full, 1e308
    made a 364-character message."""
    field = NumberField(name="n", integer=True, minimum=1e308)
    with pytest.raises(AnswerError) as caught:
        field.check(1)
    assert caught.value.errors == (FieldError("n", "must be at least 1e+308"),)
    big = NumberField(name="n", integer=True, maximum=12345678901234567890123)
    with pytest.raises(AnswerError) as caught:
        big.check(10**23)
    assert caught.value.errors == (FieldError("n", "must be at most 1.2345678901234568e+22"),)
    exact = NumberField(name="n", integer=True, minimum=2**53 + 1)
    with pytest.raises(AnswerError) as caught:
        exact.check(2**53)
    assert caught.value.errors == (FieldError("n", "must be at least 9007199254740993"),)


# -- with the real slow pattern ----------------------------------------------------------


def slow_form(fields_count: int = 256) -> dict[str, Any]:
    return fields(fields_count, pattern=SLOW_PATTERN, default=SLOW_VALUE)


def test_a_form_whose_slow_defaults_all_match_is_refused_not_read_for_seconds() -> None:
    """The probe's form: every default matches, each after milliseconds. The old code
    accepted it after seconds (half a minute for longer defaults)."""
    with pytest.raises(UnsupportedForm) as caught:
        parse_form(slow_form())
    [error] = caught.value.errors
    assert error.message == f"its default {SPENT}"


def test_an_answer_whose_slow_values_all_match_is_refused() -> None:
    form = parse_form(fields(256, pattern=SLOW_PATTERN))
    with pytest.raises(AnswerError) as caught:
        form.check({f"f{n}": SLOW_VALUE for n in range(256)})
    [error] = caught.value.errors
    assert error.message == SPENT


def slow_asking_server() -> MCPServer:
    mcp = MCPServer("SlowAsker", version="1.0")

    @mcp.tool()
    async def ask(ctx: Context) -> str:
        try:
            result = await ctx.session.elicit_form("Fill this in", slow_form())
        except MCPError as exc:
            return json.dumps({"code": exc.code, "message": exc.message})
        return result.action

    return mcp


@pytest.mark.anyio
async def test_a_client_refuses_a_slow_form_with_invalid_params_and_the_person_never_sees_it() -> (
    None
):
    asked: list[ElicitRequestParams] = []

    async def person(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params)
        return ElicitResult(action="decline")

    async with Client(slow_asking_server(), mode="legacy", elicitation_callback=person) as client:
        result = await client.call_tool("ask", {})
    [content] = result.content
    assert isinstance(content, TextContent)
    refusal = json.loads(content.text)
    assert refusal["code"] == INVALID_PARAMS
    assert refusal["message"].startswith("The requested form's patterns are too slow to check: f")
    assert SPENT in refusal["message"]
    assert refusal["message"].endswith(
        "Use patterns that do not backtrack, and fewer different ones."
    )
    assert asked == []


def slow_round_server() -> MCPServer:
    mcp = MCPServer("SlowRound", version="1.0")
    question = ElicitRequest(
        params=ElicitRequestFormParams(message="Fill this in", requested_schema=slow_form())
    )

    @mcp.tool()
    async def ask(ctx: Context) -> CallToolResult | InputRequiredResult:
        if ctx.input_responses is None:
            return InputRequiredResult(input_requests={f"q{n}": question for n in range(3)})
        return CallToolResult(content=[TextContent(text="answered")])

    return mcp


@pytest.mark.anyio
async def test_a_round_of_slow_forms_is_refused_at_the_first() -> None:
    """A 2026-07-28 round of three such forms took the old code a minute, declining each."""
    async with Client(
        slow_round_server(), mode="2026-07-28", responder=Headless("decline")
    ) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("ask", {})
    assert caught.value.code == INVALID_PARAMS
    assert SPENT in caught.value.message


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_result_whose_slow_strings_all_match_is_reported_as_too_slow_to_check(
    mode: str,
) -> None:
    schema: JSONObject = {
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": {"type": "string", "pattern": SLOW_PATTERN}}
        },
    }
    slow: JSONObject = {"content": [], "structuredContent": {"items": [SLOW_VALUE] * 300}}
    peer: RawPeer
    async with listing(mode, schema) as (client, peer):
        with pytest.raises(InvalidServerResultError) as caught:
            await call_against(client, peer, slow)
    message = caught.value.message
    assert (
        "sent structuredContent for tool 'anything' that could not be checked against " in message
    )
    assert "The server's patterns are too slow to check; report it to its authors." in message
    assert caught.value.data["problems"][-1].endswith(SPENT)


# -- a large result whose patterns do not backtrack ----------------------------------------


ROW_PATTERNS = {
    "id": "^[a-f0-9-]{36}$",
    "date": "^\\d{4}-\\d{2}-\\d{2}$",
    "sku": "^[A-Z]{3}-\\d{4}$",
}

TABLE_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {
        "rows": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    name: {"type": "string", "pattern": pattern}
                    for name, pattern in ROW_PATTERNS.items()
                },
            },
        }
    },
}


class Row(BaseModel):
    id: Annotated[str, Field(pattern=ROW_PATTERNS["id"])]
    date: Annotated[str, Field(pattern=ROW_PATTERNS["date"])]
    sku: Annotated[str, Field(pattern=ROW_PATTERNS["sku"])]


class Table(BaseModel):
    rows: list[Row]


ROWS = 20_000
"""60,000 plain pattern checks (about 1.7 MB of JSON, far under the 64 MiB message limit):
at about 8 µs each, twice the quarter second a fixed budget gave a whole result."""


def table_rows() -> list[JSONObject]:
    return [
        {"id": f"{n:08x}-0000-4000-8000-000000000000", "date": "2026-12-07", "sku": "ABC-1234"}
        for n in range(ROWS)
    ]


def test_a_large_result_with_plain_patterns_is_checked_whole() -> None:
    verdict = compile_schema(TABLE_SCHEMA).judge({"rows": table_rows()}, "structuredContent")
    assert verdict == Verdict([], too_slow=False)


@pytest.mark.anyio
async def test_a_client_accepts_a_large_result_with_plain_patterns() -> None:
    """It was refused as "too slow to check; report it to its authors"."""
    rows = table_rows()
    result: JSONObject = {"content": [], "structuredContent": {"rows": rows}}
    peer: RawPeer
    async with listing("legacy", TABLE_SCHEMA) as (client, peer):
        answered = await call_against(client, peer, result)
    assert answered.structured_content == {"rows": rows}


@pytest.mark.anyio
async def test_a_server_sends_a_large_result_it_built_with_plain_patterns() -> None:
    """A result the tool built itself is checked against its output schema by the
    server (it was refused there, as not fitting), then by the client, which listed the
    tool."""
    mcp = MCPServer("Big", version="1.0")

    @mcp.tool()
    async def table() -> Table | CallToolResult:
        return CallToolResult(content=[], structured_content={"rows": table_rows()})

    async with Client(mcp, mode="legacy") as client:
        await client.list_tools()
        result = await client.call_tool("table", {})
    assert not result.is_error, result.content
    assert result.structured_content == {"rows": table_rows()}


# -- compiling new patterns, and a whole round ----------------------------------------------


REPEATING = "^(a{100}){99}"
"""A pattern that repeats a part 9,900 times (under ``MOST_REPEATS``): the ``regex``
engine lays each copy out, so it takes a few milliseconds to compile, where an ordinary
pattern takes a fraction of one. Any suffix makes it a new pattern, compiled afresh."""

ORDINARY = "^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}"
"""An ordinary pattern (an email address), made new by a suffix."""


def new_patterns(count: int, stem: str, **definition: Any) -> dict[str, Any]:
    """A form of ``count`` fields, each with a pattern of its own: ``stem`` and the
    field's name, so none is in the cache (which is emptied first)."""
    compiled_pattern.cache_clear()
    properties = {
        f"f{n}": {"type": "string", "pattern": f"{stem}(?:f{n})?$", **definition}
        for n in range(count)
    }
    return {"type": "object", "properties": properties}


def compile_budget(clock: SteppingClock) -> contextlib.AbstractContextManager[PatternBudget]:
    """A ``fake_budget`` that also grows by ``ALLOWANCE`` a pattern compiled: on
    ``clock``, eight compiles (or checks) use it up."""
    return pattern_budget(clock=clock, per_check=ALLOWANCE, per_compile=ALLOWANCE)


COMPILE_SPENT = spent_message(ALLOWANCE, ALLOWANCE)


def test_compiling_new_patterns_draws_on_the_form_budget_and_stops_the_form_at_once() -> None:
    """A form of new patterns was compiled whole, untimed: 256 that repeat a part took
    more than a second, a round of such forms half a minute."""
    clock = SteppingClock()
    with compile_budget(clock), pytest.raises(FormTooSlow) as caught:
        parse_form(new_patterns(256, "^a+"))
    assert caught.value.errors == (FieldError("f8", f"its pattern {COMPILE_SPENT}"),)
    assert clock.checks == CHECKS_IN_BUDGET, "the ninth pattern was never compiled"


def test_a_cached_pattern_costs_nothing_and_one_refused_for_the_budget_is_not_cached() -> None:
    """Only a pattern not in the cache is compiled, and charged for; one the budget
    stopped before it was compiled is compiled next time, not kept as a failure."""
    schema = new_patterns(12, "^b+")
    with compile_budget(SteppingClock()), pytest.raises(FormTooSlow):
        parse_form(schema)
    clock = SteppingClock()
    with compile_budget(clock):
        compiled = [compiled_pattern(field["pattern"]) for field in schema["properties"].values()]
    assert clock.checks == 12 - CHECKS_IN_BUDGET, "only the four never compiled were compiled"
    assert compiled[8].search("bbb")


def test_answers_to_a_form_of_cached_patterns_draw_only_for_their_checks() -> None:
    """Reading the form compiled its patterns; checking an answer finds them cached."""
    form = parse_form(new_patterns(4, "^c+"))
    clock = SteppingClock()
    with compile_budget(clock):
        form.check({f"f{n}": "ccc" for n in range(4)})
    assert clock.checks == 4


def test_a_form_of_new_patterns_slow_to_compile_is_refused() -> None:
    """256 patterns of a few milliseconds each: the old code read the form after a second
    and more, and a round of such forms took half a minute. Each compile costs 2.5 ms on
    a fake clock, as in the output-schema test below (a fast machine compiles them within
    the allowance); the budget is the default one."""
    clock = itertools.count(0.0, 0.0025).__next__
    with pattern_budget(clock=clock), pytest.raises(FormTooSlow) as caught:
        parse_form(new_patterns(256, REPEATING))
    [error] = caught.value.errors
    assert error.message == f"its pattern {SPENT}"


def test_a_form_of_four_dozen_new_ordinary_patterns_is_read() -> None:
    """Compiling them (half a millisecond or so each) draws a small part of the budget."""
    form = parse_form(new_patterns(48, ORDINARY, default="someone@example.org"))
    assert len(form.fields) == 48


def round_server(questions: InputRequests) -> MCPServer:
    mcp = MCPServer("Round", version="1.0")

    @mcp.tool()
    async def ask(ctx: Context) -> CallToolResult | InputRequiredResult:
        if ctx.input_responses is None:
            return InputRequiredResult(input_requests=questions)
        return CallToolResult(content=[TextContent(text=f"answered {len(ctx.input_responses)}")])

    return mcp


def form_question(schema: dict[str, Any]) -> InputRequest:
    return ElicitRequest(
        params=ElicitRequestFormParams(message="Fill this in", requested_schema=schema)
    )


@pytest.mark.anyio
async def test_a_round_of_forms_each_within_its_budget_shares_one_and_is_refused() -> None:
    """As many forms as a round may hold, of sixteen slow defaults each: each alone is
    read within its budget (a fifth of it or so), and the old code read them all, one
    budget each, holding the event loop for seconds."""
    questions = {
        f"q{n}": form_question(fields(16, pattern=SLOW_PATTERN, default=SLOW_VALUE, title=f"{n}"))
        for n in range(32)
    }
    async with Client(
        round_server(questions), mode="2026-07-28", responder=Headless("decline")
    ) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("ask", {})
    assert caught.value.code == INVALID_PARAMS
    assert SPENT in caught.value.message


@pytest.mark.anyio
async def test_an_honest_round_with_new_patterns_and_its_answers_checked_is_answered() -> None:
    """Thirty-two forms of three new ordinary patterns each, every answer checked: all in
    one budget, far within it."""
    questions = {f"q{n}": form_question(new_patterns(3, f"{ORDINARY}(?:q{n})?")) for n in range(32)}

    async def accept(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action="accept", content={f"f{n}": "me@example.org" for n in range(3)})

    async with Client(
        round_server(questions), mode="2026-07-28", elicitation_callback=accept
    ) as client:
        result = await client.call_tool("ask", {})
    assert result.content == [TextContent(text="answered 32")]


ROUND_PATTERN = "^round-[0-9]+$"
"""The pattern of the form a round asks, new to the cache: reading it draws on the round."""

LOOKUP_PATTERN = "^lookup-[0-9]+$"
"""The pattern in another server's output schema, new to the cache."""

LOOKUP_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {"code": {"type": "string", "pattern": LOOKUP_PATTERN}},
    "required": ["code"],
}

UNFIT_LOOKUP: JSONObject = {"content": [], "structuredContent": {"code": "not a lookup code"}}


def budgets_drawn_on(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[PatternBudget]]:
    """Each pattern, and every budget that compiled or ran it, in order."""
    drawn: dict[str, list[PatternBudget]] = defaultdict(list)
    compile_pattern, search = PatternBudget.compile, PatternBudget.search

    def compile_recorded(budget: PatternBudget, pattern: str) -> Any:
        drawn[pattern].append(budget)
        return compile_pattern(budget, pattern)

    def search_recorded(budget: PatternBudget, pattern: str, text: str) -> bool:
        drawn[pattern].append(budget)
        return search(budget, pattern, text)

    monkeypatch.setattr(PatternBudget, "compile", compile_recorded)
    monkeypatch.setattr(PatternBudget, "search", search_recorded)
    compiled_pattern.cache_clear()
    return drawn


@pytest.mark.anyio
async def test_a_rounds_budget_is_not_drawn_on_by_what_the_host_does_while_answering(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The round's budget was open while the host's callback ran, so another server's
    tool it called had its output schema compiled on it: once the round's patterns had
    spent it, that schema was logged as unusable and the tool's results went unchecked
    for the rest of its connection. The budget is spent here by hand, as the round's own
    slow patterns could leave it; no clock is involved."""
    drawn = budgets_drawn_on(monkeypatch)
    question = form_question(
        {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "ref": {"type": "string", "pattern": ROUND_PATTERN},
            },
        }
    )
    looked_up: list[InvalidServerResultError] = []
    lookup: Client
    peer: RawPeer
    async with listing("legacy", LOOKUP_SCHEMA) as (lookup, peer):

        async def look_up_then_answer(
            context: ClientRequestContext, params: ElicitRequestParams
        ) -> ElicitResult:
            [round_budget] = drawn[ROUND_PATTERN]  # reading the form compiled it
            round_budget.spent = round_budget.allowed
            with pytest.raises(InvalidServerResultError) as caught:
                await call_against(lookup, peer, UNFIT_LOOKUP)
            looked_up.append(caught.value)
            return ElicitResult(action="accept", content={"name": "Ada"})

        async with Client(
            round_server({"q": question}),
            mode="2026-07-28",
            elicitation_callback=look_up_then_answer,
        ) as client:
            result = await client.call_tool("ask", {})
        assert result.content == [TextContent(text="answered 1")]
        with pytest.raises(InvalidServerResultError) as after_the_round:
            await call_against(lookup, peer, UNFIT_LOOKUP)
    [round_budget] = drawn[ROUND_PATTERN]
    assert all(budget is not round_budget for budget in drawn[LOOKUP_PATTERN])
    for refusal in [*looked_up, after_the_round.value]:
        assert "that does not fit the tool's outputSchema" in refusal.message
        assert "structuredContent.code: 'not a lookup code' does not match" in refusal.message


def test_an_output_schema_of_new_patterns_slow_to_compile_is_refused_before_any_result() -> None:
    """A tool's output schema is compiled when the tool is first called: 256 patterns of
    a few milliseconds each took the old code more than a second, and a schema may hold
    thousands. Past the budget the schema cannot be used (the client logs it, and passes
    that tool's results on unchecked, as for any schema it cannot use).

    Each compile costs 2.5 ms on a fake clock (read before and after it): on the real
    one, a fast idle machine compiled these patterns within the allowance, and the
    test failed for want of a slow machine. The default budget is the one drawn on."""
    properties = new_patterns(256, REPEATING)["properties"]
    clock = itertools.count(0.0, 0.0025).__next__
    with pattern_budget(clock=clock), pytest.raises(PatternBudgetSpent) as caught:
        compile_schema({"type": "object", "properties": properties})
    assert str(caught.value) == SPENT
