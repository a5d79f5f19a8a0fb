"""Converting what receivers really get (issue 35): every valid XML invoice of ../shared/realworld and
../shared/corpus converted to the other syntax (a UBL target also under peppol), each attempt judged by the official
rules run on their own (tests/roundtrip/conversions.py; bench/conversions.py prints the counts per folder); the
source judged on the rules of its target (Peppol-labelled German invoices go to CII with their Peppol findings);
syntax fillers that never block; and headers that say what the converted document says, read back."""
from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import falcon.testing
import pytest
from lxml import etree

from conftest import CORPUS, SHARED
from pipeline.errors import ApiError
from pipeline.flows import job_document
from pipeline.flows.convert import convert
from pipeline.flows.parse import parse, validate_source
from pipeline.invoice import peppol
from pipeline.invoice.specs import EN16931_ID, XRECHNUNG_EXTENSION_ID, XRECHNUNG_ID
from pipeline.service.app import create_app
from roundtrip import official
from roundtrip.conversions import MISSES, OTHER_OUTCOME, SAME, attempts_for, folder_of, labelled, xml_files
from roundtrip.reader import diff_lines, flatten, read_terms
from test_parse import upload

REPO = Path(__file__).resolve().parents[1]
REALWORLD = SHARED / "realworld"
PEPPOL_LABELLED = REALWORLD / "corpus/XML-Rechnung/UBL/EN16931_Einfach.ubl.xml"  # German software, Peppol BT-24
PROJECT_NAME = REALWORLD / "corpus/XML-Rechnung/CII/XRECHNUNG_Elektron.cii.xml"  # ram:Name "Projekt" beside BT-11
CARD = CORPUS / "xrechnung-testsuite/business-cases/standard/03.03a-INVOICE_ubl.xml"  # cbc:NetworkID beside BT-87
NORWEGIAN = REALWORLD / "peppol-bis3/national-examples/NO/Norwegian-example-1.xml"
XRECHNUNG_UBL = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml"
TAX_CURRENCY = CORPUS / "en16931-cen/ubl/examples/sample-discount-price.xml"   # BT-6 EUR beside BT-5 EUR
EXTENSION_22 = REALWORLD / "mustang/library/ubl/04.01a-INVOICE_ubl.xml"   # XRechnung 2.2 extension, sub-lines
EXTENSION_30 = CORPUS / "xrechnung-testsuite/business-cases/extension/04.01a-INVOICE_ubl.xml"   # the same case, 3.0
XRECHNUNG_22_EXTENSION_ID = ("urn:cen.eu:en16931:2017#compliant#urn:xoev-de:kosit:standard:xrechnung_2.2"
                             "#conformant#urn:xoev-de:kosit:extension:xrechnung_2.2")
EINFACH_CII = REALWORLD / "corpus/XML-Rechnung/CII/EN16931_Einfach.cii.xml"
DEPARTMENT = REALWORLD / "corpus/XML-Rechnung/CII/XRECHNUNG_Betriebskostenabrechnung.cii.xml"  # beside the person

# Attempts that end otherwise, and why (the official rules cannot show the refusal right, or the CEN samples
# carry what the model reads one way): reviewed, each of them. Changing this list is a decision, not a rerun.
_BASIS = ("net and gross price with different base quantities: EN 16931 has one BT-149 (UBL one BaseQuantity); "
          "no official rule flags the second")
KNOWN_OTHER = {
    "corpus/en16931-cen/cii/examples/CII_business_example_01.xml": _BASIS,
    "corpus/en16931-cen/cii/examples/CII_example2.xml": _BASIS,
    "corpus/en16931-cen/cii/examples/CII_example5.xml": _BASIS,
    "corpus/en16931-cen/test/testfiles/ubl-tc434-test-1.xml":
        "the buyer's tax registration that is no VAT id (NO...MVA with a non-VAT scheme): EN 16931 has no term",
    "corpus/kosit-validator-configuration-tests/cen-unit-test/cii-br-ae-02-and-br-ae-03-with-bt-32.xml":
        "a second buyer tax registration: EN 16931 has one BT-48",
    "corpus/kosit-validator-configuration-tests/integration/diga-cii-extension-codes.xml":
        "a second buyer identifier (ram:ID[2]): EN 16931 has one BT-46",
    "corpus/xrechnung-schematron-tests/cii/cii-br-de-25-test-bg-19-with-bt-86-1.xml":
        "a creditor BIC beside a direct debit (the unit test of BR-DE-25-b)",
    "corpus/xrechnung-schematron-tests/cii/cii-br-de-25-test-bg-19-with-bt-86-3.xml":
        "a creditor BIC beside a direct debit (the unit test of BR-DE-25-b)",
}


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


