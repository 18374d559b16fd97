"""Build answerback as a user gets it and run an example from the installed wheel.

The test suite imports answerback from the checkout, where every file is present. A user
imports it from a wheel, which holds only what the build configuration put there: a
data file or ``py.typed`` left out of the package would pass every test and break every
install. So ``make test`` runs this script, which

1. builds the sdist and, from it, the wheel (``python -m build``, as a release would),
2. checks that both hold what they must (the wheel: every file of the package in the
   checkout, ``py.typed`` and the URL data files among them; the sdist: the license,
   readme, changelog and build configuration),
3. installs the wheel into a fresh virtual environment outside the checkout,
4. runs ``examples/answering_layer.py`` (forms, URL verdicts and their data files, the
   client and an in-process server) there, from a directory that is not the checkout,
   and compares its output with the same program run from the checkout.

Run ``python scripts/check_package.py`` (or ``make package``). ``--dist DIR`` checks the
artifacts already in DIR instead of building them. pip may fetch answerback's
dependencies from the package index; its cache makes later runs quick. Exits 1 with
what is wrong and what to do.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "answerback"
EXAMPLE = REPO / "examples" / "answering_layer.py"
# Named explicitly too, so a failure says what users lose: type checking, and URL safety.
WHEEL_MUST_HOLD = (
    "answerback/py.typed",
    "answerback/urls/data/top_domains.txt",
    "answerback/urls/data/unicode_tables.json",
)
SDIST_MUST_HOLD = ("LICENSE", "README.md", "CHANGELOG.md", "pyproject.toml")
# Building and installing take seconds; this only turns a hang into a failure.
STEP_TIMEOUT_SECONDS = 600
PROBE = """\
import importlib.metadata, importlib.resources, answerback
print(answerback.__file__)
assert importlib.metadata.version("answerback") == answerback.__version__, (
    importlib.metadata.version("answerback"), answerback.__version__)
assert importlib.resources.files("answerback").joinpath("py.typed").is_file()
"""


class CheckFailed(Exception):
    """One check failed; the message says what and what to do."""


def package_files() -> set[str]:
    """Every file of the package in the checkout, as the wheel names it."""
    return {
        path.relative_to(REPO).as_posix()
        for path in PACKAGE.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def check_wheel(wheel: Path) -> None:
    """The wheel holds every file of the package, and the license."""
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    missing = sorted((package_files() | set(WHEEL_MUST_HOLD)) - names)
    if not any(name.endswith(".dist-info/licenses/LICENSE") for name in names):
        missing.append("*.dist-info/licenses/LICENSE")
    if missing:
        raise CheckFailed(
            f"{wheel.name} lacks {len(missing)} file(s) of the checkout: "
            + ", ".join(missing)
            + ". Fix the build configuration ([tool.hatch.build] in pyproject.toml) so the "
            "wheel includes them."
        )


def check_sdist(sdist: Path) -> None:
    """The sdist holds what a rebuild and its reader need besides the package."""
    with tarfile.open(sdist) as archive:
        names = {name.partition("/")[2] for name in archive.getnames()}
    missing = [name for name in SDIST_MUST_HOLD if name not in names]
    if missing:
        raise CheckFailed(
            f"{sdist.name} lacks {', '.join(missing)}. Make sure the file(s) exist at the top "
            "of the checkout and are not excluded by .gitignore or [tool.hatch.build]."
        )


def run(command: list[str], what: str, cwd: Path | None = None) -> str:
    """Run *command*; its stdout, or ``CheckFailed`` with everything it printed."""
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    completed = subprocess.run(
        command,
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT_SECONDS,
        check=False,
    )
    if completed.returncode != 0:
        raise CheckFailed(
            f"{what} failed (exit code {completed.returncode}): {' '.join(command)}\n"
            f"--- stdout ---\n{completed.stdout}--- stderr ---\n{completed.stderr}"
        )
    return completed.stdout


def build(dist: Path) -> None:
    """The sdist, then the wheel built from it (what a release uploads)."""
    run([sys.executable, "-m", "build", "--outdir", str(dist), str(REPO)], "python -m build")


def only(dist: Path, pattern: str) -> Path:
    found = sorted(dist.glob(pattern))
    if len(found) != 1:
        raise CheckFailed(
            f"expected one {pattern} in {dist}, found {[p.name for p in found] or 'none'}."
        )
    return found[0]


def install_and_run(wheel: Path, work: Path) -> list[str]:
    """Install *wheel* into a new virtual environment; run the example there and here."""
    venv = work / "venv"
    # No pip inside: this interpreter's pip installs into it (quicker, and the same pip).
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], "creating a virtualenv")
    python = venv / "bin" / "python"
    run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", str(wheel)],
        f"installing {wheel.name} into a fresh virtualenv",
    )
    # Away from the checkout, and isolated (-I: no script directory, no PYTHON* variables,
    # no user site-packages), so answerback can only come from the installed wheel.
    elsewhere = work / "elsewhere"
    elsewhere.mkdir()
    example = elsewhere / EXAMPLE.name
    shutil.copyfile(EXAMPLE, example)
    where = run([str(python), "-I", "-c", PROBE], "importing the installed wheel", elsewhere)
    if not Path(where.strip()).is_relative_to(venv):
        raise CheckFailed(f"answerback was imported from {where.strip()}, not from {venv}.")
    from_wheel = run([str(python), "-I", example.name], f"{EXAMPLE.name} from the wheel", elsewhere)
    from_checkout = run(
        [sys.executable, "-I", example.name], f"{EXAMPLE.name} from the checkout", elsewhere
    )
    if not from_wheel.strip() or from_wheel != from_checkout:
        raise CheckFailed(
            f"{EXAMPLE.name} printed something else from the wheel than from the checkout:\n"
            f"--- wheel ---\n{from_wheel}--- checkout ---\n{from_checkout}"
        )
    return from_wheel.splitlines()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/check_package.py", description=__doc__)
    parser.add_argument("--dist", type=Path, help="check the sdist and wheel already in DIR")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="answerback-package-") as temporary:
        work = Path(temporary)
        dist: Path = args.dist if args.dist is not None else work / "dist"
        try:
            if args.dist is None:
                build(dist)
            sdist = only(dist, "answerback-*.tar.gz")
            wheel = only(dist, "answerback-*.whl")
            check_sdist(sdist)
            check_wheel(wheel)
            lines = install_and_run(wheel, work)
        except CheckFailed as failure:
            print(f"package check: {failure}", file=sys.stderr)
            return 1
    print(
        f"package check: {sdist.name} and {wheel.name} hold every file; installed in a fresh "
        f"virtualenv, {EXAMPLE.name} printed the same {len(lines)} lines as from the checkout."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
