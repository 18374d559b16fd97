"""Unicode facts for judging host names: scripts, identifier characters, confusable skeletons.

The tables come from ``data/unicode_tables.json`` (generated from ICU, see the script beside
it) and are read once, on first use, so importing ``answerback.urls`` costs nothing. The
few additions of our own are below, each with the reason it exists.
"""

# ruff: noqa: RUF002, RUF003 -- lookalike characters are this module's subject

from __future__ import annotations

import json
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import cast

# Letters that UTS #39 maps to something other than the Latin letter a reader sees, or does
# not map at all. Cyrillic palochka is drawn as a bare vertical stroke, like "l" (the data
# says "i"); the rest are lowercase letters that print as a Latin letter in common fonts.
_EXTRA_PROTOTYPES = {
    "\u04cf": "l",  # ӏ CYRILLIC SMALL LETTER PALOCHKA
    "\u043f": "n",  # п CYRILLIC SMALL LETTER PE
    "\u044c": "b",  # ь CYRILLIC SMALL LETTER SOFT SIGN
    "\u044a": "b",  # ъ CYRILLIC SMALL LETTER HARD SIGN
    "\u0237": "j",  # ȷ LATIN SMALL LETTER DOTLESS J
    "\u0575": "j",  # յ ARMENIAN SMALL LETTER YI
    "\u03c4": "t",  # τ GREEK SMALL LETTER TAU
    "\u03ba": "k",  # κ GREEK SMALL LETTER KAPPA
    # Letters that pass for digits (a label like "1з" reads as "13").
    "\u0437": "3",  # з CYRILLIC SMALL LETTER ZE
    "\u0499": "3",  # ҙ CYRILLIC SMALL LETTER ZE WITH DESCENDER
    "\u04e1": "3",  # ӡ CYRILLIC SMALL LETTER ABKHASIAN DZE
    "\u0577": "2",  # շ ARMENIAN SMALL LETTER SHA
    "\u10d5": "3",  # ვ GEORGIAN LETTER VIN
    "\u10de": "3",  # პ GEORGIAN LETTER PAR
    "\u1012": "3",  # ဒ MYANMAR LETTER DA
    "\u0909": "3",  # उ DEVANAGARI LETTER U
}

# Characters that a reader takes for URL punctuation inside a host name: a label with one
# can make "google.com⁄login.evil.net" look like a path on google.com.
_URL_PUNCTUATION = frozenset("/.:?#@\\")

SCRIPT_NAMES = {
    "Latn": "Latin",
    "Cyrl": "Cyrillic",
    "Grek": "Greek",
    "Armn": "Armenian",
    "Geor": "Georgian",
    "Hebr": "Hebrew",
    "Arab": "Arabic",
    "Ethi": "Ethiopic",
    "Cher": "Cherokee",
    "Thai": "Thai",
    "Laoo": "Lao",
    "Hani": "Han",
    "Hira": "Hiragana",
    "Kana": "Katakana",
    "Hang": "Hangul",
    "Bopo": "Bopomofo",
    "Deva": "Devanagari",
    "Beng": "Bengali",
    "Taml": "Tamil",
    "Mymr": "Myanmar",
}

# UTS #39 augmented script sets: Han also stands for the writing systems that use it, so
# "日本" and "にほん" resolve to one script (Jpan) instead of counting as a mix.
_AUGMENTED = {
    "Hani": frozenset({"Hani", "Hanb", "Jpan", "Kore"}),
    "Hira": frozenset({"Hira", "Jpan"}),
    "Kana": frozenset({"Kana", "Jpan"}),
    "Hang": frozenset({"Hang", "Kore"}),
    "Bopo": frozenset({"Bopo", "Hanb"}),
}
_CJK_WRITING_SYSTEMS = frozenset({"Jpan", "Hanb", "Kore"})
_ANY_SCRIPT = frozenset({"Zyyy", "Zinh"})


@dataclass(frozen=True, slots=True)
class _Tables:
    prototypes: dict[str, str]
    skeleton_table: dict[int, str]
    """``str.translate`` table: each character's prototype, decomposed, without marks,
    lowercased (what ``skeleton`` needs, precomputed once)."""
    punctuation_like: frozenset[str]
    script_starts: list[int]
    script_rows: list[tuple[int, int, frozenset[str]]]
    augmented: dict[frozenset[str], frozenset[str]]
    """Each Script_Extensions value with UTS #39's augmentation applied."""
    allowed_starts: list[int]
    allowed_ends: list[int]
    unicode_version: str


@cache
def _tables() -> _Tables:
    """Read the generated tables once, at the first verdict that needs them."""
    text = resources.files("answerback.urls").joinpath("data/unicode_tables.json")
    raw = cast("dict[str, object]", json.loads(text.read_text(encoding="utf-8")))
    prototypes = dict(cast("dict[str, str]", raw["prototypes"]))
    prototypes.update(_EXTRA_PROTOTYPES)
    rows = [
        (first, last, frozenset(names.split()))
        for first, last, names in cast("list[tuple[int, int, str]]", raw["scripts"])
    ]
    allowed = cast("list[tuple[int, int]]", raw["allowed"])
    skeleton_table = {ord(char): _final_form(target) for char, target in prototypes.items()}
    return _Tables(
        prototypes=prototypes,
        skeleton_table=skeleton_table,
        punctuation_like=frozenset(
            chr(code)
            for code, target in skeleton_table.items()
            if chr(code) not in _URL_PUNCTUATION and any(c in _URL_PUNCTUATION for c in target)
        ),
        script_starts=[row[0] for row in rows],
        script_rows=rows,
        augmented={
            names: frozenset[str]().union(
                *(_AUGMENTED.get(name, frozenset({name})) for name in names)
            )
            for _, _, names in rows
        },
        allowed_starts=[first for first, _ in allowed],
        allowed_ends=[last for _, last in allowed],
        unicode_version=cast(str, raw["unicode_version"]),
    )


