"""Public names report their public home, so what a user reads is what a user imports.

Classes and functions live in private modules (``answerback.server._context``) and are
exported by their package (``answerback.server``). Left alone, every repr, traceback,
``help()`` page and pickle would name the private module, one that may be renamed at any
time. Each public package calls ``publish(globals())`` at the end of its ``__init__.py``
(as httpx does), and its exports then report the package as their ``__module__``.

Only objects that come from a private module of that very package move: a name the
package re-exports from elsewhere (``answerback.Client`` from ``answerback.client``)
keeps its own home. Pickle finds an object again by ``__module__`` and ``__qualname__``,
so an object moves only when the package exports it under that same name.

What moving costs, and how it is contained:

- ``typing.get_type_hints`` and pydantic evaluate a class's string annotations (every
  module here has ``from __future__ import annotations``) in ``sys.modules[__module__]``,
  where the private names they use (``Any``, ``Literal``, a helper type) are missing.
  Plain classes and dataclasses therefore have their annotations evaluated where they
  were written, before they move, so ``pydantic.TypeAdapter(DeclinedElicitation)`` keeps
  working. Pydantic models are left as written: pydantic resolved their fields when the
  class was made and reuses them for ``model_rebuild()`` and for subclasses, and doing
  this for every wire model would cost the import several milliseconds. Only
  ``typing.get_type_hints`` on a wire model fails; use ``Model.model_fields`` instead.
- A pydantic model that is not complete yet would later be built in the wrong namespace,
  so one is refused here, at import, rather than failing in a user's program.
- ``inspect.getsource`` of a moved class looks in the package's ``__init__.py`` and does
  not find it (as with httpx).
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def publish(namespace: Mapping[str, Any]) -> None:
    """Make the exports (``__all__``) of the package whose globals are *namespace* report it.

    Names in ``__all__`` that are not bound yet (loaded lazily on first use) are skipped;
    call again once they are bound. Type aliases and constants have no module to set.
    Raises ``RuntimeError`` for an export that is an incomplete pydantic model.
    """
    package: str = namespace["__name__"]
    private_prefix = f"{package}._"
    exported: Sequence[str] = namespace.get("__all__", ())
    for name in exported:
        obj: object = namespace.get(name)
        if not isinstance(obj, type | types.FunctionType):
            continue
        if not obj.__module__.startswith(private_prefix) or obj.__qualname__ != name:
            continue
        if isinstance(obj, type):
            complete: object = getattr(obj, "__pydantic_complete__", None)
            if complete is False:
                raise RuntimeError(
                    f"{obj.__module__}.{name} is not a complete pydantic model, so it cannot "
                    f"report {package} as its module (pydantic would resolve its annotations "
                    f"there): define what it refers to before {package} exports it."
                )
            if complete is None:
                _evaluate_annotations(obj)
        obj.__module__ = package


def _evaluate_annotations(cls: type) -> None:
    """Replace *cls*'s own string annotations by what they mean where it was written.

    A dataclass's fields keep a copy of each annotation (pydantic reads those), so they
    are updated too.
    """
    # The class's own dict, not a copy and not a base's: it is changed in place.
    annotations: dict[str, Any] = cls.__dict__.get("__annotations__", {})  # noqa: RUF063
    fields: dict[str, dataclasses.Field[Any]] = cls.__dict__.get("__dataclass_fields__", {})
    written_in = vars(sys.modules[cls.__module__])
    for name, annotation in annotations.items():
        if not isinstance(annotation, str):
            continue
        try:
            meaning = eval(annotation, written_in, dict(vars(cls)))
        except Exception:
            # A name imported only for type checkers: left as written, it fails later
            # exactly as it did before the move (or resolves in the package, if there).
            continue
        annotations[name] = meaning
        if name in fields:
            fields[name].type = meaning


def lazy_exports(
    namespace: dict[str, Any], modules: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` (PEP 562) for names that live in
    heavy submodules: ``modules`` maps each name to its submodule, imported on first use
    and then published like the package's other names. Why: a program that never uses
    them (a stdio server, a client that never logs in) does not pay for their imports."""
    package = namespace["__name__"]

    def load(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        publish(namespace)
        return value

    def names() -> list[str]:
        return sorted([*namespace, *modules])

    return load, names
