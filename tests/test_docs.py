"""Every Python code block in the documentation runs, and prints what the text says.

The blocks are taken from ``README.md`` and ``docs/*.md``: each fenced block whose info
string is ``python`` is a complete program, run here as a subprocess with this
interpreter from the repository root, and must exit with status 0. A block fenced as
``python skip`` is a fragment or needs something the tests do not start (an HTTP
server) and is left out. When a block is followed by a sentence saying what it
"prints" and then a ``text`` block, the program's output must be exactly that text.

tests/test_docs_types.py type-checks the same programs in strict mode, as a user who
copies them into a strict project would. A block fenced as ``python mistake`` shows a
type error on purpose (a wrong log level, whose run-time refusal the text explains): it
is run here but not type-checked.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(?P<info>[^`]*)$")
# Generous: each program takes well under a second; this only stops a hang.
TIMEOUT_SECONDS = 60


@dataclass(frozen=True)
class Block:
    info: str
    line: int
    code: str
    prose_after: str = ""
    """The text between this block and the next one."""


@dataclass(frozen=True)
class Program:
    document: str
    """The Markdown file, relative to the repository."""
    fence_line: int
    """The line of the opening fence: the code's first line is the one after it."""
    code: str
    expected_output: str | None
    type_checked: bool
    """False for a ``python mistake`` block, which shows a type error on purpose."""

    @property
    def where(self) -> str:
        return f"{self.document}:{self.fence_line}"


def fenced_blocks(path: Path) -> list[Block]:
    blocks: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    index = 0
    prose: list[str] = []
    while index < len(lines):
        match = FENCE.match(lines[index])
        if match is None:
            prose.append(lines[index])
            index += 1
            continue
        if blocks:
            last = blocks[-1]
            blocks[-1] = Block(last.info, last.line, last.code, "\n".join(prose))
        start = index
        index += 1
        body: list[str] = []
        while index < len(lines) and lines[index] != "```":
            body.append(lines[index])
            index += 1
        if index == len(lines):
            raise AssertionError(f"{path.name}:{start + 1}: code block is never closed")
        blocks.append(Block(match["info"].strip(), start + 1, "\n".join(body) + "\n"))
        prose = []
        index += 1
    return blocks


def programs() -> list[Program]:
    found: list[Program] = []
    for path in DOCUMENTS:
        if not path.exists():
            continue
        blocks = fenced_blocks(path)
        for position, block in enumerate(blocks):
            words = block.info.split()
            if not words or words[0] != "python" or "skip" in words[1:]:
                continue
            expected: str | None = None
            following = blocks[position + 1] if position + 1 < len(blocks) else None
            if following is not None and following.info == "text" and "prints" in block.prose_after:
                expected = following.code
            found.append(
                Program(
                    document=str(path.relative_to(REPO)),
                    fence_line=block.line,
                    code=block.code,
                    expected_output=expected,
                    type_checked="mistake" not in words[1:],
                )
            )
    return found


PROGRAMS = programs()


def test_documentation_has_programs() -> None:
    assert len(PROGRAMS) >= 10, "the documentation's code blocks were not found"


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.where for p in PROGRAMS])
def test_code_block_runs(program: Program) -> None:
    completed = subprocess.run(
        [sys.executable, "-c", program.code],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
        check=False,
    )
    assert completed.returncode == 0, (
        f"{program.where} exited with {completed.returncode}\n"
        f"--- stdout ---\n{completed.stdout}\n--- stderr ---\n{completed.stderr}"
    )
    if program.expected_output is not None:
        assert completed.stdout == program.expected_output, (
            f"{program.where} printed something else than the text after it says"
        )
