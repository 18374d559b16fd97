"""Canonical JSON: the one text of a value that digests of it are taken over.

A question's key and a request state's binding are digests that a later round must
reproduce, perhaps on another replica. Keys are sorted because a dict built from a set
(a schema's properties, say) iterates in a different order in another process; anything
JSON cannot hold is written as its ``str`` rather than failing the request. The encoder
is built once: ``json.dumps`` with options builds a new one per call, which cost more
than the encoding itself on these small values.
"""

from __future__ import annotations

import json
from typing import Any

_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)


def canonical_json(value: Any) -> str:
    """``value`` as compact JSON with sorted keys."""
    return _ENCODER.encode(value)
