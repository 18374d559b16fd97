"""Per-label judgement of internationalised host names, in the spirit of Chromium's IDN
display policy: show a label in Unicode only when it cannot pass for other letters.

Each label is judged on its own, as browsers do, so ``münchen.de`` and its ACE form
``xn--mnchen-3ya.de`` are both fine while ``аррӏе.com`` (Cyrillic letters that look like
"apple") is not.
"""

# ruff: noqa: RUF001, RUF002, RUF003 -- lookalike characters are this module's subject

from __future__ import annotations

import itertools
import unicodedata
from dataclasses import dataclass

import ada_url

from answerback.urls._model import ReasonCode, RiskLevel, UrlReason
from answerback.urls._text import character_name, escaped
from answerback.urls._unicode import (
    digit_lookalikes,
    is_identifier_character,
    latin_lookalikes,
    looks_like_url_punctuation,
    mixed_scripts,
    numbering_systems,
    script_name,
    script_of_letters,
)

# Scripts with enough letters that look Latin to spell Latin words, and the top-level
# domains whose registries sell names in that script (a label in the script is at home
# there, so "москва.рф" or "ελλάδα.gr" is fine while "аррӏе.com" is not).
_WHOLE_SCRIPT_HOMES: dict[str, frozenset[str]] = {
    "Cyrl": frozenset(
        {
            "bg", "by", "kg", "kz", "mk", "mn", "rs", "ru", "su", "tj", "ua", "uz",
            "рф", "срб", "укр", "бг", "бел", "қаз", "мкд", "мон", "рус",
        }
    ),
    "Grek": frozenset({"gr", "cy", "ελ", "ευ"}),
    "Armn": frozenset({"am", "հայ"}),
    "Geor": frozenset({"ge", "გე"}),
    "Ethi": frozenset({"et", "er"}),
    "Hebr": frozenset({"il", "ישראל"}),
    "Cher": frozenset[str](),
}  # fmt: skip

# In the UTS #39 identifier set, yet they pass for ASCII punctuation (a hyphen, an
# apostrophe) in a host name, so browsers show labels with them in ACE.
_PUNCTUATION_LIKE = frozenset("\u2010\u2019\u2027\u30a0\u058a\u02bb\u02bc")
_MIDDLE_DOT = "\u00b7"
# Combining overlays that draw a slash through the letter before them ("com̸evil" reads
# as "com/evil"): a path separator inside the host. The short and long solidus, the
# long double solidus ("//"), and the reverse solidus (a browser reads "\" as "/").
_SLASH_OVERLAYS = frozenset("\u0337\u0338\u20eb\u20e5")
_LDH = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")


@dataclass(frozen=True, slots=True)
class LabelJudgement:
    ascii: str
    """The label as a browser sends it (ACE for international labels)."""
    text: str
    """The label in Unicode (equal to ``ascii`` for plain labels)."""
    reasons: tuple[UrlReason, ...]

    @property
    def shown(self) -> str:
        """What to display: Unicode, unless something about the label is suspicious."""
        return self.ascii if self.reasons else self.text


def judge_label(label: str, top_level: str | None) -> LabelJudgement:
    """Judge one label of a canonical (lowercase, ASCII) host; ``top_level`` is the host's
    last label in Unicode, for the whole-script check, or None when it is not a public
    top-level domain (then no script is at home)."""
    if not label.startswith("xn--"):
        odd = sorted({char for char in label if char not in _LDH})
        reasons = (
            (
                _reason(
                    ReasonCode.UNUSUAL_CHARACTER,
                    RiskLevel.WARN,
                    f"The host label {label!r} contains {_listed(odd)}, which no registered "
                    "domain name uses.",
                ),
            )
            if odd
            else ()
        )
        return LabelJudgement(ascii=label, text=label, reasons=reasons)
    text = ada_url.idna_to_unicode(label)
    if text == label or text.isascii() or ada_url.idna_to_ascii(text).decode() != label:
        return LabelJudgement(
            ascii=label,
            text=label,
            reasons=(
                _reason(
                    ReasonCode.INVALID_ACE,
                    RiskLevel.HIGH_RISK,
                    f"The host label {label!r} looks like an encoded international name but "
                    "does not decode to one; programs may disagree about what it is.",
                ),
            ),
        )
    findings = _unicode_findings(label, text, top_level)
    return LabelJudgement(ascii=label, text=text, reasons=tuple(findings))


