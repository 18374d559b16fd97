"""The documentation's code type-checks in a user's strict project.

Users copy the programs of README.md and docs/*.md (taken out the way tests/test_docs.py
runs them) and examples/*.py into projects that pyright or mypy check in strict mode;
running them proves nothing about that. Each block becomes a module of a temporary
folder, and each checker runs once over all of them and the examples (one process each:
the suite shares two cores). A failure names the doc file and line of each error.

mypy runs without the pydantic plugin, as most users have it, and follows answerback's
own modules silently: only the user's code is judged, not how mypy likes the library.
"""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from pydantic import ConfigDict
from test_docs import PROGRAMS, REPO

from answerback.types import _base

EXAMPLES = sorted((REPO / "examples").glob("*.py"))
# A cold mypy run over pydantic and answerback takes a minute or more on a busy machine,
# past pytest's usual limit; a checker that hangs still fails, before pytest's alarm.
CHECKER_TIMEOUT_SECONDS = 540
pytestmark = pytest.mark.timeout(CHECKER_TIMEOUT_SECONDS + 60)
MYPY_CONFIG = """\
[mypy]
strict = True
python_version = 3.11

[mypy-answerback.*]
follow_imports = silent
"""
MYPY_ERROR = re.compile(r"^(?P<path>.+?):(?P<line>\d+): error: (?P<message>.*)$")


@dataclass(frozen=True)
class Source:
    document: str
    """Where a user reads it, relative to the repository."""
    first_line: int
    """The document's line of the file's line 1."""


@dataclass(frozen=True)
class CheckedFiles:
    folder: Path
    sources: dict[Path, Source]

    def locate(self, path: Path, line: int) -> str:
        source = self.sources[path.resolve()]
        return f"{source.document}:{source.first_line + line - 1}"


@pytest.fixture(scope="module")
def checked_files(tmp_path_factory: pytest.TempPathFactory) -> CheckedFiles:
    folder = tmp_path_factory.mktemp("doc_code")
    sources: dict[Path, Source] = {}
    for program in PROGRAMS:
        if not program.type_checked:
            continue
        stem = re.sub(r"\W", "_", Path(program.document).stem)
        # The prefix keeps a block's module name apart from every example's.
        path = folder / f"doc_{stem}_line_{program.fence_line}.py"
        path.write_text(program.code, encoding="utf-8")
        sources[path.resolve()] = Source(program.document, program.fence_line + 1)
    # Copied together, as they import one another, and under the checkers' one root.
    (folder / "examples").mkdir()
    for example in EXAMPLES:
        path = folder / "examples" / example.name
        path.write_bytes(example.read_bytes())
        sources[path.resolve()] = Source(str(example.relative_to(REPO)), 1)
    return CheckedFiles(folder, sources)


def failure_report(checker: str, errors: list[str]) -> str:
    listed = "\n".join(errors)
    return f"{checker} (strict) finds {len(errors)} errors in the docs' code:\n{listed}"


def test_every_block_and_example_is_checked(checked_files: CheckedFiles) -> None:
    documents = {source.document for source in checked_files.sources.values()}
    assert "README.md" in documents
    assert "examples/demo.py" in documents
    assert len(checked_files.sources) >= 100, "the docs' code blocks were not found"


def test_pyright_strict_accepts_the_docs(checked_files: CheckedFiles) -> None:
    config = {
        "include": ["."],
        "typeCheckingMode": "strict",
        "pythonVersion": "3.11",
    }
    config_path = checked_files.folder / "pyrightconfig.json"
    config_path.write_text(json.dumps(config), encoding="utf-8")
    command = [sys.executable, "-m", "pyright", "--outputjson", "--project", str(config_path)]
    completed = subprocess.run(
        [*command, "--pythonpath", sys.executable],
        capture_output=True,
        text=True,
        timeout=CHECKER_TIMEOUT_SECONDS,
        check=False,
    )
    assert completed.returncode in (0, 1), completed.stdout + completed.stderr
    report = json.loads(completed.stdout)
    analyzed = report["summary"]["filesAnalyzed"]
    assert analyzed == len(checked_files.sources), f"pyright checked {analyzed} files"
    errors = [
        f"{checked_files.locate(Path(found['file']), found['range']['start']['line'] + 1)}: "
        f"{found['message']}"
        for found in report["generalDiagnostics"]
        if found["severity"] == "error"
    ]
    assert not errors, failure_report("pyright", errors)
    assert completed.returncode == 0, completed.stdout


def test_mypy_strict_accepts_the_docs(checked_files: CheckedFiles) -> None:
    config_path = checked_files.folder / "mypy.ini"
    config_path.write_text(MYPY_CONFIG, encoding="utf-8")
    command = [sys.executable, "-m", "mypy", "--config-file", str(config_path)]
    completed = subprocess.run(
        [*command, "--show-absolute-path", *map(str, checked_files.sources)],
        cwd=checked_files.folder,
        capture_output=True,
        text=True,
        timeout=CHECKER_TIMEOUT_SECONDS,
        check=False,
    )
    errors: list[str] = []
    for line in completed.stdout.splitlines():
        found = MYPY_ERROR.match(line)
        if found is not None:
            where = checked_files.locate(Path(found["path"]), int(found["line"]))
            errors.append(f"{where}: {found['message']}")
    assert not errors, failure_report("mypy", errors)
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_wire_models_declare_their_config_a_class_variable() -> None:
    # Unannotated, pyright --verifytypes calls ``model_config`` an attribute of unknown
    # type on every wire model, and so every signature using one partially unknown.
    own = inspect.get_annotations(_base.MCPModel, globals=vars(_base), eval_str=True)
    assert own.get("model_config") == ClassVar[ConfigDict]
