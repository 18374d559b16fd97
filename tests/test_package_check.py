"""The package check (``make package``) catches a wheel that lacks a file of the package.

The full check builds and installs a wheel, which ``make test`` runs on its own; here it
is handed artifacts made to lack one file, and must refuse them, naming the file.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "check_package.py"
SDIST_TOP = ("LICENSE", "README.md", "CHANGELOG.md", "pyproject.toml")


def package_files() -> list[Path]:
    return [
        path
        for path in (REPO / "answerback").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    ]


def make_dist(dist: Path, *, leave_out: str) -> None:
    """An sdist and a wheel of the checkout, the wheel without *leave_out*."""
    with tarfile.open(dist / "answerback-0.0.0.tar.gz", "w:gz") as sdist:
        for name in SDIST_TOP:
            sdist.add(REPO / name, arcname=f"answerback-0.0.0/{name}")
    with zipfile.ZipFile(dist / "answerback-0.0.0-py3-none-any.whl", "w") as wheel:
        for path in package_files():
            name = path.relative_to(REPO).as_posix()
            if name != leave_out:
                wheel.write(path, name)
        wheel.write(REPO / "LICENSE", "answerback-0.0.0.dist-info/licenses/LICENSE")


@pytest.mark.parametrize(
    "leave_out",
    [
        "answerback/py.typed",
        "answerback/urls/data/unicode_tables.json",
        "answerback/client/_client.py",
    ],
)
def test_a_wheel_without_a_package_file_is_refused(tmp_path: Path, leave_out: str) -> None:
    make_dist(tmp_path, leave_out=leave_out)
    completed = subprocess.run(
        [sys.executable, str(SCRIPT), "--dist", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 1, completed.stdout + completed.stderr
    assert completed.stderr.startswith(
        f"package check: answerback-0.0.0-py3-none-any.whl lacks 1 file(s) of the checkout: "
        f"{leave_out}. Fix the build configuration"
    ), completed.stderr
