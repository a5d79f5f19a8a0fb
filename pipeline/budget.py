"""The time budget of the request being answered: each request may work for EINVOICE_REQUEST_BUDGET seconds (default
60), below gunicorn's worker timeout (120 s), so that no request ever costs a worker and the connections it holds.

The service sets it per request (`start`); outside a request (the command line, a job's documents) there is none.
Where the work asks:
- between stages: every step of a document's work that cannot be stopped midway (a Saxon parse or transform, an XSD
  check: the GIL is held throughout, no thread can interrupt it) runs as a `stage`, which is not started once the
  budget is spent, nor when what is left would not cover it (`wall_expected`): a 20 MB document's official rules take
  5-16 s of CPU, so they do not begin with 2 s left;
- inside the long loops of our own code (findings, lines, source nodes): `check` every so many items;
- a batch takes no further document once the budget is spent, and a check with its own time limit (the PDF/A walk)
  runs at most as long as the budget leaves.
A stage that starts within the budget runs to its end: how far past the budget a request can run is the longest
stage's error of estimate (bench/time_budget.py measures it on 20 MB documents, on a quiet and on a busy host).
A stage this process has not yet run on a large input has only its kind's default pace, a guess (the XRechnung rules
take a tenth of the CEN rules' time per byte): it is begun while the budget lasts when it would end by the request's
ceiling (CEILING times the budget, before the worker timeout) at that pace, and teaches its own. Held to the budget,
a guess refused a 4 MB document with a 6 s budget after 0.4 s (6.4 s said for the CEN rules, which took 0.4 s), and a
refusal teaches no pace: every such document was refused for as long as the worker lived.

What a stage will take is its CPU time (the pace this process last ran it at, per input byte) divided by the share
of a CPU this thread gets: on a host busy with other processes a stage of 7 s of CPU took 52 s (a 20 MB convert ran
112 s against a 60 s budget when the estimate was seconds of a quiet host). The share is read from the kernel's
scheduler statistics (/proc/thread-self/schedstat: time run, time waited for a CPU while runnable), so waiting for
the database or the network does not count as load; the lower of the request's share so far and its last stage's.
"""
from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from pipeline.errors import ApiError
from pipeline.settings import WORKER_TIMEOUT

JOBS_HINT = "send it to the jobs API (POST /v1/jobs), which works without this limit"

# CPU seconds per input byte of a stage, as this process last ran it on an input of LEARN_FROM bytes or more (a pace
# measured on a tiny input is mostly fixed cost). A slower run counts at once, a faster one halfway, so a document
# with many findings (3 x the pace of a valid one) is not forgotten after the next valid one. Before a stage has run
# on a large input here, the pace of its kind in DEFAULT_PACE: about twice the slowest seen on a quiet 2-core
# machine, in CPU seconds per MB (4-20 MB UBL, valid or with a finding per line, 2026-12-07): lxml's parse 0.024,
# Saxon's 0.053, an XSD 0.009, the CEN rules 0.1 on a valid invoice and 0.19 on one with a finding per line (the
# XRechnung rules 0.015-0.03), the reading stylesheet 0.32, WeasyPrint ~30 per MB of HTML. (The former defaults, the
# CEN rules at 1.6, were wall seconds on a loaded host, from before a pace was CPU time.)
LEARN_FROM = 256 << 10
DEFAULT_PACE = {"xml": 0.05e-6, "saxon-parse": 0.1e-6, "xsd": 0.02e-6, "rules": 0.4e-6, "xslt": 0.6e-6, "pdf": 60e-6}
_pace: dict[str, float] = {}

# A request's ceiling, which no stage begun on a default pace may be expected to pass: CEILING times its budget, and
# at most halfway from the budget to gunicorn's worker timeout (never before the budget itself), the other half left
# for the estimate's error (a learned pace was outrun by +19.9 s as the load rose, bench/README.md). 6 s: 18 s, the
# bound issue 41 sets a 19.5 MB validation; 60 s: 90 s.
CEILING = 3.0

# A share is measured over at least this many seconds (run + waited); the lowest believed (never a division by ~0).
MIN_WINDOW = 0.05
MIN_SHARE = 0.02


# Each thread's scheduler statistics, opened once per thread (and again in a forked child, whose threads are not its
# parent's): reading the open file again costs ~1.5 us, opening it ~20 us, and a validation asks 10 times (five
# stages, bench/README.md). The file closes when its thread ends (the thread's locals go with it).
_schedstat = threading.local()


def _schedstat_file():
    """This thread's open /proc/thread-self/schedstat, or None where there is none."""
    held = getattr(_schedstat, "held", None)
    if held is None or held[0] != os.getpid():
        try:
            f = open("/proc/thread-self/schedstat", "rb", buffering=0)
        except OSError:
            f = None
        held = _schedstat.held = (os.getpid(), f)
    return held[1]