@pytest.fixture(scope="module")
def attempts():
    found = []
    for root in (REALWORLD, CORPUS):
        for path in xml_files(root):
            found += attempts_for(path.relative_to(SHARED).as_posix(), path.read_bytes())
    # 72: issue 37 made XRechnung 1.x / 2.x documents indeterminate (rules not installed); those whose CEN rules fail
    # are no valid EN 16931 either
    assert len({a.name for a in found if a.name.startswith("realworld/")}) >= 70
    return found


# ---- the target ---------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_valid_invoices_convert_or_are_refused_for_a_reason_the_official_rules_show(attempts):
    by_folder = defaultdict(lambda: defaultdict(int))
    for a in attempts:
        by_folder[folder_of(a.name)][a.outcome] += 1
    print("\n" + "\n".join(f"{folder}: {dict(counts)}" for folder, counts in sorted(by_folder.items())))
    realworld = defaultdict(list)
    for a in attempts:
        if a.name.startswith("realworld/"):
            realworld[a.name].append(a)
    missed = [name for name, tries in realworld.items() if any(a.outcome in MISSES for a in tries)]
    assert len(missed) * 20 <= len(realworld), missed  # at most 1 in 20
    other = {a.name for a in attempts if a.outcome == OTHER_OUTCOME}
    assert other == set(KNOWN_OTHER), {a.name: a.detail for a in attempts if a.outcome == OTHER_OUTCOME
                                       and a.name not in KNOWN_OTHER}


@pytest.mark.slow
def test_every_converted_document_says_in_its_headers_what_it_says(client, attempts):
    """Each valid real-world invoice converted through the endpoint: every X-Conversion-* header checked against
    the document read back (`_check_headers`)."""
    done = [a for a in attempts if a.name.startswith("realworld/") and a.outcome == SAME]
    assert len(done) >= 55
    for a in done:
        data = (SHARED / a.name).read_bytes()
        resp = upload(client, data, {"to": a.to, **({"spec": a.spec} if a.spec else {})},
                      path="/v1/invoice/convert")
        assert resp.status_code == 200, (a.name, resp.text)
        _check_headers(data, resp.content, resp.headers, a.name)


