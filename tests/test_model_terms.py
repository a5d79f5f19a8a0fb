"""The syntax bindings of the business-term table are right: for every field a request carries, the table's CII
and UBL XPaths find it in the document the stylesheets generate (and find the same text for text fields)."""
from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

import pytest
from lxml import etree

from pipeline.write import transform
from pipeline.cli.golden import syntaxes_of, invoice_fixtures
from pipeline.flows.generate_xml import normalize
from pipeline.invoice.terms import TERMS, term_for
from roundtrip.reader import TAX_POINT_CODES

REPO = Path(__file__).resolve().parent.parent
REQUESTS = sorted((REPO / "tests" / "data").glob("request-*.json")) + invoice_fixtures()
CII_NS = {
    "rsm": "urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100",
    "ram": "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100",
    "udt": "urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100",
    "qdt": "urn:un:unece:uncefact:data:standard:QualifiedDataType:100",
}
UBL_NS = {
    "inv": "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2",
    "cn": "urn:oasis:names:specification:ubl:schema:xsd:CreditNote-2",
    "cac": "urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2",
    "cbc": "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2",
}
# Written by the stylesheets as a stylesheet parameter or not at all (docs/canonical.md rules 6-7).
NOT_IN_DOCUMENT = {"invoice.processControl.specificationIdentifier", "invoice.invoiceSubType"}


def leaves(value, path: str = "invoice"):
    """(concrete JSON path, value) of every scalar in a request's invoice."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from leaves(v, f"{path}[{i}]")
    else:
        yield path, value


def ubl_xpath(xpath: str, credit_note: bool) -> str:
    if credit_note:
        xpath = (xpath.replace("/Invoice", "/cn:CreditNote").replace("cac:InvoiceLine", "cac:CreditNoteLine")
                 .replace("cbc:InvoicedQuantity", "cbc:CreditedQuantity")
                 .replace("cbc:InvoiceTypeCode", "cbc:CreditNoteTypeCode"))
    return xpath.replace("/Invoice", "/inv:Invoice")


# Codes CII writes from another code list than the semantic model's (BT-8: UNTDID 2475 for UNTDID 2005)
CII_CODES = {"invoice.valueAddedTaxPointDateCode": {v: k for k, v in TAX_POINT_CODES.items()}}


def strings(doc, xpath: str, ns: dict) -> list[str]:
    found = doc.xpath(xpath, namespaces=ns)
    return [f if isinstance(f, str) else (f.text or "") for f in found]


@pytest.mark.parametrize("path", REQUESTS, ids=lambda p: p.name)
def test_table_xpaths_find_every_sent_field(path):
    data = json.loads(path.read_bytes(), parse_float=Decimal)
    spec = data["config"].get("spec") or "en16931"
    req, canonical = normalize(path.read_bytes(), spec)
    params = transform.params_for("en16931" if spec == "zugferd" else spec)  # ZUGFeRD embeds the EN 16931 CII
    ubl_only = syntaxes_of(path) == ("UBL",)   # CII refuses several BG-3 (D16B has one) and the extension groups
    cii = None if ubl_only else etree.fromstring(transform.to_cii(canonical, params))
    ubl = etree.fromstring(transform.to_ubl(canonical, params))
    credit = ubl.tag.endswith("}CreditNote")
    checked = 0
    sent = dict(leaves(req.invoice.model_dump(exclude_none=True)))
    for field, value in sent.items():
        term = term_for(field)
        if term.json_path in NOT_IN_DOCUMENT or term.json_path.endswith("vatRate") and "O" in str(
                sent.get(field.rsplit(".", 1)[0] + ".vatCategoryCode")):
            continue
        for doc, xpath, ns in ((cii, term.cii, CII_NS), (ubl, ubl_xpath(term.ubl, credit), UBL_NS)):
            if doc is None:
                continue
            found = strings(doc, xpath, ns)
            assert found, f"{field} ({term.bt}): nothing at {xpath}"
            if isinstance(value, str):
                want = CII_CODES.get(term.json_path, {}).get(value, value) if doc is cii else value
                if field.endswith("Date") and doc is cii:   # format 102
                    want = value[:10].replace("-", "")
                assert any(want == f or want in f for f in found), f"{field}: {want!r} not in {found} at {xpath}"
            checked += 1
    assert checked > 40


# CII D16B has one InvoiceReferencedDocument: further preceding invoices (BG-3) are UBL only (CII refuses them).
# XRechnung binds its extension's sub-invoice lines and third-party payments in UBL only (docs/canonical.md).
UBL_ONLY = ("invoice.additionalPrecedingInvoiceReferences[]", "invoice.invoiceLines[].subInvoiceLines[]",
            "invoice.thirdPartyPayments[]")


def test_every_leaf_term_has_both_bindings():
    for t in TERMS:
        if t.bt and t.bt.startswith("BT-X-"):   # Factur-X EXTENDED's line hierarchy: CII only (UBL-CR-646)
            assert (t.cii or t.json_path.startswith(UBL_ONLY)) and not t.ubl, t
        elif t.bt and t.bt.startswith("BT-"):
            assert (t.cii or t.json_path.startswith(UBL_ONLY)) and t.ubl, t


@pytest.mark.parametrize("type_code", ["380", "381"])
def test_document_reference_bindings_are_exact(type_code):
    """UBL writes BT-18 (type 130), in a CreditNote also BT-11 (type 50), as AdditionalDocumentReference like BG-24:
    each binding selects its own references only."""
    data = json.loads((REPO / "fixtures" / "invoice-all-fields.json").read_bytes(), parse_float=Decimal)
    data["invoice"]["invoiceTypeCode"] = type_code
    from pipeline.invoice.request_json import dump_request
    req, canonical = normalize(dump_request(data), "en16931")
    ubl = etree.fromstring(transform.to_ubl(canonical, transform.params_for("en16931")))
    credit = ubl.tag.endswith("}CreditNote")
    assert credit == (type_code == "381")
    inv = req.invoice

    def found(path):
        return strings(ubl, ubl_xpath(term_for(path).ubl, credit), UBL_NS)

    assert found("invoice.additionalSupportingDocuments[].reference") == [
        d.reference for d in inv.additionalSupportingDocuments]
    assert found("invoice.invoicedObjectIdentifier") == [inv.invoicedObjectIdentifier]
    assert found("invoice.projectReference") == [inv.projectReference]



# Rules about the document's syntax, not a business term: they name an element or attribute of CII / UBL that
# our stylesheets write (or never write), so a client cannot be pointed at a field for them.
SYNTAX_RULES = re.compile(r"^(CII-|UBL-|BR-DEX-|PEPPOL-EN16931-R(008|043|044)\b)")


def test_every_business_rule_of_the_installed_packs_names_a_business_term():
    """A 422 names the BT (and the JSON field where there is one) for every rule except pure syntax rules."""
    from pipeline.check import packs
    from pipeline.invoice.terms import field_for_rule

    ids = set()
    for pack in packs.list_installed():
        for sheet in {s for entry in pack.syntaxes.values() for s in entry.stylesheets}:
            ids |= set(re.findall(r'<svrl:failed-assert[^>]*?id="([^"]+)"', Path(sheet).read_text("utf-8")))
    assert len(ids) > 500
    unnamed = sorted(i for i in ids if not SYNTAX_RULES.match(i) and field_for_rule(i) == (None, None))
    assert unnamed == []