def scripts_of(char: str) -> frozenset[str]:
    """The Script_Extensions of ``char`` (ISO 15924 codes); empty if unassigned."""
    tables = _tables()
    code_point = ord(char)
    index = bisect_right(tables.script_starts, code_point) - 1
    if index >= 0:
        first, last, names = tables.script_rows[index]
        if first <= code_point <= last:
            return names
    return frozenset()


def is_identifier_character(char: str) -> bool:
    """UTS #39 IdentifierStatus=Allowed: the characters modern words are written with."""
    tables = _tables()
    code_point = ord(char)
    index = bisect_right(tables.allowed_starts, code_point) - 1
    return index >= 0 and code_point <= tables.allowed_ends[index]


def skeleton(text: str) -> str:
    """What ``text`` looks like: its UTS #39 skeleton with our additions, accents
    dropped and lowercased, so "gооglé" (Cyrillic o, accented e) and "g00gle" both give
    "google"."""
    table = _tables().skeleton_table
    if text.isascii():
        return text.translate(table).lower()
    mapped = unicodedata.normalize("NFD", text).translate(table).lower()
    return mapped if mapped.isascii() else _without_marks(mapped)


def _final_form(prototype: str) -> str:
    return _without_marks(unicodedata.normalize("NFD", prototype)).lower()


def _without_marks(text: str) -> str:
    return "".join(c for c in text if unicodedata.category(c) != "Mn")


def resolved_scripts(text: str) -> frozenset[str] | None:
    """The UTS #39 resolved script set: the scripts every character of ``text`` can be
    read in, or None when every character is common to all scripts (digits, hyphens)."""
    augmented = _tables().augmented
    result: frozenset[str] | None = None
    for char in text:
        names = scripts_of(char)
        if not names or names & _ANY_SCRIPT:
            continue
        result = augmented[names] if result is None else result & augmented[names]
    return result


def mixed_scripts(label: str) -> frozenset[str]:
    """The scripts ``label`` mixes against UTS #39's "highly restrictive" level, or an
    empty set when it is fine: one script, or ASCII Latin with Chinese, Japanese or Korean
    (how those languages write brand names), never Latin beside Cyrillic or Greek."""
    whole = resolved_scripts(label)
    if whole is None or whole:
        return frozenset()
    without_ascii = "".join(c for c in label if not c.isascii())
    rest = resolved_scripts(without_ascii)
    if rest is not None and rest & _CJK_WRITING_SYSTEMS:
        return frozenset()
    used: set[str] = set()
    for char in label:
        names = scripts_of(char)
        if names and not names & _ANY_SCRIPT:
            used.add(min(names) if len(names) > 1 else next(iter(names)))
    return frozenset(used)


def script_of_letters(label: str) -> str | None:
    """The one script all letters of ``label`` belong to, if there is one."""
    found: str | None = None
    for char in label:
        if not unicodedata.category(char).startswith("L"):
            continue
        names = scripts_of(char)
        if len(names) != 1:
            return None
        (name,) = names
        if found is not None and name != found:
            return None
        found = name
    return found


@cache
def latin_lookalikes(script: str) -> frozenset[str]:
    """The lowercase letters of ``script`` that each look like one Latin letter or digit:
    a label made only of these reads as a Latin word (Cyrillic "аррӏе" as "apple")."""
    found: set[str] = set()
    for char in _tables().prototypes:
        if (
            char == char.lower()
            and unicodedata.category(char).startswith("L")
            and scripts_of(char) == frozenset({script})
            and _is_latin_alnum(skeleton(char))
        ):
            found.add(char)
    return frozenset(found)


@cache
def digit_lookalikes() -> frozenset[str]:
    """Characters outside ASCII that look like an ASCII digit: a label of digits and these
    ("1৪") reads as a number that it is not."""
    digit_skeletons = {skeleton(digit) for digit in "0123456789"}
    return frozenset(
        char
        for char in _tables().prototypes
        if not char.isascii() and skeleton(char) in digit_skeletons
    )


def looks_like_url_punctuation(char: str) -> bool:
    """Whether ``char`` passes for "/", ".", ":", "?", "#", "@" or "\\" while not being one."""
    return char in _tables().punctuation_like


def numbering_systems(label: str) -> frozenset[int]:
    """The digit zeros (code points) of the decimal digits in ``label``: more than one
    means two numbering systems are mixed, as in "1০1" with a Bengali zero."""
    return frozenset(
        ord(char) - unicodedata.decimal(char)
        for char in label
        if unicodedata.category(char) == "Nd"
    )


def script_name(code: str) -> str:
    """A script's English name for messages ("Cyrillic"), or its ISO 15924 code."""
    return SCRIPT_NAMES.get(code, code)


def _is_latin_alnum(text: str) -> bool:
    return len(text) == 1 and ("a" <= text <= "z" or "0" <= text <= "9")