def _check_headers(source: bytes, document: bytes, headers, name: str) -> None:
    """Every X-Conversion-* header against the converted document read back: each changed value is what the document
    states; each lost or technical value is in the source at the xpath named and nowhere in the document's terms
    (unless the target is the source's syntax, which keeps a filler where it was)."""
    terms = flatten(read_terms(document).terms)
    for change in filter(None, (headers.get("X-Conversion-Changed") or "").split("; ")):
        bt, _, rest = change.partition(" ")
        source_value, _, value = rest.partition(" -> ")
        if bt == "BT-24":
            assert terms["processControl.specificationIdentifier"] == value, (name, change)
            assert flatten(read_terms(source).terms).get("processControl.specificationIdentifier") == source_value
        elif bt == "BT-110":
            assert Decimal(terms["documentTotals.taxTotalAmount"]) == Decimal(value), (name, change)
        elif bt == "BT-6":   # equal to BT-5, not written: the document has no VAT accounting currency of its own
            assert "vatAccountingCurrencyCode" not in terms and terms["currencyCode"] == source_value, (name, change)
        elif bt == "BT-81":
            assert terms["paymentInstructions.meansCode"] == value, (name, change)
        elif bt == "BT-13":
            assert terms["purchaseOrderReference"] == value, (name, change)
        elif bt in ("BT-147", "BT-148"):
            # the lines whose source lacks the term written (a source may state all three inconsistently: CEN's
            # guide-example2 line 3, 2.75 - 0.75 != 2.48, which no CEN rule checks and the conversion keeps)
            stated = flatten(read_terms(source).terms)
            derived = "priceDiscount" if bt == "BT-147" else "grossPrice"
            for key in [k for k in terms if k.endswith(".priceDetails.netPrice")]:
                base = key[:-len("netPrice")]
                if base + derived in terms and base + derived not in stated:
                    assert Decimal(terms[base + "grossPrice"]) - Decimal(terms[key]) == Decimal(
                        terms[base + "priceDiscount"]), (name, change)
        elif bt == "BT-99":   # a Factur-X EXTENDED logistics service charge, written as a document level charge
            assert "logistics service charge" in source_value and Decimal(value) in {
                Decimal(v) for k, v in terms.items() if re.fullmatch(r"documentLevelCharges\[\d+\]\.amount", k)}
            assert Decimal(value) in {Decimal(v.strip()) for v in etree.fromstring(source, official.PARSER).xpath(
                "//*[local-name()='SpecifiedLogisticsServiceCharge']/*[local-name()='AppliedAmount']/text()")}
        else:  # a date without its time zone (CII's format 102)
            assert value in terms.values() and source_value.startswith(value), (name, change)
    tree = etree.fromstring(source, official.PARSER)
    for header, count in (("X-Conversion-Lost", "X-Conversion-Losses"),
                          ("X-Conversion-Technical-Left", "X-Conversion-Technical")):
        text = headers.get(header) or ""
        paths = [p for p in text.split("; ") if p]
        if text.endswith(" ..."):   # cut after 2000 characters (as the API reference says): the last path is partial
            paths = paths[:-1]
            assert len(paths) < int(headers[count]), (name, header)
        else:
            assert len(paths) == int(headers.get(count) or 0), (name, header)
        for path in paths:
            if path.startswith("PDF embedded file"):   # a PDF source's second invoice file: a file, not a node
                continue
            steps = official.readable_steps(path)
            assert steps, (name, path)
            assert _value_at(tree, steps) is not None, (name, path)


def _value_at(root: etree._Element, steps) -> str | None:
    """The value at readable `steps` (an element's text or an attribute) of a source document."""
    (name, _), rest = steps[0], steps[1:]
    if etree.QName(root).localname != name:
        return None
    node = root
    for name, position in rest:
        if name.startswith("@"):
            return next((v for k, v in node.attrib.items() if k.rpartition("}")[2] == name[1:]), None)
        matches = [c for c in node if isinstance(c.tag, str) and etree.QName(c).localname == name]
        if len(matches) < position:
            return None
        node = matches[position - 1]
    return node.text


# ---- 1. Peppol-labelled invoices from German software ---------------------------------------------------------

def test_a_peppol_labelled_german_invoice_converts_to_cii_with_its_peppol_findings(client):
    """UBL from German software with Peppol's BT-24 and no electronic addresses, no buyer reference: valid EN 16931,
    invalid Peppol. Going to CII it is judged on the EN 16931 rules; the Peppol findings travel in a header, the
    CII names the EN 16931 rules and says so, the official CEN rules alone find it valid, the terms are the same."""
    data = PEPPOL_LABELLED.read_bytes()
    peppol_errors = official.peppol(data).errors
    assert {"PEPPOL-EN16931-R003", "PEPPOL-EN16931-R010", "PEPPOL-EN16931-R020"} <= peppol_errors
    assert official.cen(data).valid
    resp = upload(client, data, {"to": "CII"}, path="/v1/invoice/convert")
    assert resp.status_code == 200, resp.text
    findings = resp.headers["X-Source-Findings"].split(", ")
    assert set(findings) == peppol_errors - official.cen(data).errors, findings
    assert resp.headers["X-Source-Rules"].startswith("en16931 ")
    assert resp.headers["X-Conversion-Changed"] == f"BT-24 {peppol.BILLING_ID} -> {EN16931_ID}"
    assert official.cen(resp.content).valid
    _check_headers(data, resp.content, resp.headers, PEPPOL_LABELLED.name)
    source, target = flatten(read_terms(data).terms), flatten(read_terms(resp.content).terms)
    source.pop("processControl.specificationIdentifier"), target.pop("processControl.specificationIdentifier")
    assert source == target


