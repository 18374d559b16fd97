"""The data the URL verdict ships with: where it comes from, and that it holds together."""

from __future__ import annotations

import shutil
import subprocess
from importlib import resources
from pathlib import Path

import pytest

from answerback.urls import _domains, _unicode

REPO = Path(__file__).resolve().parent.parent
GENERATOR = REPO / "answerback" / "urls" / "data" / "generate_unicode_tables.py"
# Debian's python3-icu is built for the system interpreter, not for the project's venv.
SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin")


def test_data_files_ship_inside_the_package() -> None:
    data = resources.files("answerback.urls").joinpath("data")
    assert data.joinpath("unicode_tables.json").is_file()
    assert data.joinpath("top_domains.txt").is_file()


def _system_python_has_icu() -> bool:
    if SYSTEM_PYTHON is None:
        return False
    probe = subprocess.run([SYSTEM_PYTHON, "-c", "import icu"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.mark.skipif(
    not _system_python_has_icu(),
    reason="regenerating the Unicode tables needs PyICU (Debian: apt-get install python3-icu)",
)
def test_unicode_tables_are_what_the_generator_makes_from_icu() -> None:
    assert SYSTEM_PYTHON is not None
    completed = subprocess.run(
        [SYSTEM_PYTHON, str(GENERATOR), "--check"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_every_top_domain_is_a_registrable_domain() -> None:
    for domain in _domains.top_domains():
        assert _domains.split_host(domain).registrable == domain, domain


def test_no_two_top_domains_look_alike() -> None:
    domains = _domains.top_domains()
    skeletons = {_unicode.skeleton(domain) for domain in domains}
    assert len(skeletons) == len(domains)


def test_well_known_sites_are_not_lookalikes_of_each_other() -> None:
    for domain in _domains.top_domains():
        assert _domains.lookalike_domain(domain, domain) is None
        name = domain.split(".", 1)[0]
        assert _domains.lookalike_brand(name) is None, name


def test_the_cyrillic_letters_browsers_know_as_latin_lookalikes_are_known_here() -> None:
    # Chromium's IDN documentation lists these Cyrillic letters as looking like Latin ones.
    published = "асԁеһіјӏорԛѕԝхуъьҽпгѵѡ"
    assert set(published) <= _unicode.latin_lookalikes("Cyrl")


def test_scripts_and_identifier_characters() -> None:
    assert _unicode.scripts_of("a") == {"Latn"}
    assert _unicode.scripts_of("а") == {"Cyrl"}  # noqa: RUF001
    assert _unicode.scripts_of("ー") == {"Hira", "Kana"}
    assert _unicode.scripts_of("\U000e0001") == {"Zyyy"}
    assert _unicode.scripts_of("\U0010fffd") == frozenset()
    assert _unicode.is_identifier_character("ü")
    assert not _unicode.is_identifier_character("☃")
    assert _unicode.mixed_scripts("раypal") == {"Cyrl", "Latn"}  # noqa: RUF001
    assert _unicode.mixed_scripts("google日本") == frozenset()
    assert _unicode.mixed_scripts("münchen") == frozenset()
