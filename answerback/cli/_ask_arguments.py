"""Asking a person a tool's arguments at the terminal: ``call TOOL`` in ``answerback
connect``, and ``answerback call TARGET TOOL`` run at a terminal, both given none.

A tool that requires arguments gets a form built from its ``inputSchema``
(``argument_form``), after a note naming the optional arguments the form leaves off;
when a form cannot ask a required one, the person types the arguments on one line, as
on the command line. Declining the form, or leaving the line empty, calls nothing;
cancelling either (Ctrl-C, Esc) raises ``ArgumentsCancelled``.
The two commands differ only in where the notes go, how the screen is taken from what
else uses the terminal, and what the left-off note tells the person to do instead. In
plain-line mode (``--plain``, a dumb terminal) the form and the line are asked in plain
lines, by the ``LinePresenter`` that asks the servers' questions.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, cast

from prompt_toolkit import PromptSession

from answerback.cli._argument_form import argument_form
from answerback.cli._arguments import (
    ArgumentsCancelled,
    ArgumentsError,
    parse_arguments,
    required_arguments,
    split_arguments,
)
from answerback.cli._plain import Interrupted
from answerback.cli._render import shown
from answerback.forms import FormSchemaError, UnsupportedForm, parse_form
from answerback.forms._limits import cut_description
from answerback.interact import clean
from answerback.interact.terminal import LinePresenter, ask_form
from answerback.interact.terminal._inputs import keep_to_one_line
from answerback.interact.terminal._screen import ctrl_z_ignored
from answerback.types import Tool


@asynccontextmanager
async def whole_terminal() -> AsyncGenerator[None]:
    """The screen of a command that has the terminal to itself."""
    yield


async def ask_arguments(
    tool: Tool,
    *,
    server: str,
    say: Callable[[str], None],
    instead: str,
    screen: Callable[[], AbstractAsyncContextManager[None]] = whole_terminal,
    lines: LinePresenter | None = None,
) -> dict[str, Any] | None:
    """A tool's arguments asked with a form built from its ``inputSchema`` (typed on a
    line when a form cannot ask a required one), when it requires some (otherwise its
    defaults do: ``{}``); ``None`` if the person declined, ``ArgumentsCancelled`` if they
    cancelled.

    ``server`` names the asking server on the form; ``say`` shows a note (rich markup);
    ``instead`` ends the note on the optional arguments left off the form, saying how to
    give them ("type call TOOL name=value ... instead"); ``screen`` takes the terminal
    for as long as the person answers (Ctrl-C may take it back: ``Interrupted``, a
    cancel); ``lines``, in plain-line mode, asks instead of the full screen."""
    try:
        return await _ask_arguments(tool, server, say, instead, screen, lines)
    except Interrupted:
        raise ArgumentsCancelled from None


async def _ask_arguments(
    tool: Tool,
    server: str,
    say: Callable[[str], None],
    instead: str,
    screen: Callable[[], AbstractAsyncContextManager[None]],
    lines: LinePresenter | None,
) -> dict[str, Any] | None:
    if not required_arguments(tool.input_schema):
        return {}
    asked = argument_form(tool.input_schema)
    if asked.unaskable:
        why = f"its {', '.join(sorted(asked.unaskable))}"
        return await _type_arguments(tool, why, say=say, screen=screen, lines=lines)
    try:
        form = parse_form(asked.schema)
    except (UnsupportedForm, FormSchemaError) as exc:
        fields = sorted({error.field for error in exc.errors if error.field is not None})
        why = f"its {', '.join(fields)}" if fields else str(exc)
        return await _type_arguments(tool, why, say=say, screen=screen, lines=lines)
    if asked.left_off:
        them = "it" if len(asked.left_off) == 1 else "them"
        say(
            f"[yellow]The form for {shown(tool.name)} leaves out the optional "
            f"{shown(', '.join(asked.left_off))}, which a form cannot ask: to give {them}, "
            f"{instead}.[/]"
        )
    title = tool.title or tool.name
    message = cut_description(tool.description or f"Arguments for {tool.name}")
    async with screen():
        if lines is None:
            answer = await ask_form(form, title=title, message=message, server=server)
        else:
            lines.note(f"The arguments of {clean(title)} (on {clean(server)}):")
            answer = await lines.ask_form(form, message=message)
    if answer == "cancel":
        raise ArgumentsCancelled
    return None if answer == "decline" else dict(answer)


async def _type_arguments(
    tool: Tool,
    why: str,
    *,
    say: Callable[[str], None],
    screen: Callable[[], AbstractAsyncContextManager[None]],
    lines: LinePresenter | None,
) -> dict[str, Any] | None:
    """A tool's arguments typed on one line, as on the command line, for a schema a form
    cannot show (``why``: the arguments it cannot, or what is wrong with it); ``None``
    for an empty line or Ctrl-D (a person who changed their mind), ``ArgumentsCancelled``
    for Ctrl-C. A line that cannot be read is said, and asked again with what was typed.
    A paste of several lines is joined as in a form's text field: the line shows what is
    read, where it showed the lines apart yet read them as one."""
    # The tool's own first argument: an example naming one it lacks misleads.
    properties: object = tool.input_schema.get("properties")
    first = "name"
    if isinstance(properties, dict) and properties:
        first = str(next(iter(cast(dict[object, object], properties))))
    say(
        f"[yellow]A form cannot ask the arguments of {shown(tool.name)} ({shown(why)}): "
        f"type them as {shown(first)}=... or one JSON object such as "
        f'{{"{shown(first)}": ...}}, split as a shell splits words; an empty line does not '
        "call it.[/]"
    )
    text = ""
    asking = f"{clean(tool.name, newlines=False)} arguments: "  # the server's name for it
    read = _arguments_line(asking, lines)
    async with screen():
        while True:
            try:
                text = await read(text)
            except EOFError:
                return None
            except KeyboardInterrupt:
                raise ArgumentsCancelled from None
            if not text.strip():
                return None
            try:
                return parse_arguments(split_arguments(text), tool.input_schema)
            except ArgumentsError as exc:
                say(f"[red]{shown(str(exc))}[/]")


def _arguments_line(asking: str, lines: LinePresenter | None) -> Callable[[str], Awaitable[str]]:
    """What reads the arguments line, given what was typed before: prompt_toolkit's
    line starts with it, to be put right; a plain line cannot hold it, so it is typed
    again."""
    if lines is not None:
        return lambda _typed: lines.read_line(asking)
    line = PromptSession[str](key_bindings=ctrl_z_ignored())
    line.default_buffer.on_text_changed += keep_to_one_line  # as a form's text field
    return lambda typed: line.prompt_async(asking, default=typed, handle_sigint=False)