def _unicode_findings(label: str, text: str, top_level: str | None) -> list[UrlReason]:
    findings: list[UrlReason] = []
    shown = f"'{escaped(text)}' ({label})"
    punctuation = [
        char for char in text if looks_like_url_punctuation(char) or char in _SLASH_OVERLAYS
    ]
    if punctuation:
        findings.append(
            _reason(
                ReasonCode.PUNCTUATION_LOOKALIKE,
                RiskLevel.HIGH_RISK,
                f"The host label {shown} contains {_named(punctuation)}, which looks like "
                "URL punctuation: the address may not end where it seems to.",
            )
        )
    odd = [
        char
        for char in text
        if char not in punctuation
        and (not is_identifier_character(char) or char in _PUNCTUATION_LIKE)
    ]
    odd.extend(_misplaced_middle_dots(text))
    odd.extend(_stacked_marks(text))
    odd.extend(char for char in _marks_on_ascii(text) if char not in punctuation)
    if odd:
        findings.append(
            _reason(
                ReasonCode.UNUSUAL_CHARACTER,
                RiskLevel.WARN,
                f"The host label {shown} contains {_named(odd)}, which ordinary words are "
                "not written with.",
            )
        )
    mixed = mixed_scripts(text)
    if mixed:
        names = " and ".join(sorted(script_name(code) for code in mixed))
        findings.append(
            _reason(
                ReasonCode.MIXED_SCRIPT,
                RiskLevel.HIGH_RISK,
                f"The host label {shown} mixes {names} letters, a classic way to imitate "
                "another name.",
            )
        )
    if len(numbering_systems(text)) > 1:
        findings.append(
            _reason(
                ReasonCode.MIXED_DIGITS,
                RiskLevel.HIGH_RISK,
                f"The host label {shown} mixes digits from different numbering systems.",
            )
        )
    lookalike_digits = digit_lookalikes()
    if all(char in lookalike_digits or "0" <= char <= "9" for char in text):
        findings.append(
            _reason(
                ReasonCode.DIGIT_LOOKALIKE,
                RiskLevel.HIGH_RISK,
                f"The host label {shown} is made of characters that look like digits "
                "without being them.",
            )
        )
    script = script_of_letters(text)
    if script in _WHOLE_SCRIPT_HOMES and not _at_home(script, top_level):
        letters = [char for char in text if unicodedata.category(char).startswith("L")]
        lookalikes = latin_lookalikes(script)
        if letters and all(char in lookalikes for char in letters):
            findings.append(
                _reason(
                    ReasonCode.WHOLE_SCRIPT_CONFUSABLE,
                    RiskLevel.HIGH_RISK,
                    f"The host label {shown} is written only with {script_name(script)} "
                    "letters that look like Latin ones, under a top-level domain that is "
                    f"not {script_name(script)}: it reads as a Latin name it is not.",
                )
            )
    return findings


def _at_home(script: str, top_level: str | None) -> bool:
    if top_level is None:
        return False
    return top_level in _WHOLE_SCRIPT_HOMES[script] or script_of_letters(top_level) == script


def _misplaced_middle_dots(text: str) -> list[str]:
    """Middle dots anywhere but in Catalan's "l·l", where they belong."""
    return [
        char
        for index, char in enumerate(text)
        if char == _MIDDLE_DOT and text[index - 1 : index + 2] != "l·l"
    ]


def _stacked_marks(text: str) -> list[str]:
    """A combining mark repeated, or one on a dotless i or j: both draw a familiar
    letter ("ı̇" is an "i") from unfamiliar parts."""
    found: list[str] = []
    for previous, char in itertools.pairwise(text):
        if unicodedata.category(char) == "Mn" and (previous == char or previous in "ıȷ"):
            found.append(char)
    return found


def _marks_on_ascii(text: str) -> list[str]:
    """Combining marks left on a plain ASCII letter after normalisation: a letter with a
    precomposed form was composed into it, so what is left (a stroke, a ring, an overlay)
    is drawn onto a familiar letter rather than written as one."""
    return [
        char
        for previous, char in itertools.pairwise(text)
        if unicodedata.category(char) == "Mn" and previous.isascii()
    ]


def _named(chars: list[str]) -> str:
    return ", ".join(character_name(char) for char in dict.fromkeys(chars))


def _listed(chars: list[str]) -> str:
    return ", ".join(repr(char) for char in chars)


def _reason(code: ReasonCode, level: RiskLevel, message: str) -> UrlReason:
    return UrlReason(code=code, level=level, message=message)
