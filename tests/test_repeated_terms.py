"""Further occurrences of repeatable business terms (the `additional...` extension arrays, docs/canonical.md):
written in both syntaxes, valid on the official rules, read back unchanged, and shown on the readable page.
Several preceding invoices (BG-3) exist in UBL only: CII D16B has one InvoiceReferencedDocument.
(fixtures/repeated-terms.json covers the others through the golden and round-trip tests.)"""
from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest
from lxml import etree, html as lxml_html

from pipeline import xslt
from pipeline.write import transform
from pipeline.flows.generate_xml import normalize
from pipeline.errors import ApiError
from pipeline.flows.generate_xml import generate_xml
from pipeline.invoice.request_json import with_config
from pipeline.settings import XSLT_DIR
from roundtrip.reader import flatten, read_terms

REPO = Path(__file__).resolve().parent.parent
SEVERAL_BG3 = REPO / "tests" / "data" / "request-several-preceding-invoices.json"
REPEATED = REPO / "fixtures" / "repeated-terms.json"


def request_terms(path: Path) -> dict[str, str]:
    return flatten(json.loads(path.read_bytes(), parse_float=Decimal)["invoice"])


@pytest.mark.parametrize("spec", ["en16931", "xrechnung"])
def test_several_preceding_invoices_in_ubl(spec):
    xml, report = generate_xml(SEVERAL_BG3.read_bytes(), spec)
    assert report.valid
    doc = etree.fromstring(xml)
    assert doc.tag.endswith("}CreditNote")
    refs = doc.xpath("//*[local-name()='BillingReference']/*/*[local-name()='ID']/text()")
    assert refs == ["R-2024-0301", "R-2024-0355", "R-2024-0412"]
    back = flatten(read_terms(xml).terms)
    sent = request_terms(SEVERAL_BG3)
    assert {k: back.get(k) for k in sent} == sent


def test_several_preceding_invoices_are_refused_for_cii():
    with pytest.raises(ApiError) as err:
        generate_xml(with_config(SEVERAL_BG3.read_bytes(), syntax="CII"), "en16931")
    assert err.value.http_status == 400
    assert [(d.field, d.businessTerm) for d in err.value.errors] == [
        ("invoice.additionalPrecedingInvoiceReferences", "BG-3")]
    # the stylesheet itself refuses too (a canonical document written by hand for `pipeline run transform`)
    _, canonical = normalize(SEVERAL_BG3.read_bytes(), "en16931")
    with pytest.raises(xslt.TransformError, match="one preceding invoice reference"):
        transform.to_cii(canonical, transform.params_for("en16931"))


def page_text(canonical: bytes, lang: str) -> str:
    html = xslt.run_stylesheet(XSLT_DIR / "html.xsl", canonical, {"lang": lang, "profile": ""})
    return " ".join(lxml_html.fromstring(html).text_content().split())


@pytest.mark.parametrize("lang", ["en", "de"])
@pytest.mark.parametrize("path", [REPEATED, SEVERAL_BG3], ids=lambda p: p.stem)
def test_the_page_shows_every_occurrence(path, lang):
    _, canonical = normalize(path.read_bytes(), "en16931")
    text = page_text(canonical, lang)
    sent = json.loads(path.read_bytes())["invoice"]
    further = [item for key in ("additionalInvoiceNotes", "additionalPrecedingInvoiceReferences") for item in
               sent.get(key, [])]
    further += sent["seller"].get("additionalIdentifiers", [])
    further += sent["paymentInstructions"].get("additionalCreditTransfers", [])
    further += [c for line in sent["invoiceLines"] for c in line["itemInformation"].get("additionalClassifiedIdentifiers", [])]
    assert further
    for item in further:
        for key, value in item.items():
            assert shown_as(key, value, lang) in text, (key, value)


def shown_as(key: str, value: str, lang: str) -> str:
    """A value as the page prints it: dates in the language's format, IBANs in groups of four, text as sent."""
    if key == "issueDate":
        d = date.fromisoformat(value)
        return d.strftime("%d.%m.%Y") if lang == "de" else f"{d.day} {d.strftime('%B')} {d.year}"
    if key == "accountIdentifier":
        return " ".join(value[i:i + 4] for i in range(0, len(value), 4))
    return value


# ---- terms section 2 has no field for at all: BT-8, BT-18-1, BT-19, BT-128 / BT-128-1 (extension fields) ----

@pytest.mark.parametrize("lang", ["en", "de"])
def test_the_page_shows_the_single_extension_terms(lang):
    _, canonical = normalize(REPEATED.read_bytes(), "en16931")
    text = page_text(canonical, lang)
    assert ("Lieferdatum (35)" if lang == "de" else "Delivery date (35)") in text           # BT-8
    assert "ZAEHLER-4711 (AWV)" in text and "KST-4711" in text                              # BT-18, -1, BT-19
    assert "SN-0001 (AWV)" in text and "SN-0002" in text                                    # BT-128, -1


@pytest.mark.parametrize("code,cii", [("3", "5"), ("35", "29"), ("432", "72")])
def test_tax_point_date_code_in_both_code_lists(code, cii):
    """BT-8 is UNTDID 2005 in the model and UBL, UNTDID 2475 in CII (BR-CL-06 in each syntax)."""
    body = json.loads(REPEATED.read_bytes())
    body["invoice"]["valueAddedTaxPointDateCode"] = code
    for syntax, expected in (("CII", cii), ("UBL", code)):
        xml, report = generate_xml(with_config(json.dumps(body).encode(), syntax=syntax), "xrechnung")
        assert report.valid
        found = etree.fromstring(xml).xpath("//*[local-name()='DueDateTypeCode' or local-name()='DescriptionCode']")
        assert {e.text for e in found} == {expected}
        assert read_terms(xml).terms["valueAddedTaxPointDateCode"] == code


def test_tax_point_date_code_outside_the_list_is_refused():
    body = json.loads(REPEATED.read_bytes())
    body["invoice"]["valueAddedTaxPointDateCode"] = "29"   # the CII code, not the model's
    with pytest.raises(ApiError) as err:
        generate_xml(json.dumps(body).encode(), "en16931")
    assert err.value.http_status == 400
    assert [(d.field, d.businessTerm) for d in err.value.errors] == [("invoice.valueAddedTaxPointDateCode", "BT-8")]


def test_tax_point_date_and_code_together_fail_the_official_rule():
    """BR-CO-03: BT-7 and BT-8 exclude each other; the official rule judges and the 422 names the field."""
    body = json.loads(REPEATED.read_bytes())
    body["invoice"]["valueAddedTaxPointDate"] = "2024-04-12"
    with pytest.raises(ApiError) as err:
        generate_xml(json.dumps(body).encode(), "en16931")
    assert err.value.http_status == 422
    assert ("BR-CO-03", "invoice.valueAddedTaxPointDate") in [(d.code, d.field) for d in err.value.errors]
