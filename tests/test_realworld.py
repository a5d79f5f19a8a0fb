"""Real invoices nobody on this project wrote (../shared/realworld, issue 23): every file through the in-process
flows once (tests/roundtrip/realworld.py; about half a minute), then the issue's targets. bench/realworld.py prints
the same outcomes per folder."""
from __future__ import annotations

import pytest

from conftest import SHARED
from roundtrip.realworld import examine, files

REALWORLD = SHARED / "realworld"


@pytest.fixture(scope="module")
def outcomes():
    found = files(REALWORLD)
    assert len(found) >= 200, f"../shared/realworld holds {len(found)} invoices"
    return [examine(path, REALWORLD) for path in found]


def _share(outcomes, stage: str) -> tuple[float, list[str]]:
    judged = [o for o in outcomes if getattr(o, stage) != "n/a"]
    failed = [f"{o.name}: {getattr(o, stage)} " + " ".join(getattr(o, f"{stage}_diff")[2:6]) for o in judged
              if getattr(o, stage) != "same"]
    return 1 - len(failed) / len(judged), failed


def test_no_server_error(outcomes):
    errors = [f"{o.name}: {e}" for o in outcomes for e in o.server_errors]
    assert not errors, "\n".join(errors)


def test_xml_verdicts_are_the_official_rules(outcomes):
    wrong = [o.name for o in outcomes if o.kind == "xml" and o.agrees is False]
    assert not wrong, wrong
