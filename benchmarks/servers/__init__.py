"""The benchmark servers, one per implementation plus the hand-written floors.

Each module here also runs as a script (stdio, or ``--http PORT``), importing nothing
from the ``benchmarks`` package, so a subprocess needs only the installed libraries.
"""
