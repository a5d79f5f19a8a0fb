"""The generation path hands the transform's Saxon tree to validation instead of serialising and re-parsing it.
Both paths must give the same bytes (what the stylesheets' xsl:output says) and the same findings."""
from __future__ import annotations

import json
import re

import pytest

from pipeline.flows import generate_xml as generate
from pipeline.invoice.request_json import with_config
from pipeline.cli.golden import FIXTURES, syntaxes_of



def _specs(fixture) -> tuple[str, ...]:
    """The XML endpoints a fixture is generated on: its own spec where it names one (fr-ctc, peppol), else both of
    xrechnung and en16931; a ZUGFeRD fixture is a PDF, made by the ZUGFeRD path (tests/test_zugferd_generate.py)."""
    own = (json.loads(fixture.read_text()).get("config") or {}).get("spec")
    if own in ("fr-ctc", "peppol"):
        return (own,)
    if own == "zugferd":
        return ()
    return ("xrechnung",) if fixture.stem.startswith("xrechnung") else ("xrechnung", "en16931")


CASES = [(f, syntax, spec) for f in sorted(FIXTURES.glob("*.json")) for syntax in syntaxes_of(f) for spec in _specs(f)]


@pytest.mark.parametrize("fixture,syntax,spec", CASES, ids=lambda v: getattr(v, "stem", v))
def test_tree_path_equals_text_path(fixture, syntax, spec):
    request, canonical = generate.normalize(with_config(fixture.read_bytes(), syntax=syntax), spec)
    sid = (request.invoice.processControl.specificationIdentifier if request.invoice.processControl else None)
    text = generate.transform(canonical, syntax, spec, specification_id=sid)
    out = generate.transform_to_tree(canonical, syntax, spec, sid)
    assert out.xml == text
    by_text = generate.validate(text, spec)
    by_tree = generate.validate(out.xml, spec, tree=out.tree)
    assert by_tree.to_dict() | {"requestId": None} == by_text.to_dict() | {"requestId": None}


def test_tree_path_reports_findings_of_a_failing_document():
    """A document the rules reject is rejected the same way from the tree (findings located alike)."""
    request, canonical = generate.normalize(with_config((FIXTURES / "vat-g-export.json").read_bytes(),
                                                                 syntax="CII"), "xrechnung")
    broken = re.sub(rb"<(\w+:)?buyerReference>[^<]*</(\w+:)?buyerReference>", b"", canonical)
    assert broken != canonical
    out = generate.transform_to_tree(broken, "CII", "xrechnung")  # no BT-10: BR-DE-15
    by_tree = generate.validate(out.xml, "xrechnung", tree=out.tree)
    by_text = generate.validate(out.xml, "xrechnung")
    assert not by_tree.valid and any(i.location and i.location.line for i in by_tree.issues)
    assert by_tree.to_dict() | {"requestId": None} == by_text.to_dict() | {"requestId": None}
