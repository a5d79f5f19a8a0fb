"""The one place that owns Saxon: a processor and compiled stylesheets per *process*.

Saxon (GraalVM isolate) must not be inherited across fork: everything here is keyed by the pid
and rebuilt lazily in a new worker. Stylesheets are compiled once per process and reused;
nothing is built at import time.
"""
from __future__ import annotations

import codecs
import os
import re
import threading
from pathlib import Path

from saxonche import PySaxonProcessor, PyXdmNode, PyXsltExecutable, PyXslt30Processor

from pipeline import budget

_lock = threading.RLock()
_state: dict = {"pid": None}


def _fresh() -> dict:
    proc = PySaxonProcessor(license=False)
    return {"pid": os.getpid(), "proc": proc, "xslt": proc.new_xslt30_processor(), "compiled": {}, "generated": {}}


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


_COMMON_HREF = re.compile(r'(<xsl:(?:include|import)\s+href=")common/')


def _compile_file(xp: PyXslt30Processor, path: Path) -> PyXsltExecutable:
    """A stylesheet file; a copy of one of ours taken out of xslt/ (`--xslt my.xsl`) whose folder has no common/
    still finds the shared modules there: its `common/...` includes are read from the repository's xslt/common/
    (the text is otherwise compiled as it is, with its own folder as the base for anything else)."""
    from pipeline.settings import REPO_ROOT  # lazy: this module sits below settings' users

    common = REPO_ROOT / "xslt" / "common"
    if (path.parent / "common").is_dir() or not common.is_dir():
        return xp.compile_stylesheet(stylesheet_file=str(path))
    text = path.read_text(encoding="utf-8")
    if not _COMMON_HREF.search(text):
        return xp.compile_stylesheet(stylesheet_file=str(path))
    text = _COMMON_HREF.sub(lambda m: m.group(1) + common.as_uri() + "/", text)
    builder = _get()["proc"].new_document_builder()
    builder.set_line_numbering(True)
    builder.set_base_uri(path.as_uri())  # errors name the copy's file and line; other hrefs stay relative to it
    return xp.compile_stylesheet(stylesheet_node=builder.parse_xml(xml_text=text))


def compile_stylesheet(path: str | Path) -> PyXsltExecutable:
    """Compile (once per process) and return the executable for a stylesheet file."""
    st = _get()
    exe = st["compiled"].get(str(path))  # fast path: the path as given (resolve() costs a stat per component)
    if exe is not None:
        return exe
    key = str(Path(path).resolve())
    exe = st["compiled"].get(key)
    if exe is None:
        with _lock:
            exe = st["compiled"].get(key)
            if exe is None:
                xp = st["xslt"]
                try:
                    exe = _compile_file(xp, Path(key))
                except Exception as exc:  # saxonche raises PySaxonApiError
                    raise StylesheetError(f"{key}: {exc}") from exc
                if exe is None:
                    raise StylesheetError(f"{key}: compilation failed")
                st["compiled"][key] = exe
    st["compiled"].setdefault(str(path), exe)
    return exe


def compile_generated(key, build, keep=None, prepare=None) -> PyXsltExecutable:
    """A stylesheet we generate as text (a wrapper importing a file, a chooser), compiled once per process under
    `key`; it returns its items as raw values, not a tree built from them. `keep` = the object an id() in the
    key stands for: held with the executable, so the id cannot be reused. `prepare(executable)` runs once, right
    after compiling (e.g. to set parameters every run shares)."""
    st = _get()
    hit = st["generated"].get(key)
    if hit is None:
        with _lock:
            hit = st["generated"].get(key)
            if hit is None:
                try:
                    exe = st["xslt"].compile_stylesheet(stylesheet_text=build())
                except Exception as exc:  # saxonche raises PySaxonApiError
                    raise StylesheetError(f"{key[0]}: {exc}") from exc
                exe.set_result_as_raw_value(True)
                if prepare is not None:
                    prepare(exe)
                hit = st["generated"][key] = (exe, keep)
    return hit[0]


def compiled_count() -> int:
    return len({id(e) for e in _get()["compiled"].values()}) if _state["pid"] == os.getpid() else 0


_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
_DECLARED = re.compile(rb"""^<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")


def xml_text(data: bytes) -> str:
    """Decode XML bytes by BOM or declared encoding (default UTF-8). Saxon gets text, and parses a Python
    string as characters (it ignores the declaration), so the decoding has to be right here."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return data.decode(codec).lstrip("\ufeff")
    m = _DECLARED.match(data[:200])
    return data.decode(m.group(1).decode("ascii") if m else "utf-8")


# SaxonC parses a large document faster from bytes it reads than from a Python string (which it converts to a
# Java string first): 7-14 % of the parse from ~140 KB up, CPU, same run; below ~10 KB the file costs more than
# it saves (bench/README.md). Only for text that starts with its markup and declares UTF-8 or nothing, so that the
# UTF-8 bytes are read as the same characters.
_FROM_BYTES_ABOVE = 64 * 1024
_UTF8_OR_NONE = re.compile(r"""<\?xml(?![^>]*?encoding)|<\?xml[^>]*?encoding\s*=\s*["']utf-8["']|<(?!\?xml)""", re.I)


def _from_bytes(text: str) -> PyXdmNode:
    """`text` parsed by Saxon from its UTF-8 bytes in an anonymous in-memory file (no disk, gone on close)."""
    fd = os.memfd_create("saxon-parse", os.MFD_CLOEXEC)
    try:
        with open(fd, "wb", closefd=False) as f:
            f.write(text.encode("utf-8"))
        return processor().parse_xml(xml_file_name=f"/proc/self/fd/{fd}")
    finally:
        os.close(fd)


def parse(data: bytes | str) -> PyXdmNode:
    """Parse XML into a Saxon tree. Callers must have checked the bytes for DTDs/entities first
    (pipeline.check.xmlinput). A stage of the request's time budget (`pipeline.budget`)."""
    with budget.stage("saxon-parse", len(data)):
        text = xml_text(data) if isinstance(data, bytes) else data
        if len(text) > _FROM_BYTES_ABOVE and hasattr(os, "memfd_create") and _UTF8_OR_NONE.match(text):
            try:
                return _from_bytes(text)
            except budget.Exhausted:
                raise
            except Exception:  # saxonche's PySaxonApiError, OSError: the string parse gives the error's own words
                pass
        return processor().parse_xml(xml_text=text)
