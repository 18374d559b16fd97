"""Shared fixtures: every async test runs on asyncio through anyio's pytest plugin."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """answerback is tested on asyncio (its stdio server pipes are asyncio-native)."""
    return "asyncio"
