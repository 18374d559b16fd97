"""A form asked in line mode on the terminal it runs in, for the terminal tests.

``LinePresenter`` is what a program uses when it has no screen to draw; here it reads
the keyboard of a real terminal (tmux), so a test types its answers as a person would.
The form was answered before (``previous``): its name and note are shown in brackets,
and guests shows its default. The answer (or how the form was refused) is printed as
JSON on stdout. Run: ``python tests/servers/line_form.py``.
"""

from __future__ import annotations

import json

import anyio

from answerback.forms import parse_form
from answerback.interact.terminal import LinePresenter

BOOKING = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name"},
        "note": {"type": "string", "title": "Note"},
        "guests": {"type": "integer", "title": "Guests", "default": 2},
    },
    "required": ["name"],
}


async def main() -> None:
    answer = await LinePresenter().ask_form(
        parse_form(BOOKING),
        message="Book a table",
        previous={"name": "Ada", "note": "by the window"},
    )
    print(json.dumps(answer))


if __name__ == "__main__":
    anyio.run(main)