def test_an_explicit_en16931_spec_decides_on_the_command_line_too(tmp_path):
    """`pipeline convert --to CII --spec en16931 --json`: converted, with the Peppol findings in its JSON."""
    out = tmp_path / "out.xml"
    run = subprocess.run([sys.executable, "-m", "pipeline", "convert", str(PEPPOL_LABELLED), "--to", "cii", "--spec",
                          "en16931", "--json", "-o", str(out)], capture_output=True, cwd=REPO, timeout=180)
    assert run.returncode == 0, run.stderr
    said = json.loads(run.stdout)
    assert said["judgedOn"].startswith("en16931 ") and said["output"] == str(out)
    assert {"PEPPOL-EN16931-R010", "PEPPOL-EN16931-R020"} <= {f["code"] for f in said["sourceFindings"]}
    assert all(f["rules"].startswith("peppol ") and f["location"]["line"] for f in said["sourceFindings"])
    assert [c["businessTerm"] for c in said["changed"]] == ["BT-24"] and said["lost"] == []
    assert official.cen(out.read_bytes()).valid


def test_a_job_result_carries_the_same_findings():
    kind, line, _ = job_document.run("convert", {"to": "CII", "spec": None}, "a.xml", PEPPOL_LABELLED.read_bytes())
    entry = json.loads(line)
    assert kind == "valid" and official.cen(base64.b64decode(entry["document"])).valid
    assert {"PEPPOL-EN16931-R010", "PEPPOL-EN16931-R020"} <= {f["code"] for f in entry["conversion"]["sourceFindings"]}


def test_a_cius_target_still_refuses_what_its_rules_refuse():
    """Going to the CIUS the source claims (here XRechnung, the default for an XRechnung source), its findings
    refuse; the refused rule is one the official XRechnung rules fail on the source."""
    data = (REALWORLD / "corpus/XML-Rechnung/UBL/XRECHNUNG_Elektron.ubl.xml").read_bytes()
    with pytest.raises(ApiError) as refused:
        convert(data, "CII")
    assert refused.value.error_code == "SOURCE_INVALID" and "xrechnung" in refused.value.message
    assert {e.code for e in refused.value.errors} <= official.xrechnung(data).errors
    converted = convert(data, "CII", "en16931")   # an explicit spec decides: valid EN 16931, findings travel
    assert [f["code"] for f in converted.source_findings] == ["PEPPOL-EN16931-R008"]


def test_a_peppol_target_names_the_peppol_rules_the_content_fails():
    """An EN 16931 CII without electronic addresses going to Peppol UBL: 422 naming the PEPPOL rules that the
    official Peppol rules fail on the same content (never a CONVERSION_LOSS: nothing is lost)."""
    data = (REALWORLD / "corpus/XML-Rechnung/CII/EN16931_Einfach.cii.xml").read_bytes()
    with pytest.raises(ApiError) as refused:
        convert(data, "UBL", "peppol")
    assert refused.value.error_code == "VALIDATION_FAILED" and "peppol rules" in refused.value.message
    named = {e.code for e in refused.value.errors}
    assert {"PEPPOL-EN16931-R010", "PEPPOL-EN16931-R020"} <= named
    assert named <= official.peppol(labelled(convert(data, "UBL", "en16931").document, "peppol")).errors


# ---- 2. Syntax fillers never block --------------------------------------------------------------------------

def _without_department(data: bytes) -> bytes:
    return re.sub(rb"\s*<ram:DepartmentName>[^<]*</ram:DepartmentName>", b"", data)


def test_a_cii_project_name_is_technical_going_to_ubl_and_kept_going_to_cii():
    """CII requires a name beside the project reference (BT-11; "Projekt" here), UBL has no place for it: listed
    as technical, never a loss. A ZUGFeRD PDF holds CII: there it stays as the source wrote it."""
    data = _without_department(PROJECT_NAME.read_bytes())
    parsed = parse(data)
    name = [u for u in parsed.unmapped if u["xpath"].endswith("ram:SpecifiedProcuringProject/ram:Name")]
    assert [(u["value"], u["technical"], u["businessTerm"]) for u in name] == [("Projekt", True, None)]
    ubl = convert(data, "UBL")
    assert ubl.losses == [] and [t["value"] for t in ubl.technical] == ["Projekt"]
    assert official.xrechnung(ubl.document).valid
    pdf = convert(data, "ZUGFERD")
    assert pdf.technical == [] and pdf.losses == []
    embedded = parse(pdf.document).source.xml
    assert b"<ram:Name>Projekt</ram:Name>" in embedded


