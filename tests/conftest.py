"""Shared test fixtures: where ../shared lives, and the installed rule packs."""
from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = (REPO.parent / "shared").resolve()
CORPUS = SHARED / "corpus"
RULES_SOURCE = SHARED / "rules"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    assert SHARED.is_dir(), f"../shared not found next to the repository ({SHARED})"
    return SHARED
