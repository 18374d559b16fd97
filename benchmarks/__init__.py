"""answerback's benchmark suite: the same scenarios against answerback and the official SDK.

Run it with ``make bench`` or ``python -m benchmarks.run`` (``--quick`` for a smoke run).
"""