def test_a_ubl_card_network_is_technical_going_to_cii_and_kept_in_ubl():
    data = CARD.read_bytes()
    cii = convert(data, "CII")
    assert cii.losses == [] and [t["xpath"].rpartition("/")[2] for t in cii.technical] == ["cbc:NetworkID"]
    network = cii.technical[0]["value"]
    assert official.xrechnung(cii.document).valid
    ubl = convert(data, "UBL")   # XRechnung UBL written again: the card network where UBL has its place
    assert ubl.technical == [] and f"<cbc:NetworkID>{network}</cbc:NetworkID>".encode() in ubl.document


def test_the_attributes_of_an_empty_attachment_are_technical():
    """mimeCode and filename of an empty binary object describe no attachment: technical, no allowLoss needed."""
    data = PEPPOL_LABELLED.read_bytes().replace(b"<cac:AccountingSupplierParty>", (
        b"<cac:AdditionalDocumentReference><cbc:ID>Anlage</cbc:ID><cac:Attachment>"
        b'<cbc:EmbeddedDocumentBinaryObject mimeCode="application/pdf" filename="anlage.pdf"/>'
        b"</cac:Attachment></cac:AdditionalDocumentReference><cac:AccountingSupplierParty>"), 1)
    done = convert(data, "CII")
    assert done.losses == [] and sorted(t["xpath"].rpartition("/")[2] for t in done.technical) == [
        "@filename", "@mimeCode"]
    assert official.cen(done.document).valid


def test_the_scheme_of_an_empty_electronic_address_is_technical():
    """An attribute qualifies its element's value: beside none (the CEN sample's empty buyer address with scheme
    EM) it qualifies nothing, technical like an empty attachment's mimeCode and filename, never a loss."""
    done = convert((CORPUS / "en16931-cen/cii/examples/XRechnung-O.xml").read_bytes(), "UBL")
    assert [t["xpath"].rpartition("/")[2] for t in done.technical] == ["@schemeID"] and done.losses == []
    assert official.cen(done.document).valid


def _line_reference(type_code: str | None, guideline_id: str) -> bytes:
    """XRechnung-O (its line references have no type code) with the lines' references typed so, under BT-24."""
    tree = etree.parse(str(CORPUS / "en16931-cen/cii/examples/XRechnung-O.xml"))
    ram = "{urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100}"
    tree.find(f".//{ram}GuidelineSpecifiedDocumentContextParameter/{ram}ID").text = guideline_id
    for reference in tree.iter(f"{ram}AdditionalReferencedDocument"):
        if type_code is not None and reference.getparent().tag == f"{ram}SpecifiedLineTradeSettlement":
            etree.SubElement(reference, f"{ram}TypeCode").text = type_code
    return etree.tostring(tree, xml_declaration=True, encoding="UTF-8")


@pytest.mark.parametrize("type_code, guideline_id, read", [
    (None, EN16931_ID, True),      # EN 16931 binds no other document to a line: BT-128
    ("130", EN16931_ID, True),
    (None, EN16931_ID + "#conformant#urn:factur-x.eu:1p0:extended", False),  # EXTENDED has types 50 and 916 too
    ("130", EN16931_ID + "#conformant#urn:factur-x.eu:1p0:extended", True),
])
def test_a_line_reference_without_type_code_is_the_object_identifier_except_in_extended(type_code, guideline_id,
                                                                                       read):
    parsed = parse(_line_reference(type_code, guideline_id))
    assert [line.get("objectIdentifier") for line in parsed.invoice["invoiceLines"]] == (
        ["50028642477"] * 2 if read else [None, None])
    # what is not read is said so, never dropped in silence
    unread = [u for u in parsed.unmapped if u["xpath"].endswith("AdditionalReferencedDocument/ram:IssuerAssignedID")]
    assert len(unread) == (0 if read else 2)


