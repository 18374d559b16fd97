"""Build ``unicode_tables.json``, the Unicode facts the URL verdict needs, from ICU.

Where the data comes from: ICU's own copy of the Unicode data, read through PyICU. On
Debian that is ``apt-get install python3-icu`` (ICU 72.1, Unicode 15.0), run with the
system interpreter::

    /usr/bin/python3 answerback/urls/data/generate_unicode_tables.py          # rewrite
    /usr/bin/python3 answerback/urls/data/generate_unicode_tables.py --check  # compare

It writes three tables, nothing of ours mixed in (our own additions live in
``answerback/urls/_tables.py``, where a reader sees them):

- ``prototypes``: UTS #39 confusable prototypes (confusables.txt), as ICU's spoof
  checker gives them: for each character that NFD leaves alone and whose skeleton
  differs from itself, that skeleton.
- ``scripts``: the Script_Extensions property as ranges ``[first, last, "Latn"]`` (a
  space-separated list where a character belongs to several scripts); unassigned code
  points are left out.
- ``allowed``: UTS #39 IdentifierStatus=Allowed (ICU's recommended set and inclusion
  set), as ranges ``[first, last]``.

The library reads the committed file and never needs ICU; this script is for whoever
updates the data to a newer Unicode version.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

TARGET = Path(__file__).with_name("unicode_tables.json")
LAST_CODE_POINT = 0x10FFFF
SURROGATES = range(0xD800, 0xE000)


def build(icu: Any) -> dict[str, Any]:
    """Every table, from the ICU that ``icu`` (the PyICU module) wraps."""
    checker = icu.SpoofChecker()
    nfd = icu.Normalizer2.getNFDInstance()
    prototypes: dict[str, str] = {}
    spans: list[list[Any]] = []
    for code_point in range(LAST_CODE_POINT + 1):
        if code_point in SURROGATES:
            continue
        char = chr(code_point)
        if icu.Script.getScript(char).getShortName() == "Zzzz":
            continue
        codes = icu.Script.getScriptExtensions(char)
        names = " ".join(sorted(icu.Script(code).getShortName() for code in codes))
        if spans and spans[-1][1] == code_point - 1 and spans[-1][2] == names:
            spans[-1][1] = code_point
        else:
            spans.append([code_point, code_point, names])
        if nfd.normalize(char) == char:
            skeleton = checker.getSkeleton(0, char)
            if skeleton != char:
                prototypes[char] = skeleton
    allowed = icu.UnicodeSet(icu.SpoofChecker.getRecommendedUnicodeSet())
    allowed.addAll(icu.SpoofChecker.getInclusionUnicodeSet())
    ranges = [
        # PyICU hands range ends back as one-character strings.
        [ord(allowed.getRangeStart(index)), ord(allowed.getRangeEnd(index))]
        for index in range(allowed.getRangeCount())
    ]
    return {
        "source": "ICU spoof checker and script data, read with PyICU",
        "icu_version": icu.ICU_VERSION,
        "unicode_version": icu.UNICODE_VERSION,
        "prototypes": prototypes,
        "scripts": spans,
        "allowed": ranges,
    }


def render(tables: dict[str, Any]) -> str:
    """The file's text: one table row a line, so a data update reads as a small diff."""
    prototypes: dict[str, str] = tables["prototypes"]
    scripts: list[list[Any]] = tables["scripts"]
    allowed: list[list[int]] = tables["allowed"]
    lines = ["{"]
    lines.extend(
        f"{json.dumps(key)}: {json.dumps(tables[key])},"
        for key in ("source", "icu_version", "unicode_version")
    )
    lines.append('"prototypes": {')
    lines.append(",\n".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in prototypes.items()))
    lines.append("},")
    lines.append('"scripts": [')
    lines.append(",\n".join(json.dumps(row) for row in scripts))
    lines.append("],")
    lines.append('"allowed": [')
    lines.append(",\n".join(json.dumps(row) for row in allowed))
    lines.append("]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    icu = importlib.import_module("icu")
    text = render(build(icu))
    if "--check" in argv:
        if TARGET.read_text(encoding="utf-8") != text:
            print(f"{TARGET.name} differs from ICU {icu.ICU_VERSION}'s data: rerun without --check")
            return 1
        print(f"{TARGET.name} matches ICU {icu.ICU_VERSION}")
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
