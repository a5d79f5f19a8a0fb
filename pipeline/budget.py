"""The time budget of the request being answered: each request may work for EINVOICE_REQUEST_BUDGET seconds (default
60), below gunicorn's worker timeout (120 s), so that no request ever costs a worker and the connections it holds.

The service sets it per request (`within`); the work that can run long asks how much is left: a batch takes no
further document once it is spent, and a check with its own time limit (the PDF/A walk) runs at most as long as the
budget leaves. Work bounded by its size alone needs no question (every upload is bounded). Outside a request (the
command line) there is no budget.
"""
from __future__ import annotations

import time
from contextvars import ContextVar

from pipeline.errors import ApiError

_deadline: ContextVar[float | None] = ContextVar("request_deadline", default=None)
JOBS_HINT = "send it to the jobs API (POST /v1/jobs), which works without this limit"


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
