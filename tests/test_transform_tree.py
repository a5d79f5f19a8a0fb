"""The generation path hands the transform's Saxon tree to validation instead of serialising and re-parsing it.
Both paths must give the same bytes (what the stylesheets' xsl:output says) and the same findings.

The bytes are indented and the tree is not: the findings must still be those of the bytes parsed again, their
line and column must point into the bytes returned, and the indentation must leave every value as it is."""
from __future__ import annotations

import json
import re

import pytest
from lxml import etree

from pipeline import xslt
from pipeline.flows import generate_xml as generate
from pipeline.invoice.request_json import with_config
from pipeline.invoice.specs import PROFILES
from pipeline.write import transform
from pipeline.cli.golden import FIXTURES, syntaxes_of, invoice_fixtures



def _specs(fixture) -> tuple[str, ...]:
    """The XML endpoints a fixture is generated on: its own spec where it names one (fr-ctc, peppol), else both of
    xrechnung and en16931; a ZUGFeRD fixture is a PDF, made by the ZUGFeRD path (tests/test_zugferd_generate.py)."""
    own = (json.loads(fixture.read_text()).get("config") or {}).get("spec")
    if own in ("fr-ctc", "peppol"):
        return (own,)
    if own == "zugferd":
        return ()
    return ("xrechnung",) if fixture.stem.startswith("xrechnung") else ("xrechnung", "en16931")


CASES = [(f, syntax, spec) for f in invoice_fixtures() for syntax in syntaxes_of(f) for spec in _specs(f)]


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


def _without_indentation(xml: bytes) -> bytes:
    """C14N of the document with whitespace-only text between elements removed; the text of an element without
    element children is kept whatever it is (a value)."""
    root = etree.fromstring(xml)
    for element in root.iter():
        if len(element):
            if element.text is not None and not element.text.strip():
                element.text = None
            for child in element:
                if child.tail is not None and not child.tail.strip():
                    child.tail = None
    return etree.tostring(root, method="c14n")


def _mixed(xml: bytes) -> list[str]:
    """Elements holding both text and elements (mixed content, where indentation would change a value)."""
    return [el.tag for el in etree.fromstring(xml).iter()
            if len(el) and ((el.text or "").strip() or any((c.tail or "").strip() for c in el))]


@pytest.mark.parametrize("fixture,syntax,spec", CASES, ids=lambda v: getattr(v, "stem", v))
def test_indentation_changes_no_value(fixture, syntax, spec):
    """The returned document is the one-line serialisation with whitespace between elements only: one element per
    line, every value (every text node that is not between elements) unchanged, no mixed content."""
    request, canonical = generate.normalize(with_config(fixture.read_bytes(), syntax=syntax), spec)
    sid = (request.invoice.processControl.specificationIdentifier if request.invoice.processControl else None)
    indented = generate.transform(canonical, syntax, spec, specification_id=sid)
    params = transform.params_for(spec, **{"specification-id": sid})
    one_line = xslt.run_stylesheet(transform.stylesheet_for(syntax), canonical, params, indent=False)
    assert one_line.count(b"\n") == 0 and indented.count(b"\n") > 50
    assert _without_indentation(indented) == _without_indentation(one_line)
    assert not _mixed(indented)
    text = indented.decode("utf-8")
    assert all(line.count("</") <= 1 for line in text.splitlines()), "more than one element on a line"


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_zugferd_cii_is_indented(profile):
    """The CII a ZUGFeRD PDF carries, for every profile: indented, no mixed content; a subset (filtered from the
    EN 16931 CII) equals the filter's one-line serialisation of the same document but for the indentation."""
    chosen = PROFILES[profile]
    _, canonical = generate.normalize((FIXTURES / "invoice-all-fields.json").read_bytes(), "zugferd")
    xml = transform.to_profile(canonical, chosen)
    assert xml.count(b"\n") > 50 and not _mixed(xml)
    if chosen.subset:  # the filter is idempotent: run again on its own output, without indentation
        one_line = xslt.run_stylesheet(transform.PROFILE_XSL, xml, {
            "schema": chosen.xsd_path.as_uri(), "guideline-id": chosen.guideline_id, "profile": chosen.name},
            indent=False)
        assert one_line.count(b"\n") == 0
        assert _without_indentation(xml) == _without_indentation(one_line)


def test_finding_points_at_its_element_in_the_returned_bytes():
    """A warning of the official rules on a generated document (CII-SR-475 on the all-fields invoice with a second
    named supporting document, EN 16931 CII: two attachment names) is located by line and column in the indented
    bytes the client gets: the start tag of the element its xpath names, found there independently of the locating
    code."""
    request = json.loads(with_config((FIXTURES / "invoice-all-fields.json").read_bytes(), syntax="CII"))
    documents = request["invoice"]["additionalSupportingDocuments"]
    documents.append(dict(documents[0], reference="Stundennachweis-04", attachedDocumentFilename="s-04.pdf"))
    xml, report = generate.generate_xml(json.dumps(request).encode(), "en16931")
    located = [i for i in report.issues if i.location and i.location.line]
    assert located and {i.code for i in located} >= {"CII-SR-475"}
    text = xml.decode("utf-8")
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    root = etree.fromstring(xml)
    for issue in located:
        loc = issue.location
        assert loc.line > 1 and loc.column is not None
        offset = starts[loc.line - 1] + loc.column - 1
        # the xpath as XPath 1.0 for lxml: *:Name[namespace-uri()='ns'] -> *[local-name()='Name'][namespace-uri()='ns']
        element = root.xpath(re.sub(r"\*:([\w.-]+)", r"*[local-name()='\1']", loc.xpath))[0]
        qname = (f"{element.prefix}:" if element.prefix else "") + etree.QName(element).localname
        assert re.match(f"<{re.escape(qname)}[\\s/>]", text[offset:]), (issue.code, loc, text[offset:offset + 60])
        same = list(root.iter(element.tag))
        before = len(re.findall(f"<{re.escape(qname)}[\\s/>]", text[:offset]))
        assert same[before] is element, f"{issue.code}: line {loc.line} column {loc.column} is another {qname}"
