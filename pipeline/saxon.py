"""The one place that owns Saxon: a processor and compiled stylesheets per *process*.

Saxon (GraalVM isolate) must not be inherited across fork: everything here is keyed by the pid
and rebuilt lazily in a new worker. Stylesheets are compiled once per process and reused;
nothing is built at import time.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path

from saxonche import PySaxonProcessor, PyXdmNode, PyXsltExecutable, PyXslt30Processor

_lock = threading.RLock()
_state: dict = {"pid": None}


def _fresh() -> dict:
    proc = PySaxonProcessor(license=False)
    return {"pid": os.getpid(), "proc": proc, "xslt": proc.new_xslt30_processor(), "compiled": {}}


def _get() -> dict:
    global _state
    if _state["pid"] != os.getpid():
        with _lock:
            if _state["pid"] != os.getpid():
                _state = _fresh()
    return _state


def processor() -> PySaxonProcessor:
    return _get()["proc"]


def xslt30() -> PyXslt30Processor:
    return _get()["xslt"]


class StylesheetError(Exception):
    """A stylesheet failed to compile; message carries Saxon's text (with file and line)."""


def compile_stylesheet(path: str | Path) -> PyXsltExecutable:
    """Compile (once per process) and return the executable for a stylesheet file."""
    key = str(Path(path).resolve())
    st = _get()
    exe = st["compiled"].get(key)
    if exe is None:
        with _lock:
            exe = st["compiled"].get(key)
            if exe is None:
                xp = st["xslt"]
                try:
                    exe = xp.compile_stylesheet(stylesheet_file=key)
                except Exception as exc:  # saxonche raises PySaxonApiError
                    raise StylesheetError(f"{key}: {exc}") from exc
                if exe is None:
                    raise StylesheetError(f"{key}: compilation failed")
                st["compiled"][key] = exe
    return exe


def compiled_count() -> int:
    return len(_get()["compiled"]) if _state["pid"] == os.getpid() else 0


def parse(data: bytes) -> PyXdmNode:
    """Parse XML bytes into a Saxon tree. Callers must have checked the bytes for DTDs/entities first."""
    return processor().parse_xml(xml_text=data.decode("utf-8") if isinstance(data, bytes) else data)