# ---- 3. Headers that say what the document says ----------------------------------------------------------------

def test_xrechnung_to_peppol_says_the_peppol_identifier_it_writes(client):
    data = re.sub(rb"(<cbc:EndpointID) schemeID=\"EM\">[^<]*(</cbc:EndpointID>)", lambda m: (
        m.group(1) + b' schemeID="0088">4000001123452' + m.group(2)), XRECHNUNG_UBL.read_bytes())
    resp = upload(client, data, {"to": "UBL", "spec": "peppol"}, path="/v1/invoice/convert")
    assert resp.status_code == 200, resp.text
    assert resp.headers["X-Conversion-Changed"] == f"BT-24 {XRECHNUNG_ID} -> {peppol.BILLING_ID}"
    assert flatten(read_terms(resp.content).terms)["processControl.specificationIdentifier"] == peppol.BILLING_ID
    assert official.peppol(resp.content).valid
    _check_headers(data, resp.content, resp.headers, XRECHNUNG_UBL.name)


def test_a_norwegian_peppol_example_loses_nothing_and_names_its_technical_values(client):
    data = NORWEGIAN.read_bytes()
    resp = upload(client, data, {"to": "CII"}, path="/v1/invoice/convert")
    assert resp.status_code == 200, resp.text
    assert "X-Conversion-Losses" not in resp.headers and "X-Conversion-Lost" not in resp.headers
    technical = resp.headers["X-Conversion-Technical-Left"].split("; ")
    assert len(technical) == int(resp.headers["X-Conversion-Technical"]) == 5
    assert all(p.endswith(("cac:TaxScheme/cbc:ID", "@schemeID")) for p in technical), technical
    _check_headers(data, resp.content, resp.headers, NORWEGIAN.name)


def test_a_zugferd_target_says_the_identifier_its_profile_writes(client):
    """A ZUGFeRD profile writes its own BT-24 whatever the source states: an XRechnung invoice labelled with the
    extension's identifier (no extension content) became a PDF carrying the standard's, and the answer said nothing
    (X-Conversion-Changed was absent). Built from a real XRechnung CII; the department beside the person is left
    out with allowLoss (the Factur-X rules count it as a second BT-41, CII-SR-465)."""
    data = DEPARTMENT.read_bytes().replace(XRECHNUNG_ID.encode(), XRECHNUNG_EXTENSION_ID.encode(), 1)
    resp = upload(client, data, {"to": "ZUGFERD", "allowLoss": True}, path="/v1/invoice/convert")
    assert resp.status_code == 200, resp.text
    assert resp.headers["X-Conversion-Changed"] == f"BT-24 {XRECHNUNG_EXTENSION_ID} -> {XRECHNUNG_ID}"
    embedded = parse(resp.content).source
    assert embedded.specification_id == XRECHNUNG_ID and validate_source(embedded).valid
    assert resp.headers["X-Conversion-Lost"].endswith("ram:SellerTradeParty/ram:DefinedTradeContact/ram:DepartmentName")
    _check_headers(data, embedded.xml, resp.headers, DEPARTMENT.name)


def test_a_contact_department_beside_the_person_is_kept_in_cii_and_a_loss_elsewhere(client):
    """CII has a place for a department beside the contact's person (EN 16931 has no term for it): CII -> CII (to
    EN 16931) keeps it where it was, instead of refusing it as a loss; UBL (one contact name) and a ZUGFeRD PDF
    (whose Factur-X rules allow one BT-41) still refuse it, and allowLoss names it."""
    data = DEPARTMENT.read_bytes()
    resp = upload(client, data, {"to": "CII", "spec": "en16931"}, path="/v1/invoice/convert")
    assert resp.status_code == 200, resp.text
    assert "X-Conversion-Losses" not in resp.headers
    contact = etree.fromstring(resp.content).find(".//{*}SellerTradeParty/{*}DefinedTradeContact")
    assert [(etree.QName(e).localname, e.text) for e in contact[:2]] == [("PersonName", "Max Mustermann"),
                                                                         ("DepartmentName", "Muster-Einkauf")]
    assert official.cen(resp.content).valid
    source, target = flatten(read_terms(data).terms), flatten(read_terms(resp.content).terms)
    assert source.pop("processControl.specificationIdentifier") == XRECHNUNG_ID
    assert target.pop("processControl.specificationIdentifier") == EN16931_ID  # said in X-Conversion-Changed
    assert source == target, "\n".join(diff_lines(source, target))
    for to, why in (("UBL", "UBL's contact has one name"), ("ZUGFERD", "(CII-SR-465)")):
        refused = upload(client, data, {"to": to}, path="/v1/invoice/convert")
        assert refused.status_code == 422 and refused.json["errorCode"] == "CONVERSION_LOSS", (to, refused.text)
        [entry] = refused.json["errors"]
        assert entry["message"].split(" (line")[0].endswith("/ram:DepartmentName") and why in entry["message"], to


