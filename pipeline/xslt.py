"""Running our XSLT 3.0 stylesheets in Saxon: set string parameters, transform, return the result.

Stylesheets are compiled once per process (`pipeline.saxon.compile_stylesheet`). A compiled executable holds its
parameters, so one call = set parameters, transform, clear them, under a lock (the GIL is held during a transform
anyway; the lock only keeps two threads from mixing parameters).

A failing transform raises `TransformError`, whose message names the stylesheet file and line (Saxon's text) and
any `xsl:message` output, so a stylesheet author sees where it broke. Used by every direction: generation
(`pipeline.write.transform`), the page (`pipeline.pdf.page`), the Factur-X profile subsets.
"""
from __future__ import annotations

import os
import re
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from saxonche import PyXdmNode

from pipeline import budget, saxon
from pipeline.errors import TransformError

_lock = threading.Lock()
_DOCTYPE = re.compile(rb"<!DOCTYPE|<\x00!\x00D\x00O\x00C\x00T\x00Y\x00P\x00E|\x00<\x00!\x00D\x00O\x00C\x00T\x00Y\x00P\x00E",
                      re.IGNORECASE)


@dataclass(frozen=True)
class Output:
    """A transform's result document, serialised and as the Saxon tree it was serialised from, so the next
    stage (validation) reads the same document without parsing it again."""
    xml: bytes
    tree: PyXdmNode


# Runs an XML-producing stylesheet (imported unchanged) and returns its result document and that document
# serialised as the stylesheet's xsl:output declares it, indented (tests compare with transform_to_string byte for
# byte): one call into Saxon, no XPath compiled per call, no re-parse in the validation stage. The tree has no
# whitespace between elements, the bytes do: the rules judge both alike (tests/test_transform_tree.py compares
# with validating the bytes parsed again), and a finding's line and column come from the bytes (lxml), so they
# point into what the client gets. Indenting the tree itself (or parsing the bytes again) cost ~2 ms more per
# typical invoice, ~+15 % of generation (bench/README.md).
_TREE_WRAPPER = """<xsl:stylesheet version="3.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:import href="{href}"/>
  <xsl:template match="/" priority="1000">
    <xsl:variable name="out" as="document-node()"><xsl:document><xsl:apply-imports/></xsl:document></xsl:variable>
    <xsl:sequence select="$out, serialize($out, map{{'method': 'xml', 'encoding': 'UTF-8', 'indent': true(),
                                                    'omit-xml-declaration': false()}})"/>
  </xsl:template>
</xsl:stylesheet>"""


def run_stylesheet(path: str | Path, xml_bytes: bytes, params: Mapping[str, str] | None = None,
                   indent: bool | None = None, tree: PyXdmNode | None = None) -> bytes:
    """Run one XSLT 3.0 stylesheet on XML bytes; string parameters; returns the serialised result.

    The serialisation (encoding, declaration, indentation) is the stylesheet's own `xsl:output`; `indent` overrides
    its indentation for this call (False: one line). `tree`: the same document already parsed by Saxon (checked
    for DTDs when it was read), so it is not parsed again.
    """
    path = Path(path)
    out = _run(path, lambda: saxon.compile_stylesheet(path), xml_bytes, params, indent,
               lambda exe, doc: exe.transform_to_string(xdm_node=doc), tree)
    return out.encode("utf-8")


def tree_executable(path: str | Path):
    """The compiled wrapper `run_to_tree` runs `path` in (once per process; `pipeline.write.transform.warm_up`). Keyed by
    the path as given: resolving it costs a stat per component, on every request."""
    return saxon.compile_generated(("tree", str(path)),
                                   lambda: _TREE_WRAPPER.format(href=Path(path).resolve().as_uri()))


def run_to_tree(path: str | Path, xml_bytes: bytes, params: Mapping[str, str] | None = None) -> Output:
    """Run an XML-producing stylesheet (cii.xsl, ubl.xsl: UTF-8, indented, with XML declaration) and keep its
    result tree (without the indentation's whitespace) next to the serialised bytes."""
    path = Path(path)

    def call(exe, doc):
        value = exe.transform_to_value(xdm_node=doc)
        return None if value is None or value.size != 2 else value

    value = _run(path, lambda: tree_executable(path), xml_bytes, params, None, call)
    return Output(value.item_at(1).string_value.encode("utf-8"), value.item_at(0))


def source_tree(xml_bytes: bytes, path: str | Path = "input") -> PyXdmNode:
    """XML bytes as the Saxon tree a stylesheet reads (`tree=` of `run_stylesheet`), for a document that several
    stylesheets read. TransformError naming `path` for a DOCTYPE or malformed input."""
    if _DOCTYPE.search(xml_bytes[:65536]):  # Saxon's parser would read DTDs and expand entities
        raise TransformError(path, "input carries a DOCTYPE; refused (no DTDs or entity declarations)")
    try:
        return saxon.parse(xml_bytes)
    except budget.Exhausted:
        raise
    except Exception as exc:  # saxonche raises PySaxonApiError for malformed input
        raise TransformError(path, f"input is not well-formed XML: {exc}") from exc


def _run(path: Path, compile, xml_bytes: bytes, params: Mapping[str, str] | None, indent: bool | None, call,
         doc: PyXdmNode | None = None):
    """Compile (once), parse the input (unless `doc` is its tree), set parameters, run `call(executable,
    document)` under the lock and turn every failure into a TransformError naming the stylesheet."""
    try:
        exe = compile()
    except saxon.StylesheetError as exc:
        raise TransformError(path, f"does not compile: {exc}") from exc
    proc = saxon.processor()
    if doc is None:
        doc = source_tree(xml_bytes, path)
    with _lock:
        exe.clear_parameters()
        exe.clear_xsl_messages()
        exe.set_save_xsl_message(True, None)
        for name, value in (params or {}).items():
            exe.set_parameter(name, proc.make_string_value(str(value)))
        if indent is not None:
            exe.set_property("!indent", "yes" if indent else "no")
        try:
            with budget.stage(f"xslt:{path.name}", len(xml_bytes or b"")):
                out = call(exe, doc)
        except budget.Exhausted:
            raise
        except Exception as exc:
            messages = _messages(exe)
            raise TransformError(path, _diagnosis(exe, doc) or str(exc).strip(), messages) from exc
        finally:
            exe.clear_parameters()
            if indent is not None:
                exe.clear_properties()
    if out is None:
        raise TransformError(path, "the transform produced no result", _messages(exe))
    return out


def _diagnosis(exe, doc) -> str | None:
    """Saxon writes where a dynamic error happened (module, line, column, template) to the process's stderr,
    not into the exception. On the failure path only, run the (deterministic) transform once more with file
    descriptor 2 pointed at a temporary file and return that text."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        try:
            os.dup2(tmp.fileno(), 2)
            try:
                exe.transform_to_string(xdm_node=doc)
            except Exception:
                pass
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        text = tmp.read().decode("utf-8", "replace")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    # keep Saxon's error report (it starts at "Error ..."), not the xsl:message output before it
    start = next((i for i, ln in enumerate(lines) if ln.startswith(("Error", "Type error", "Static error"))), None)
    return "\n".join(lines[start:]) if start is not None else None


def _messages(exe) -> list[str]:
    """The xsl:message texts of the last run (terminate="yes" ones included)."""
    try:
        msgs = exe.get_xsl_messages()
    except Exception:
        return []
    if msgs is None:
        return []
    return [str(m.string_value if hasattr(m, "string_value") else m) for m in msgs]
