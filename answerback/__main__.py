"""``python -m answerback``: the same as the ``answerback`` command."""

from answerback.cli import main

raise SystemExit(main())