def cpu_clock() -> tuple[float, float]:
    """(seconds this thread has run, seconds it has waited for a CPU while runnable). Without the kernel's
    scheduler statistics, every second not run counts as waited (a sleep then looks like load: refuses early)."""
    f = _schedstat_file()
    if f is not None:
        try:
            ran, waited = os.pread(f.fileno(), 64, 0).split()[:2]
            return int(ran) / 1e9, int(waited) / 1e9
        except (OSError, ValueError):
            pass
    ran = time.thread_time()
    return ran, time.monotonic() - ran


def share_since(since: tuple[float, float], now: tuple[float, float] | None = None) -> float | None:
    """The share of a CPU this thread got while it wanted one since `since` (a `cpu_clock`), or None when that
    window is too short to tell."""
    ran, waited = now or cpu_clock()
    ran, waited = ran - since[0], waited - since[1]
    if ran + waited < MIN_WINDOW:
        return None
    return max(ran / (ran + waited), MIN_SHARE)


@dataclass
class _Request:
    deadline: float
    ceiling: float  # no stage begun on a default pace may be expected to end past it
    since: tuple[float, float]  # cpu_clock at the request's start
    last_share: float | None = None  # during its last stage


_current: ContextVar[_Request | None] = ContextVar("request_budget", default=None)


class Exhausted(ApiError):
    """The budget ran out before the work was done: 503 TIME_BUDGET for a single document."""

    def __init__(self, seconds: float | None = None):
        spent = f" of {seconds:g} s" if seconds else ""
        super().__init__(503, "TIME_BUDGET", f"The request's time budget{spent} (EINVOICE_REQUEST_BUDGET) ran out "
                         f"before the document was done; {JOBS_HINT}.")


def start(seconds: float):
    """Open the budget of a request; returns the token for `end`."""
    now = time.monotonic()
    ceiling = max(seconds, min(CEILING * seconds, (seconds + WORKER_TIMEOUT) / 2))
    return _current.set(_Request(now + seconds, now + ceiling, cpu_clock()))


def end(token) -> None:
    _current.reset(token)


def remaining() -> float | None:
    """Seconds left of the current request's budget (may be negative), or None outside a request."""
    request = _current.get()
    return None if request is None else request.deadline - time.monotonic()


def spent() -> bool:
    left = remaining()
    return left is not None and left <= 0


def check() -> None:
    """Raise Exhausted once the budget is spent: the loops whose length only the document's size bounds ask it."""
    if spent():
        raise Exhausted()


def expected(name: str, size: int) -> float:
    """CPU seconds the stage `name` is expected to take on `size` bytes in this process."""
    pace = _pace.get(name)
    return size * (pace if pace is not None else DEFAULT_PACE.get(name.partition(":")[0], 1e-6))


def share() -> float:
    """The share of a CPU the current request's stages are expected to get: the lower of its share so far and its
    last stage's (load that has just come counts at once); 1 outside a request or before it can be told."""
    request = _current.get()
    measured = [s for s in (request and share_since(request.since), request and request.last_share) if s]
    return min(measured, default=1.0)


def wall_expected(name: str, size: int) -> float:
    """Seconds the stage `name` is expected to take on `size` bytes now: its CPU time at the current share."""
    return expected(name, size) / share()


def _fits(name: str, size: int, left: float) -> bool:
    """Whether the stage, expected to take `wall_expected`, may begin with `left` s of the budget: within them at
    the pace it has learned here, else (its kind's default) within the request's ceiling."""
    if name in _pace:
        return wall_expected(name, size) <= left
    return wall_expected(name, size) <= _current.get().ceiling - time.monotonic()


@contextmanager
def stage(name: str, size: int):
    """A step that cannot be stopped once begun: Exhausted instead of beginning it when the budget is spent or would
    not cover it (`wall_expected`); its CPU pace is learned from inputs of LEARN_FROM bytes or more, in or out of a
    request, and the request's share of a CPU during it is kept for the next stage's estimate."""
    left = remaining()
    if left is None and size < LEARN_FROM:
        # outside a request (a job's document, the command line) a small stage teaches no pace and has no share to
        # keep: its two reads of the scheduler statistics would be read by nothing (11-15 us per stage after Saxon
        # work had the caches, five stages per validation; bench/README.md)
        yield
        return
    if left is not None and (left <= 0 or not _fits(name, size, left)):
        if left > 0:
            # refused by a learned pace: it is forgotten, so that one document with many findings does not refuse
            # every large document of this process for good (refused, none runs to teach a faster pace)
            _pace.pop(name, None)
        raise Exhausted()
    began = cpu_clock()
    yield
    now = cpu_clock()
    request = _current.get()
    if request is not None:
        request.last_share = share_since(began, now) or request.last_share
    if size >= LEARN_FROM:
        pace, known = (now[0] - began[0]) / size, _pace.get(name)
        _pace[name] = pace if known is None or pace > known else (known + pace) / 2
