"""A ``Context`` method's arguments, checked at the call, before anything is sent.

A tool author's mistake (``ctx.sample("hi", max_tokens="5")``, ``ctx.log("loud", ...)``)
must fail where it was written, in both protocol generations alike, with an error that
names the method and the argument and says what to pass: not as pydantic's error about
an internal params model, a ``TypeError`` from deep inside, or a message the client
refuses (or mangles) once it went out. A value of the wrong type is a ``TypeError``, a
value of the right type that is not allowed (an unknown logging level) a ``ValueError``;
the tool then fails the usual way, with an error result carrying the message.

The checks are ``isinstance`` tests, cheap enough for ``ctx.elicit`` on a 2026-07-28
retry, which runs them again every round. The client's methods have their own checks,
worded alike (``answerback.client._arguments``).
"""

from __future__ import annotations

import math
from types import BuiltinFunctionType, FunctionType, MethodType

from answerback.types import LoggingLevel, ModelPreferences

LOG_LEVELS: tuple[LoggingLevel, ...] = (
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency",
)  # fmt: skip
"""The levels of ``notifications/message``, least severe first."""

JSON_ADVICE = "Pass JSON values only: strings, numbers, booleans, None, lists and dicts."
"""What to pass instead of a value JSON cannot carry."""

SAMPLING_ADVICE = {
    "model_preferences": "Pass a ModelPreferences(hints=[ModelHint(name=...)], ...), or None.",
    "metadata": "Pass a dict of JSON values, or None.",
    "stop_sequences": "Pass a list of strings, or None.",
}
"""What to pass instead, for the sampling arguments pydantic judges inside (a dict's
values, a list's items): said by ``ctx.sample`` and ``ctx.session.create_message``."""


def wrong_type(call: str, argument: str, expected: str, value: object, advice: str) -> TypeError:
    """The error for ``argument`` of ``call`` that is not ``expected``."""
    return TypeError(
        f"Invalid argument for {call}: {argument} must be {expected}, not {_kind(value)}. {advice}"
    )


def bad_value(call: str, argument: str, problem: str, advice: str) -> ValueError:
    """The error for ``argument`` of ``call`` of the right type but not allowed."""
    return ValueError(f"Invalid argument for {call}: {argument} {problem}. {advice}")


def unsendable(call: str, argument: str, exc: Exception, advice: str) -> TypeError:
    """The error for ``argument`` of ``call`` that cannot be sent as JSON."""
    return TypeError(
        f"Invalid argument for {call}: {argument} cannot be sent as JSON ({exc}). {advice}"
    )


def check_text(call: str, argument: str, value: object, advice: str) -> None:
    """Refuse ``value`` unless it is a string."""
    if not isinstance(value, str):
        raise wrong_type(call, argument, "a string", value, advice)


def check_optional_text(call: str, argument: str, value: object, advice: str) -> None:
    """Refuse ``value`` unless it is a string or ``None``."""
    if value is not None and not isinstance(value, str):
        raise wrong_type(call, argument, "a string or None", value, advice)


def check_count(call: str, argument: str, value: object, advice: str) -> None:
    """Refuse ``value`` unless it is an ``int`` (not a ``bool``) of at least 1."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise wrong_type(call, argument, "an int", value, advice)
    if value < 1:
        raise bad_value(call, argument, f"must be at least 1, not {value}", advice)


def check_number(call: str, argument: str, value: object, advice: str) -> None:
    """Refuse ``value`` unless it is a finite ``int`` or ``float`` (not a ``bool``)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise wrong_type(call, argument, "a number (int or float)", value, advice)
    if not math.isfinite(value):
        raise bad_value(
            call, argument, f"must be a finite number, not {value}: JSON cannot carry it", advice
        )


def check_choice(
    call: str, argument: str, value: object, choices: tuple[str, ...], advice: str
) -> None:
    """Refuse ``value`` unless it is one of ``choices`` (the advice lists them)."""
    if value in choices:
        return
    listed = ", ".join(map(repr, choices))
    if not isinstance(value, str):
        raise wrong_type(call, argument, f"one of {listed}", value, advice)
    raise bad_value(call, argument, f"must be one of {listed}, not {value!r}", advice)


def check_log_arguments(call: str, level: object, logger: object) -> None:
    """Refuse a logging level that is not one of ``LOG_LEVELS``, or a logger name that
    is not a string: whether or not the client wants the message, so the mistake shows
    on every client alike."""
    if level not in LOG_LEVELS:
        check_choice(call, "level", level, LOG_LEVELS, "Pass one of those levels, as a string.")
    check_optional_text(call, "logger", logger, "Pass the logger's name as a string, or None.")


def check_progress(call: str, progress: object, total: object, message: object) -> None:
    """Refuse progress that is no finite number, or a message that is no string: whether
    or not the client asked for progress, so the mistake shows on every client alike."""
    check_number(call, "progress", progress, "Pass how far the work has got, as a number.")
    if total is not None:
        check_number(call, "total", total, "Pass how far the work goes, as a number, or None.")
    check_optional_text(
        call, "message", message, "Pass a short text for the person to read, or None."
    )


INCLUDE_CONTEXT = ("none", "thisServer", "allServers")
"""The values of a sampling request's ``includeContext``."""


def check_sampling_options(
    call: str,
    max_tokens: object,
    system_prompt: object,
    temperature: object,
    stop_sequences: object,
    metadata: object,
    model_preferences: object,
    include_context: object,
) -> None:
    """Refuse the sampling options ``ctx.sample`` and ``ctx.session.create_message`` both
    take, of the wrong type (what is inside a dict, and the items of ``stop_sequences``,
    pydantic judges when the params are built: ``SAMPLING_ADVICE``)."""
    check_count(
        call, "max_tokens", max_tokens, "Pass the most tokens the model may write, as an int."
    )
    check_optional_text(call, "system_prompt", system_prompt, "Pass a string, or None.")
    if temperature is not None:
        check_number(call, "temperature", temperature, "Pass a number (e.g. 0.7), or None.")
    if stop_sequences is not None and (
        isinstance(stop_sequences, str) or not isinstance(stop_sequences, list | tuple)
    ):
        raise wrong_type(
            call,
            "stop_sequences",
            "a list of strings",
            stop_sequences,
            "Pass a list of strings, or None (one stop sequence is ['END']).",
        )
    if metadata is not None and not isinstance(metadata, dict):
        raise wrong_type(call, "metadata", "a dict", metadata, SAMPLING_ADVICE["metadata"])
    if model_preferences is not None and not isinstance(model_preferences, ModelPreferences | dict):
        raise wrong_type(
            call,
            "model_preferences",
            "a ModelPreferences",
            model_preferences,
            SAMPLING_ADVICE["model_preferences"],
        )
    if include_context is not None:
        check_choice(
            call,
            "include_context",
            include_context,
            INCLUDE_CONTEXT,
            "Pass one of those, as a string, or None (the client's own default).",
        )


def _kind(value: object) -> str:
    """``value`` as an error names it: ``None``, a class or function by its name, anything
    else by its type and (if short) its repr."""
    if value is None:
        return "None"
    if isinstance(value, type):
        return f"the class {value.__name__}"
    if isinstance(value, FunctionType | MethodType | BuiltinFunctionType):
        return f"the function {value.__qualname__}"
    shown = repr(value)
    name = type(value).__name__
    return f"{name} ({shown})" if len(shown) <= 40 else name
