"""The time budget's learned paces cannot lock large documents out: a refusal by a learned pace alone forgets it,
so the next such document runs (and measures the pace again) instead of being refused for as long as the process
lives (before, a slow run taught a pace, every large document was then refused, and none ran to teach a faster one)."""
from __future__ import annotations

import pytest

from pipeline import budget


def test_a_refusal_by_a_learned_pace_forgets_it(monkeypatch):
    monkeypatch.setattr(budget, "_pace", {"rules": 10 * budget.DEFAULT_PACE["rules"]})
    size = 16_000_000  # 16 MB: 26 s at the default pace, 256 s at the learned one
    token = budget.start(60)
    try:
        with pytest.raises(budget.Exhausted):
            with budget.stage("rules", size):
                pass
        with budget.stage("rules", size):  # the default pace fits the budget: it runs and learns again
            pass
    finally:
        budget.end(token)
    assert budget._pace["rules"] < budget.DEFAULT_PACE["rules"]


def test_a_spent_budget_forgets_nothing(monkeypatch):
    monkeypatch.setattr(budget, "_pace", {"rules": 2e-6})
    token = budget.start(0)
    try:
        with pytest.raises(budget.Exhausted):
            with budget.stage("rules", 1_000_000):
                pass
    finally:
        budget.end(token)
    assert budget._pace == {"rules": 2e-6}
