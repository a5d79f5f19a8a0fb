"""Round trips: no business term dropped or altered between the request and the generated CII / UBL.

1. Fixtures: generated CII and UBL, read back with an independent reader (tests/roundtrip/reader.py),
   carry every term of the request and every computed value of the canonical XML (amounts as decimals).
2. Official corpus (XRechnung testsuite, CEN examples): parse (the reading side, `pipeline.flows.parse`) ->
   generate in both syntaxes -> valid, and the business terms read back equal the source's. Terms the JSON model
   cannot carry (several notes, several payment accounts, BT-19, ...) are reported as warnings and must be
   listed in `unmapped` by the parse, never silently compared away.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from conftest import CORPUS
from pipeline.cli.golden import FIXTURES, specs_of, syntaxes_of, invoice_fixtures
from pipeline.invoice import peppol, terms
from pipeline.errors import ApiError
from pipeline.invoice.specs import EN16931_ID, XRECHNUNG_ID
from pipeline.flows.generate_xml import generate_xml, normalize
from pipeline.invoice.request_json import dump_request, load_request, with_config
from pipeline.flows.parse import parse, source_of, source_spec
from roundtrip.reader import NOT_WRITTEN, canonical_terms, diff_lines, flatten, read_terms

FIXTURE_FILES = sorted(f for f in invoice_fixtures() if specs_of(f))  # the XML requests (not a PDF's)


def _spec(request: dict) -> str:
    return request.get("config", {}).get("spec") or "en16931"


def _subset_diff(expected: dict[str, str], actual: dict[str, str]) -> list[str]:
    """Diff lines for every expected term that is missing or different in `actual`."""
    wrong = {k: v for k, v in expected.items() if actual.get(k) != v}
    return diff_lines(wrong, {k: actual[k] for k in wrong if k in actual})


FIXTURE_CASES = [(f, syntax) for f in FIXTURE_FILES for syntax in syntaxes_of(f)]


@pytest.mark.parametrize(("fixture", "syntax"), FIXTURE_CASES, ids=[f"{f.stem}-{s}" for f, s in FIXTURE_CASES])
def test_fixture_round_trip(fixture: Path, syntax: str):
    body = with_config(fixture.read_bytes(), syntax=syntax)
    request = load_request(body)
    spec = _spec(request)
    xml, report = generate_xml(body, spec)
    assert report.valid
    back = flatten(read_terms(xml).terms)

    sent = {k: v for k, v in flatten(request["invoice"]).items() if k.split(".")[0] not in NOT_WRITTEN}
    problems = _subset_diff(sent, back)
    assert not problems, "request terms dropped or altered:\n" + "\n".join(problems)

    _, canonical = normalize(body, spec)
    computed = {k: v for k, v in flatten(canonical_terms(canonical)).items() if k.split(".")[0] not in NOT_WRITTEN}
    problems = _subset_diff(computed, back)
    assert not problems, "canonical (calculated) terms dropped or altered:\n" + "\n".join(problems)


def test_cii_and_ubl_carry_the_same_terms():
    """Both syntaxes of the richest fixture read back to identical business terms."""
    body = (FIXTURES / "invoice-all-fields.json").read_bytes()
    cii = flatten(read_terms(generate_xml(with_config(body, syntax="CII"), "en16931")[0]).terms)
    ubl = flatten(read_terms(generate_xml(with_config(body, syntax="UBL"), "en16931")[0]).terms)
    assert cii == ubl, "\n".join(diff_lines(cii, ubl))


# ---- official corpus -------------------------------------------------------------------------------------

def _corpus() -> list[tuple[str, Path, str]]:
    out = []
    for path in sorted((CORPUS / "xrechnung-testsuite").rglob("*.xml")):
        out.append(("xrechnung", path, f"xrechnung-testsuite/{path.name}"))
    for sub in ("cii/examples", "ubl/examples"):
        for path in sorted((CORPUS / "en16931-cen" / sub).glob("*.xml")):
            # a UBL example whose BT-24 is Peppol BIS Billing 3.0 is read as Peppol
            out.append((source_spec(source_of(path.read_bytes())), path, f"en16931-cen/{path.name}"))
    return out


CORPUS_CASES = _corpus()
SPEC_IDS = {"xrechnung": XRECHNUNG_ID, "en16931": EN16931_ID, "peppol": peppol.BILLING_ID}
BT24 = "processControl.specificationIdentifier"


def _dropped_on_purpose(terms: dict[str, str]) -> set[str]:
    """Source terms the generator leaves out: BT-6 equal to BT-5 (docs/canonical.md: it says nothing, and CII's
    BR-53 and XRechnung's PEPPOL-EN16931-R005 refuse it)."""
    same = terms.get("vatAccountingCurrencyCode") == terms.get("currencyCode")
    return {"vatAccountingCurrencyCode"} if same and "currencyCode" in terms else set()


def _added_on_purpose(key: str, value: str) -> bool:
    """Terms the generator writes that a source may lack: the BT-23 default, derived attachment file names,
    BT-147 = gross - net beside a gross price in UBL, BT-148 = net + discount beside a discount in CII (each syntax
    needs the other amount; convert lists it in `changed`), UBL's
    required order id ('NA') next to a lone BT-14, and BT-110 = 0 (the sum of the BT-117, which a source without
    VAT may leave out)."""
    return (key == "processControl.businessProcessType" or key.endswith(".attachedDocumentFilename")
            or key.endswith((".priceDiscount", ".grossPrice")) or (key == "purchaseOrderReference" and value == "NA")
            or (key == "documentTotals.taxTotalAmount" and value == "0"))


# Sources the pipeline cannot carry, and why. Each is asserted to fail exactly so: when one starts to round-trip,
# its test fails and the entry must go.
_SPEC_REQUIRED = "service spec section 2 requires a field that EN 16931 leaves optional"
BLOCKED: dict[tuple[str, str | None], tuple[int, str, str]] = {
    **{(name, None): (400, "REQUIRED invoice.seller.contact.contactPoint", _SPEC_REQUIRED) for name in (
        "CII_example3.xml", "CII_example8.xml", "CII_example9.xml", "guide-example3.xml",
        "ubl-tc434-creditnote1.xml", "ubl-tc434-example3.xml", "ubl-tc434-example8.xml", "ubl-tc434-example9.xml")},
    **{(name, None): (400, "REQUIRED invoice.seller.postalAddress.city", _SPEC_REQUIRED) for name in (
        "CII_example6.xml", "issue116.xml", "ubl-tc434-example6.xml")},
    **{(name, None): (400, "REQUIRED invoice.seller.postalAddress.addressLine1", _SPEC_REQUIRED) for name in (
        "01.05_minimal_test_ubl.xml", "01.05_minimal_test_uncefact.xml")},
    **{(name, None): (400, "REQUIRED invoice.deliveryInformation.address.addressLine1", _SPEC_REQUIRED) for name in (
        "01.05a-INVOICE_ubl.xml", "01.05a-INVOICE_uncefact.xml", "01.18a-INVOICE_ubl.xml",
        "01.18a-INVOICE_uncefact.xml")},
    **{(name, None): (400, "REQUIRED invoice.sellerTaxRepresentativeParty.postalAddress.city", _SPEC_REQUIRED)
       for name in ("02.01a-INVOICE_ubl.xml", "02.01a-INVOICE_uncefact.xml", "02.03a-INVOICE_ubl.xml",
                    "02.03a-INVOICE_uncefact.xml")},
    **{(name, "CII"): (400, "INVALID_VALUE invoice.additionalPrecedingInvoiceReferences",
                       "several preceding invoices (BG-3): CII D16B has one InvoiceReferencedDocument")
       for name in ("01.01_comprehensive_test_ubl.xml", "04.03a-INVOICE_ubl.xml")},
    ("04.01a-INVOICE_ubl.xml", "CII"): (400, "INVALID_VALUE invoice.invoiceLines[0].subInvoiceLines",
                                        "XRechnung binds sub-invoice lines (BG-DEX-01) in UBL only"),
}


def _blocked(source: Path, syntax: str):
    return BLOCKED.get((source.name, syntax)) or BLOCKED.get((source.name, None))


@pytest.mark.slow
@pytest.mark.parametrize("syntax", ["CII", "UBL"])
@pytest.mark.parametrize("spec,source", [(s, p) for s, p, _ in CORPUS_CASES], ids=[i for *_, i in CORPUS_CASES])
def test_corpus_round_trip(spec: str, source: Path, syntax: str):
    parsed = parse(source.read_bytes())
    assert parsed.config["spec"] == spec and parsed.config["calculationMode"] == "MANUAL"
    request = {"invoice": parsed.invoice, "config": {**parsed.config, "syntax": syntax}}
    if spec == "peppol" and syntax == "CII":  # Peppol is UBL: its content goes to CII as EN 16931 (as convert does)
        spec = request["config"]["spec"] = "en16931"
        request["invoice"] = {k: v for k, v in parsed.invoice.items() if k != "processControl"}
        if parsed.invoice["processControl"].get("businessProcessType"):
            request["invoice"]["processControl"] = {
                "businessProcessType": parsed.invoice["processControl"]["businessProcessType"]}
    reading = read_terms(source.read_bytes())
    losses = reading.losses
    assert not losses or parsed.unmapped, f"{source.name}: the model cannot carry {losses}, yet nothing is unmapped"
    source_terms = flatten(reading.terms)
    # BT-24: sent when the endpoint accepts it, else the endpoint's own (a source of another spec loses it).
    expected_bt24 = request["invoice"].get("processControl", {}).get("specificationIdentifier", SPEC_IDS[spec])
    if source_terms.pop(BT24, expected_bt24) != expected_bt24:
        losses.append(f"BT-24: the {spec} endpoint writes {SPEC_IDS[spec]}")
    for loss in losses:
        warnings.warn(f"{source.name}: {loss}", UserWarning, stacklevel=1)

    blocked = _blocked(source, syntax)
    if blocked and blocked[1].startswith("REQUIRED "):  # the parse already says what the model lacks
        assert not parsed.complete and blocked[1].split()[1] in parsed.missing, \
            f"{source.name} no longer fails as recorded ({blocked[2]}): missing {parsed.missing}"
    if blocked:
        status, expected, why = blocked
        with pytest.raises(ApiError) as err:
            generate_xml(dump_request(request), spec)
        found = [f"{d.code} {d.field}" for d in err.value.errors]
        assert err.value.http_status == status and any(expected in f for f in found), \
            f"{source.name} no longer fails as recorded ({why}): {err.value.http_status} {found}"
        return

    xml, report = generate_xml(dump_request(request), spec)
    assert report.valid

    back = flatten(read_terms(xml).terms)
    assert back.pop(BT24) == expected_bt24
    for key in _dropped_on_purpose(source_terms):
        assert key not in back
        del source_terms[key]
    added = {k: v for k, v in back.items() if k not in source_terms and not _added_on_purpose(k, v)}
    problems = _subset_diff(source_terms, back) + diff_lines({}, added)
    assert not problems, f"business terms differ from the source {source.name}:\n" + "\n".join(problems)


# ---- the reader against pipeline.invoice.terms -------------------------------------------------------------------
# Two binding tables written independently (the reader's and the model's business-term table) must read the
# same values from the official documents. Known, explained differences:
TABLE_DIFFERENCES = {
    # the reader splits UBL's "#CODE#text" note into BT-21 and BT-22; the table reads the raw note
    ("UBL", "invoice.invoiceNote"), ("UBL", "invoice.invoiceNoteSubjectCode"),
    ("UBL", "invoice.additionalInvoiceNotes[].invoiceNote"), ("UBL", "invoice.additionalInvoiceNotes[].invoiceNoteSubjectCode"),
    # BT-41 in CII: the reader falls back to ram:DepartmentName (XRechnung usage) when there is no PersonName
    ("CII", "invoice.seller.contact.contactPoint"), ("CII", "invoice.buyer.contact.contactPoint"),
}


def _table_values(root, xpath: str, syntax: str) -> set[str]:
    import re
    from lxml import etree
    from roundtrip.reader import NS
    if syntax == "UBL":  # the table writes /Invoice ... cac:InvoiceLine; a CreditNote has its own names
        xpath = re.sub(r"/Invoice(?=/|$)", "/*", xpath).replace(
            "cac:InvoiceLine", "*[self::cac:InvoiceLine or self::cac:CreditNoteLine]")
    values = set()
    for node in root.xpath(xpath, namespaces=NS):
        if isinstance(node, etree._Element):
            if len(node):
                return set()  # a group, not a value
            text = (node.text or "").strip()
        else:
            text = str(node).strip()
        if text:
            values.add(text)
    return values


def _same(value: str, date: bool = False) -> str:
    """Compare dates across CII's 102 format and ISO, numbers as decimals."""
    from decimal import Decimal, InvalidOperation
    if date and len(value) == 8 and value.isdigit():
        return f"{value[:4]}-{value[4:6]}-{value[6:]}"
    try:
        return format(Decimal(value).normalize(), "f") if "." in value else value
    except InvalidOperation:
        return value


TESTSUITE = sorted((CORPUS / "xrechnung-testsuite").rglob("*.xml"))
# Rows that group others (an object or array of section 2): compared through their children.
GROUP_ROWS = {path.rsplit(".", 1)[0] for path in terms.BY_PATH if "." in path}


@pytest.mark.parametrize("source", TESTSUITE, ids=[p.name for p in TESTSUITE])
def test_reader_agrees_with_the_term_table(source: Path):
    from lxml import etree
    data = source.read_bytes()
    reading = read_terms(data)
    root = etree.fromstring(data)
    mine: dict[str, set[str]] = {}
    for key, value in flatten(reading.terms).items():
        mine.setdefault(terms.pattern_of("invoice." + key), set()).add(_same(value))
    problems = []
    for term in terms.TERMS:
        xpath = term.cii if reading.syntax == "CII" else term.ubl
        if not xpath or (reading.syntax, term.json_path) in TABLE_DIFFERENCES or term.json_path in GROUP_ROWS:
            continue
        is_date = term.json_path.endswith("Date")
        table = {_same(v, is_date) for v in _table_values(root, xpath, reading.syntax)}
        read = mine.get(term.json_path, set())
        if term.json_path.endswith("vatRate") and read == {"0"} and not table:
            continue  # category O: the model's required 0, which BR-O-05..07 forbid to write
        if not read <= table or (table and not read):
            problems.append(f"{term.json_path} ({term.bt}): table {sorted(table)[:3]} reader {sorted(read)[:3]}")
    assert not problems, "\n".join(problems)
