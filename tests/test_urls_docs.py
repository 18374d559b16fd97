"""Every program in docs/url-safety.md runs and prints what the page says it prints.

Each ```python block is a complete program, run here with this interpreter from the
repository root; where the next block is a ```text block introduced by "It prints", the
program's output must be exactly that text.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "url-safety.md"
BLOCK = re.compile(r"^```(?P<info>\w*)\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Program:
    line: int
    code: str
    prints: str | None


def programs() -> list[Program]:
    text = PAGE.read_text(encoding="utf-8")
    blocks = list(BLOCK.finditer(text))
    found: list[Program] = []
    for index, block in enumerate(blocks):
        if block["info"] != "python":
            continue
        prints: str | None = None
        if index + 1 < len(blocks):
            following = blocks[index + 1]
            between = text[block.end() : following.start()]
            if following["info"] == "text" and "It prints" in between:
                prints = following["body"]
        line = text.count("\n", 0, block.start()) + 1
        found.append(Program(line=line, code=block["body"], prints=prints))
    return found


PROGRAMS = programs()


def test_the_page_has_programs_with_their_output() -> None:
    assert len(PROGRAMS) >= 5
    assert all(program.prints is not None for program in PROGRAMS)


@pytest.mark.parametrize("program", PROGRAMS, ids=[f"line{p.line}" for p in PROGRAMS])
def test_program_prints_what_the_page_says(program: Program) -> None:
    completed = subprocess.run(
        [sys.executable, "-c", program.code],
        cwd=REPO,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == program.prints
