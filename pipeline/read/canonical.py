"""Stage: a CII or UBL document (read safely by `pipeline.check.xmlinput`) -> canonical XML, with the reading
stylesheets xslt/read-cii.xsl and xslt/read-ubl.xsl. The canonical vocabulary is the one generation writes
(docs/canonical.md); every element that carries a value names the source node(s) it came from in an `s:src`
attribute (XPath 3.1 `path()`), which `pipeline.read.provenance` turns into the list of unmapped source nodes.

BT-24 (the specification identifier) is no canonical element, as in generation, where it is a stylesheet parameter:
`pipeline.check.xmlinput.specification_id` reads it (for the rules and for reading alike).
"""
from __future__ import annotations

from pathlib import Path

from pipeline import xslt
from pipeline.check.xmlinput import ParsedXml
from pipeline.settings import XSLT_DIR

READ_CII_XSL = XSLT_DIR / "read-cii.xsl"
READ_UBL_XSL = XSLT_DIR / "read-ubl.xsl"
SOURCE_NS = "urn:einvoice-pipeline:source:1"  # the s:src provenance attributes

def stylesheet_for(syntax: str) -> Path:
    """read-cii.xsl for CII, read-ubl.xsl for UBL Invoice and CreditNote."""
    return READ_CII_XSL if syntax == "CII" else READ_UBL_XSL


def to_canonical(data: bytes, doc: ParsedXml, stylesheet: str | Path | None = None, tree=None,
                 ids: bool = False) -> bytes:
    """The document (`data`, already read safely as `doc`) as canonical XML with `s:src` provenance. `stylesheet`
    runs another reading stylesheet instead (for stylesheet authors); `tree`: the document as a Saxon tree, when
    the caller has one of exactly these characters; `ids`: s:src names source nodes by id (the stylesheets'
    `$src = 'id'`, cheaper than path(); `provenance.split(..., doc.tree.getroot())` checks them against the tree).
    TransformError when a stylesheet fails."""
    return xslt.run_stylesheet(stylesheet or stylesheet_for(doc.syntax), data, {"src": "id"} if ids else None,
                               tree=tree)

