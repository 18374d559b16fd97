"""Every public name has a docstring, so ``help()`` and an editor's hover say what it does.

Checked: each name a public package exports (its ``__all__``) that is a class or function
defined in answerback, and every public method and property of those classes, including
the ones they inherit from answerback's own (private) base classes. An override may
leave its docstring to the method it overrides. pydantic's and Enum's machinery is
theirs to document, not ours; type aliases and constants cannot carry one.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
from collections.abc import Mapping

import pytest

PACKAGES = [
    "answerback",
    "answerback.cli",
    "answerback.client",
    "answerback.forms",
    "answerback.interact",
    "answerback.interact.sampling",
    "answerback.interact.terminal",
    "answerback.jsonrpc",
    "answerback.server",
    "answerback.transports",
    "answerback.transports.http",
    "answerback.types",
    "answerback.urls",
]
"""Every public package: a new one goes here too."""


def _ours(obj: object) -> bool:
    module = getattr(obj, "__module__", None)
    return isinstance(module, str) and module.split(".")[0] == "answerback"


def _class_doc(cls: type) -> str | None:
    """The class's own docstring; the signature a dataclass writes for itself is none."""
    doc = cls.__dict__.get("__doc__")
    if not isinstance(doc, str) or not doc.strip():
        return None
    if dataclasses.is_dataclass(cls):
        signature = str(inspect.signature(cls)).replace(" -> None", "")
        if doc == cls.__name__ + signature:
            return None
    return doc


def _doc(attr: object) -> str | None:
    function = getattr(attr, "__func__", attr)  # a staticmethod's or classmethod's
    doc = getattr(function, "__doc__", None)
    return doc if isinstance(doc, str) and doc.strip() else None


def _public_members(cls: type) -> list[str]:
    """Public methods and properties, from ``cls`` and its answerback base classes."""
    found: list[str] = []
    for klass in cls.__mro__:
        if not _ours(klass):
            continue
        for name, attr in vars(klass).items():
            if name.startswith("_") or name in found:
                continue
            function = getattr(attr, "__func__", attr)
            if isinstance(attr, property | functools.cached_property) or inspect.isfunction(
                function
            ):
                found.append(name)
    return found


def _member_doc(cls: type, name: str) -> str | None:
    """The member's docstring, or else that of the member it overrides."""
    for klass in cls.__mro__:
        if name in vars(klass):
            doc = _doc(vars(klass)[name])
            if doc is not None:
                return doc
    return None


def undocumented(exports: Mapping[str, object]) -> list[str]:
    """The exported names, and ``Class.member`` names, that lack a docstring."""
    missing: list[str] = []
    for name, obj in exports.items():
        if not _ours(obj):
            continue
        if inspect.isclass(obj):
            if _class_doc(obj) is None:
                missing.append(name)
            for member in _public_members(obj):
                if _member_doc(obj, member) is None:
                    missing.append(f"{name}.{member}")
        elif inspect.isfunction(obj) and not inspect.getdoc(obj):
            missing.append(name)
    return missing


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_has_a_docstring(package: str) -> None:
    module = importlib.import_module(package)
    exports: dict[str, object] = {name: getattr(module, name) for name in module.__all__}
    missing = undocumented(exports)
    assert not missing, (
        f"{package}: these public names have no docstring: {', '.join(missing)}. Say what "
        "each is for, and what it returns and raises where that is not obvious."
    )


def test_the_check_finds_each_kind_of_missing_docstring() -> None:
    class Base:
        def inherited(self) -> None:
            pass

        def overridden(self) -> None:
            """Documented once, for every override."""

    class Documented(Base):
        """Has a docstring; some of its members do not."""

        def method(self) -> None:
            pass

        @property
        def value(self) -> int:
            return 1

        @functools.cached_property
        def cached(self) -> int:
            return 1

        def overridden(self) -> None:
            pass

        def _private(self) -> None:
            pass

    @dataclasses.dataclass
    class Data:
        number: int

    def function() -> None:
        pass

    def foreign() -> None:
        pass

    for obj in (Base, Documented, Data, function):
        obj.__module__ = "answerback.example"
    exports: dict[str, object] = {
        "Documented": Documented,
        "Data": Data,
        "function": function,
        "foreign": foreign,
    }
    assert undocumented(exports) == [
        "Documented.method",
        "Documented.value",
        "Documented.cached",
        "Documented.inherited",
        "Data",
        "function",
    ]
