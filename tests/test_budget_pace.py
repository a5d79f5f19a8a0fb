"""The time budget's estimates (pipeline.budget): learned paces cannot lock large documents out (a refusal by a
learned pace alone forgets it, so the next such document runs and measures the pace again, instead of being refused
for as long as the process lives); a pace is CPU time, and what a stage will take is that CPU time at the share of a
CPU the request gets, so a busy host makes a stage look as long as it will be."""
from __future__ import annotations

import os
import subprocess
import sys
import time

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


def _spin(seconds: float) -> None:
    """`seconds` of this thread's CPU time (wall time is longer on a busy host)."""
    until = time.thread_time() + seconds
    while time.thread_time() < until:
        pass


def test_a_pace_is_cpu_time_so_waiting_teaches_nothing(monkeypatch):
    """A stage's pace is the CPU time it took: a wall-clock pace taught on a busy host (52 s for 7 s of CPU) would
    refuse every large document of the worker once the host is quiet again."""
    monkeypatch.setattr(budget, "_pace", {})
    size = budget.LEARN_FROM * 4
    with budget.stage("xslt:sleepy", size):
        time.sleep(0.5)
    with budget.stage("xslt:busy", size):
        _spin(0.3)
    assert budget._pace["xslt:sleepy"] * size < 0.05
    assert 0.2 < budget._pace["xslt:busy"] * size < 0.6


def test_a_stage_that_fits_a_quiet_host_is_not_begun_when_the_request_gets_a_third_of_a_cpu(monkeypatch):
    """The host is busy: this thread shares its core with two processes that spin on it. The request's share of a
    CPU (the kernel's scheduler statistics) says so, and a stage of 4 s of CPU is not begun with 10 s left: it
    would take about 12. Before, the estimate was the pace of a quiet host and the stage ran on, past the budget."""
    monkeypatch.setattr(budget, "_pace", {"rules:x": 4.0 / (1 << 20)})
    core = min(os.sched_getaffinity(0))
    mine = os.sched_getaffinity(0)
    spin = f"import os\nos.sched_setaffinity(0, {{{core}}})\nwhile True: pass"
    burners = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(2)]
    os.sched_setaffinity(0, {core})
    try:
        time.sleep(0.5)  # the burners are spinning on the core
        token = budget.start(10)
        try:
            _spin(0.5)  # the request's own work so far, at the share it gets
            share = budget.share()
            assert share < 0.6, share
            assert budget.wall_expected("rules:x", 1 << 20) > 6
            with pytest.raises(budget.Exhausted):
                with budget.stage("rules:x", 1 << 20):
                    pass
        finally:
            budget.end(token)
    finally:
        os.sched_setaffinity(0, mine)
        for p in burners:
            p.kill()
            p.wait()
    token = budget.start(10)  # the same stage on its own core: begun (a quiet moment, a fresh request)
    try:
        budget._pace["rules:x"] = 4.0 / (1 << 20)
        with budget.stage("rules:x", 1 << 20):
            pass
    finally:
        budget.end(token)
