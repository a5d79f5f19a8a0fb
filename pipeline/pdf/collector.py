"""Python's cyclic garbage collector paused around the allocation-heavy pure-Python work of a PDF we make.

WeasyPrint builds a tree of boxes that stays alive until the PDF is written, and pikepdf's PDF/A walk keeps its
per-object state until the verdict; each collection pass walks those live objects again, for the few cycles the
work leaves (collected at the next pass after it; the rest is freed by reference counting). Only for documents we
generate, whose size the line limit bounds: an uploaded PDF is checked with the collector on.

Measured (bench/PDF_AND_READING.md): 8-10% of a 300-line page, 8% of its PDF/A check; peak memory of a 2,000-line
page (the EINVOICE_MAX_PDF_LINES default) +29 MiB of 430.
"""
from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def paused():
    """The collector off inside, as it was after (also on an exception). A caller that has turned it off keeps it
    off; two threads inside at once: the first to leave turns it on again, which only costs the other the gain."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
