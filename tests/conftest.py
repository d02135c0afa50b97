"""Shared fixtures: one offline web (real pages, hostile pages, search) per test session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sleuth.testing import OfflineWeb

CORPUS_DIR = Path(__file__).parent / "data" / "corpus"


@pytest.fixture(scope="session")
def web() -> Iterator[OfflineWeb]:
    """A started ``OfflineWeb`` over ``tests/data/corpus``, shared by the whole session.

    Tests that read the request log call ``web.reset_log()`` themselves; tests that
    change ``latency`` or ``search_failures`` put them back when they are done.
    """
    with OfflineWeb(CORPUS_DIR) as world:
        yield world
