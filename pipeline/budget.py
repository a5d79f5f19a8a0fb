"""The time budget of the request being answered: each request may work for EINVOICE_REQUEST_BUDGET seconds (default
60), below gunicorn's worker timeout (120 s), so that no request ever costs a worker and the connections it holds.

The service sets it per request (`start`); outside a request (the command line, a job's documents) there is none.
Where the work asks:
- between stages: every step of a document's work that cannot be stopped midway (a Saxon parse or transform, an XSD
  check: the GIL is held throughout, no thread can interrupt it) runs as a `stage`, which is not started once the
  budget is spent, nor when what is left would not cover it at the pace this process last ran that step at on a large
  input (DEFAULT_PACE before it has): a 20 MB document's official rules take 5-16 s, so they do not begin with
  2 s left;
- inside the long loops of our own code (findings, lines, source nodes): `check` every so many items;
- a batch takes no further document once the budget is spent, and a check with its own time limit (the PDF/A walk)
  runs at most as long as the budget leaves.
A stage that starts within the budget runs to its end: how far past the budget a request can run is the longest
stage's error of estimate (bench/time_budget.py measures it on 20 MB documents).
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from contextvars import ContextVar

from pipeline.errors import ApiError

_deadline: ContextVar[float | None] = ContextVar("request_deadline", default=None)
JOBS_HINT = "send it to the jobs API (POST /v1/jobs), which works without this limit"

# Seconds per input byte of a stage, as this process last ran it on an input of LEARN_FROM bytes or more (a pace
# measured on a tiny input is mostly fixed cost). A slower run counts at once, a faster one halfway, so a document
# with many findings (3 x the pace of a valid one) is not forgotten after the next valid one. Before a stage has run
# on a large input here, the pace of its kind in DEFAULT_PACE: about twice the slowest seen on a quiet 2-core
# machine (bench/time_budget.py), s per MB: lxml's parse 0.03, Saxon's 0.06, an XSD 0.005, the CEN rules 0.27 on a
# valid invoice and 0.8 on one with a finding per line, the reading stylesheet 0.27, WeasyPrint ~30 per MB of HTML.
LEARN_FROM = 256 << 10
DEFAULT_PACE = {"xml": 0.1e-6, "saxon-parse": 0.2e-6, "xsd": 0.05e-6, "rules": 1.6e-6, "xslt": 0.6e-6, "pdf": 60e-6}
_pace: dict[str, float] = {}


class Exhausted(ApiError):
    """The budget ran out before the work was done: 503 TIME_BUDGET for a single document."""

    def __init__(self, seconds: float | None = None):
        spent = f" of {seconds:g} s" if seconds else ""
        super().__init__(503, "TIME_BUDGET", f"The request's time budget{spent} (EINVOICE_REQUEST_BUDGET) ran out "
                         f"before the document was done; {JOBS_HINT}.")


def start(seconds: float):
    """Open the budget of a request; returns the token for `end`."""
    return _deadline.set(time.monotonic() + seconds)


def end(token) -> None:
    _deadline.reset(token)


def remaining() -> float | None:
    """Seconds left of the current request's budget (may be negative), or None outside a request."""
    deadline = _deadline.get()
    return None if deadline is None else deadline - time.monotonic()


def spent() -> bool:
    left = remaining()
    return left is not None and left <= 0


def check() -> None:
    """Raise Exhausted once the budget is spent: the loops whose length only the document's size bounds ask it."""
    if spent():
        raise Exhausted()


def expected(name: str, size: int) -> float:
    """Seconds the stage `name` is expected to take on `size` bytes in this process."""
    pace = _pace.get(name)
    return size * (pace if pace is not None else DEFAULT_PACE.get(name.partition(":")[0], 1e-6))


@contextmanager
def stage(name: str, size: int):
    """A step that cannot be stopped once begun: Exhausted instead of beginning it when the budget is spent or would
    not cover it (`expected`); its pace is learned from inputs of LEARN_FROM bytes or more, in or out of a request."""
    left = remaining()
    if left is not None and (left <= 0 or expected(name, size) > left):
        if left > 0:
            # refused by a learned pace alone: it is forgotten, so that one slow moment (a load spike) does not
            # refuse every large document of this process for good (refused, none ran to teach a faster pace)
            _pace.pop(name, None)
        raise Exhausted()
    began = time.monotonic()
    yield
    if size >= LEARN_FROM:
        pace, known = (time.monotonic() - began) / size, _pace.get(name)
        _pace[name] = pace if known is None or pace > known else (known + pace) / 2