def test_a_vat_accounting_currency_equal_to_the_invoice_currency_is_said_not_dropped_silently(client):
    """BT-6 = BT-5 says nothing the document without it does not say, and CII refuses it (BR-53): not written, and
    the answer says so (it was left out without a word)."""
    data = TAX_CURRENCY.read_bytes()
    resp = upload(client, data, {"to": "CII"}, path="/v1/invoice/convert")
    assert resp.status_code == 200, resp.text
    assert resp.headers["X-Conversion-Changed"] == "BT-6 EUR -> (not written)"
    assert official.cen(resp.content).valid
    _check_headers(data, resp.content, resp.headers, TAX_CURRENCY.name)
    source, target = flatten(read_terms(data).terms), flatten(read_terms(resp.content).terms)
    assert source.pop("vatAccountingCurrencyCode") == source["currencyCode"]
    assert source == target


def test_a_derived_gross_price_is_checked_on_the_lines_it_was_derived_for(client):
    """CEN's guide-example2 states line 3's gross price, discount and net price in disagreement (2.75 - 0.75 !=
    2.48: no CEN rule checks it, and the conversion keeps the three as stated); BT-148 is derived for line 1 only, and
    the header check holds it to that line (it held every line with a gross price to gross - net = discount)."""
    source = CORPUS / "en16931-cen/ubl/examples/guide-example2.xml"
    data = source.read_bytes()
    resp = upload(client, data, {"to": "CII"}, path="/v1/invoice/convert")
    assert resp.status_code == 200, resp.text
    assert resp.headers["X-Conversion-Changed"] == "BT-148 (not in the source) -> net price + price discount"
    _check_headers(data, resp.content, resp.headers, source.name)
    terms = flatten(read_terms(resp.content).terms)
    assert [terms[f"invoiceLines[2].priceDetails.{k}"] for k in ("grossPrice", "priceDiscount", "netPrice")] == [
        "2.75", "0.75", "2.48"]


# ---- the XRechnung extension of releases before 3.0 ---------------------------------------------------------------

def test_an_xrechnung_2_2_extension_converts_to_the_3_0_extension_and_says_so():
    """The official 3.0 extension case with its BT-24 as XRechnung 2.2 wrote it: converted (it was refused as not
    convertible: the model took its sub-lines for an en16931 document's), BT-24 written as 3.0's extension and said,
    the official XRechnung rules find it valid, the sub-lines and every other term as in the source."""
    data = EXTENSION_30.read_bytes().replace(XRECHNUNG_EXTENSION_ID.encode(), XRECHNUNG_22_EXTENSION_ID.encode())
    assert XRECHNUNG_22_EXTENSION_ID.encode() in data
    done = convert(data, "UBL")
    assert [(c["businessTerm"], c["source"], c["written"]) for c in done.changed] == [
        ("BT-24", XRECHNUNG_22_EXTENSION_ID, XRECHNUNG_EXTENSION_ID)]
    assert done.losses == [] and official.xrechnung(done.document).valid
    source, target = flatten(read_terms(data).terms), flatten(read_terms(done.document).terms)
    assert any(".subInvoiceLines[" in k for k in target)
    assert source.pop("processControl.specificationIdentifier") == XRECHNUNG_22_EXTENSION_ID
    assert target.pop("processControl.specificationIdentifier") == XRECHNUNG_EXTENSION_ID
    assert source == target


