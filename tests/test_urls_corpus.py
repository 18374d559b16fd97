"""The URL verdict against a corpus of spoofing attempts and legitimate names.

``url_corpus/verdicts.tsv`` lists each URL with the level it must get, the reasons it
must give, and the host it must display (Unicode for legitimate international names, ACE
for lookalikes). The format is described at the top of the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from answerback.urls import ReasonCode, RiskLevel, judge_url

CORPUS = Path(__file__).parent / "url_corpus" / "verdicts.tsv"
LEVELS = {
    "ok": RiskLevel.OK,
    "warn": RiskLevel.WARN,
    "high": RiskLevel.HIGH_RISK,
    "block": RiskLevel.BLOCK,
}
CODE_POINT = re.compile(r"\\u\{([0-9a-fA-F]+)\}")


@dataclass(frozen=True)
class Case:
    line: int
    level: RiskLevel
    url: str
    reasons: frozenset[ReasonCode]
    shown: str | None
    note: str


def cases() -> list[Case]:
    found: list[Case] = []
    for number, line in enumerate(CORPUS.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        level, url, reasons, shown, note = line.split("\t")
        found.append(
            Case(
                line=number,
                level=LEVELS[level],
                url=CODE_POINT.sub(lambda match: chr(int(match.group(1), 16)), url),
                reasons=frozenset(ReasonCode(code) for code in reasons.split() if reasons != "-"),
                shown=None if shown == "-" else shown,
                note=note,
            )
        )
    return found


CASES = cases()


def test_corpus_is_large_and_covers_every_level() -> None:
    assert len(CASES) >= 100
    assert {case.level for case in CASES} == set(RiskLevel)


@pytest.mark.parametrize("case", CASES, ids=[f"line{case.line}" for case in CASES])
def test_verdict(case: Case) -> None:
    verdict = judge_url(case.url)
    codes = {reason.code for reason in verdict.reasons}
    context = f"{case.url!r} ({case.note}):\n{verdict.explain()}"
    assert verdict.level is case.level, context
    assert case.reasons <= codes, context
    if case.level is RiskLevel.OK:
        assert verdict.reasons == (), context
    if case.shown is not None:
        assert verdict.display.host == case.shown, context


@pytest.mark.parametrize("case", CASES, ids=[f"line{case.line}" for case in CASES])
def test_display_is_whole_and_splits_at_the_site(case: Case) -> None:
    display = judge_url(case.url).display
    assert display.before + display.site + display.after == display.url
    if display.host:
        assert display.site in display.host
        assert display.host in display.url