def test_an_xrechnung_2_2_extension_is_refused_for_what_the_target_cannot_hold():
    """The real 2.2 extension invoice: its telefax has no term (a loss), its sub-lines have no place in CII nor in a
    ZUGFeRD PDF's CII (each of their values a loss, which allowLoss leaves out: the lines above state their sums),
    and as XRechnung 3.0 (its default target, in either syntax) it lacks the electronic addresses 3.0 requires (the
    target's rules refuse): each said, none of them SOURCE_NOT_CONVERTIBLE, as all of them were."""
    data = EXTENSION_22.read_bytes()
    with pytest.raises(ApiError) as lost:
        convert(data, "CII")
    assert lost.value.error_code == "CONVERSION_LOSS" and "allowLoss true" in lost.value.message
    where = [e.message.split(" (line")[0] for e in lost.value.errors]
    assert where[0] == "/ubl:Invoice/cac:AccountingSupplierParty/cac:Party/cac:Contact/cbc:Telefax"
    assert len(where) > 10 and all("/cac:SubInvoiceLine" in w for w in where[1:])
    for to in ("CII", "ZUGFERD", "UBL"):   # XRechnung 3.0 in each: CII, a ZUGFeRD PDF's CII, UBL
        with pytest.raises(ApiError) as refused:
            convert(data, to, allow_loss=True)
        assert refused.value.error_code == "VALIDATION_FAILED" and "XRECHNUNG" in refused.value.message.upper()
        assert {"PEPPOL-EN16931-R010", "PEPPOL-EN16931-R020"} <= {e.code for e in refused.value.errors}
        # (the refusal lists the first 100; UBL under the extension keeps the sub-lines)
        left = 1 if to == "UBL" else int(re.search(r"cannot carry (\d+) value", lost.value.message).group(1))
        assert refused.value.message.startswith(f"Without the {left} source value(s) that allowLoss left out"), to
    assert b"EndpointID" not in data


# ---- valid invoices beyond the bounds of a JSON request ------------------------------------------------------------

def _beyond_bounds(data: bytes) -> bytes:
    """EN16931_Einfach with a seller name of 1,215 characters and a gross price with 12 decimal places: valid EN 16931
    (which bounds neither), beyond what a JSON request may send (1,000 characters, 10 decimal places)."""
    data = data.replace(b"<ram:Name>Lieferant GmbH</ram:Name>", b"<ram:Name>Lieferant GmbH " + b"x" * 1200
                        + b"</ram:Name>", 1)
    return re.sub(rb"(<ram:GrossPriceProductTradePrice>\s*<ram:ChargeAmount>[0-9]+\.[0-9]+)(</ram:ChargeAmount>)",
                  rb"\g<1>000000000001\2", data, count=1)


@pytest.mark.parametrize("to", ["UBL", "CII"])
def test_a_valid_invoice_beyond_a_json_requests_bounds_converts_with_every_term(to):
    data = _beyond_bounds(EINFACH_CII.read_bytes())
    assert data.count(b"x" * 1200) == 1 and b"000000000001</ram:ChargeAmount>" in data
    assert official.cen(data).valid
    parsed = parse(data)   # read as stated, but generating from its JSON would refuse it: no complete parse
    assert not parsed.complete and {(e.code, e.field) for e in parsed.problems} == {
        ("TOO_LONG", "invoice.seller.name"), ("OUT_OF_RANGE", "invoice.invoiceLines[0].priceDetails.grossPrice")}
    done = convert(data, to)
    assert done.losses == [] and official.cen(done.document).valid
    source, target = flatten(read_terms(data).terms), flatten(read_terms(done.document).terms)
    assert len(target["seller.name"]) == 1215
    price = "invoiceLines[0].priceDetails.grossPrice"
    assert Decimal(target[price]) == Decimal(source[price]) and Decimal(source[price]).as_tuple().exponent < -10
    if to == "UBL":   # UBL's price allowance needs BT-147: gross - net, said
        assert [c["businessTerm"] for c in done.changed] == ["BT-147"]
        target = {k: v for k, v in target.items() if not k.endswith(".priceDiscount")}
    assert diff_lines(source, target) == []
