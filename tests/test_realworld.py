"""Real invoices nobody on this project wrote (../shared/realworld, issue 23): every file through the in-process
flows once (tests/roundtrip/realworld.py; about half a minute), then the issue's targets. bench/realworld.py prints
the same outcomes per folder."""
from __future__ import annotations

import io
import re

import pytest

from conftest import SHARED
from roundtrip.realworld import examine, files

REALWORLD = SHARED / "realworld"


@pytest.fixture(scope="module")
def outcomes():
    found = files(REALWORLD)
    assert len(found) >= 200, f"../shared/realworld holds {len(found)} invoices"
    return [examine(path, REALWORLD) for path in found]


def test_no_server_error(outcomes):
    errors = [f"{o.name}: {e}" for o in outcomes for e in o.server_errors]
    assert not errors, "\n".join(errors)


def test_xml_verdicts_are_the_official_rules(outcomes):
    wrong = [o.name for o in outcomes if o.kind == "xml" and o.agrees is False]
    assert not wrong, wrong


# Valid XML invoices that do not convert to the other syntax with identical terms, and why. Issue 23 targets >= 95 %
# (at most 3 of the 62); these are what stands between, each something the target syntax has no place for that its
# official rules accept (said as CONVERSION_LOSS, never silent). When one starts to convert, its test fails and the
# entry must go.
_EXTENDED = ("Factur-X EXTENDED content UBL has no accepted place for (the CEN UBL rules warn of each: line hierarchy "
             "cac:SubInvoiceLine UBL-CR-646, line exemption reasons UBL-CR-601, a buyer fax UBL-CR-254; others: line "
             "seller parties, package quantities, further price allowances and payment terms ...)")
_DEPARTMENT = ("seller contact department (ram:DepartmentName) beside a person name, both BT-41 in XRechnung's CII "
               "reading: UBL has one cac:Contact/cbc:Name, and the CEN UBL rules warn of cbc:Department (UBL-CR-157)")
NOT_CONVERTED = {
    "corpus/XML-Rechnung/CII/XRECHNUNG_Betriebskostenabrechnung.cii.xml": ("refused CONVERSION_LOSS", _DEPARTMENT),
    "corpus/XML-Rechnung/CII/XRECHNUNG_Elektron.cii.xml": ("refused CONVERSION_LOSS", _DEPARTMENT),
    "mustang/library/cii/lastschrift_iban_bug.xml": ("refused CONVERSION_LOSS", _DEPARTMENT),
    # (these two were refused for a BT-83 without BT-81 before; now their EXTENDED content is what stays)
    "corpus/ZUGFeRDv2/correct/Mustangproject/testout-ZF2PushItemChargesAllowances.xml":
        ("refused CONVERSION_LOSS", _EXTENDED),
    "corpus/ZUGFeRDv2/correct/Mustangproject/testout-ZF2PushReverseCharge.xml": ("refused CONVERSION_LOSS", _EXTENDED),
    "mustang/library/cii/UC11_F202600022_EXTENDED_FX_CII_BT-X-589Only_on_GROUP_Line.xml":
        ("refused CONVERSION_LOSS", _EXTENDED),
    "mustang/library/cii/extended_warenrechnung_based_doublecashdiscount.xml": ("refused CONVERSION_LOSS", _EXTENDED),
    "mustang/library/factur-x-extended.xml": ("refused CONVERSION_LOSS", _EXTENDED),
    "mustang/library/subinvoicelines/Extended_SubInvoiceLines_Hardware_Bsp2.xml": ("refused CONVERSION_LOSS", _EXTENDED),
    "mustang/validator/X03_01_Abschlagsrechnung_SubInvoiceLine_u_LV_Nr.xml": ("refused CONVERSION_LOSS", _EXTENDED),
    "mustang/validator/roundingDifferenceIsInTolerance.xml": ("refused CONVERSION_LOSS", _EXTENDED),
}
# Since issue 37 the XML invoices that claim rules this service does not have are indeterminate, not valid, and are
# not counted here (8 of ../shared/realworld: XRechnung 1.2 (testout-XR, xml_xrechnung_1), 2.0 (xml_xrechnung_2),
# 2.1 (validator/01.01a-INVOICE_ubl), 2.2 extension (library/ubl/04.01a-INVOICE_ubl: read for XRechnung 3.0's
# extension since, its sub-lines refused by CII as line structure, no longer SOURCE_NOT_CONVERTIBLE:
# tests/test_conversions.py), 2.3 (ubl-selfbilled-01.20a, validXRV23), ZUGFeRD 1.0 COMFORT (invalidV2Profile)).
# Complete parses of valid XML that do not regenerate identical terms, and why: none since issue 23 (EXTENDED
# documents keep their line hierarchy and are judged on their own profile's rules, as their BT-24 asks).
NOT_ROUND_TRIPPED: dict[str, tuple[str, str]] = {}


def test_valid_xml_converts_with_identical_terms_but_for_what_the_target_cannot_carry(outcomes):
    valid = [o for o in outcomes if o.kind == "xml" and o.official]
    failed = {o.name: o.convert for o in valid if o.convert != "same"}
    assert failed == {name: outcome for name, (outcome, _) in NOT_CONVERTED.items()}
    # of 55 (11 of 77 before issue 23; 46 before BT-83 without BT-81 and dates with a time zone travelled). Since
    # issue 24 a UBL document whose BT-24 names Peppol BIS is judged on the Peppol rules, as the Peppol validator
    # judges it: 15 that state it without Peppol's electronic addresses are no longer counted as valid; since issue
    # 37 the 7 valid ones that claim XRechnung 1.x / 2.x are indeterminate (49 of 62 before)
    assert len(valid) - len(failed) >= 44


@pytest.mark.parametrize("name, to, allow_loss", [
    ("mustang/library/cii/UC11_F202600022_EXTENDED_FX_CII_BT-X-589Only_on_GROUP_Line.xml", "UBL", False),
    ("mustang/library/ubl/04.01a-INVOICE_ubl.xml", "CII", False),
    ("mustang/validator/roundingDifferenceIsInTolerance.xml", "UBL", False),
    ("corpus/XML-Rechnung/CII/XRECHNUNG_Elektron.cii.xml", "UBL", False),
])
def test_a_refused_conversion_speaks_of_the_source_never_of_json_fields(name, to, allow_loss):
    """The client sent a document: each entry of the 422 names the source node (xpath, line) and the business
    term, never a JSON field of the model it did not send (issue 23). A line structure the target has no place for
    is refused with allowLoss too (the lines would not add up without it)."""
    from pipeline.errors import ApiError
    from pipeline.flows.convert import convert

    with pytest.raises(ApiError) as refused:
        convert((REALWORLD / name).read_bytes(), to, allow_loss=allow_loss)
    err = refused.value
    assert err.http_status == 422 and err.errors
    texts = [err.message] + [e.message for e in err.errors]
    assert not [t for t in texts if "invoice." in t or "config." in t], texts
    assert all(e.field is None for e in err.errors), err.errors
    assert all(re.search(r"/(rsm:CrossIndustryInvoice|ubl:Invoice)/\S+,? \(?line \d+", e.message)
               for e in err.errors), err.errors
    if err.error_code == "VALIDATION_FAILED":
        assert allow_loss and err.message.startswith("Without the ") and "allowLoss left out" in err.message
    else:
        assert err.error_code in ("CONVERSION_LOSS", "SOURCE_NOT_CONVERTIBLE")


def test_complete_parses_regenerate_with_identical_terms_but_for_the_known(outcomes):
    judged = [o for o in outcomes if o.roundtrip != "n/a"]
    failed = {o.name: o.roundtrip for o in judged if o.roundtrip != "same"}
    assert failed == {name: outcome for name, (outcome, _) in NOT_ROUND_TRIPPED.items()}
    # of 34: 40 before issue 37, whose 6 complete XRechnung 1.x / 2.x / ZUGFeRD 1.0 parses are indeterminate (above);
    # 42 of 47 before the Peppol rules judged Peppol BIS documents
    assert len(judged) - len(failed) >= 34


# ---- PDF/A verdicts --------------------------------------------------------------------------------------------

# Valid invoices in PDFs that break PDF/A-3 for real, each with the clause: not checker blind spots.
TRUE_PDFA_VIOLATIONS = {
    # an embedded file (Hotelrechung-Immo.pdf) is in the name tree but in no /AF array: ISO 19005-3 6.8
    "corpus/ZUGFeRDv2/correct/intarsys/EN16931/zugferd_2p0_EN16931_Reisekostenabrechnung.pdf": {"PDFA:ISO_19005_3:6.8-4"},
}


def test_no_valid_pdf_is_called_invalid_on_a_checker_blind_spot(outcomes):
    wrong = {o.name: set(o.ours_errors) for o in outcomes if o.pdfa_only}
    assert wrong == TRUE_PDFA_VIOLATIONS


CID_FONT_PDF = REALWORLD / "corpus/ZUGFeRDv2/correct/intarsys/EN16931/zugferd_2p0_EN16931_Gutschrift.pdf"


def test_cid_system_info_with_indirect_strings_is_valid_pdfa():
    """The file's CIDFont /CIDSystemInfo holds /Registry and /Ordering as indirect objects (allowed: ISO 32000-1
    7.3.10); pikepdf's schema check calls that invalid, our check of the clause resolves them."""
    import pikepdf
    from pipeline.flows.validate_pdf import validate_pdf
    data = CID_FONT_PDF.read_bytes()
    with pikepdf.open(io.BytesIO(data)) as pdf:
        infos = [f.DescendantFonts[0].CIDSystemInfo for f in _type0_fonts(pdf)]
        assert infos and all(i.get("/Registry").is_indirect for i in infos)
    report = validate_pdf(data)
    assert report.valid, [i.code for i in report.issues if i.severity == "ERROR"]


def test_cid_system_info_that_is_wrong_stays_a_finding():
    """The same file with /Registry resolving to a number: a real violation of the clause, reported."""
    import pikepdf
    from pipeline.flows.validate_pdf import validate_pdf
    with pikepdf.open(io.BytesIO(CID_FONT_PDF.read_bytes())) as pdf:
        for font in _type0_fonts(pdf):
            font.DescendantFonts[0].CIDSystemInfo.Registry = pdf.make_indirect(7)
        out = io.BytesIO()
        pdf.save(out)
    report = validate_pdf(out.getvalue())
    assert "PDFA:pikepdf:schema-CIDFont" in [i.code for i in report.issues if i.severity == "ERROR"]


def _type0_fonts(pdf):
    return [o for o in pdf.objects if isinstance(o, __import__("pikepdf").Dictionary)
            and o.get("/Type") == "/Font" and o.get("/Subtype") == "/Type0"]


class _UnclosedSocketChain:
    """Cyclic garbage holding an unclosed socket; collecting it leaves the next one: every collection raises a
    ResourceWarning ("unclosed <socket.socket ...>"), as a socket some code forgot does when it is collected."""
    running = True

    def __init__(self):
        import socket
        self.socket = socket.socket()
        self.me = self

    def __del__(self):
        if _UnclosedSocketChain.running:
            _UnclosedSocketChain()


def test_a_python_warning_from_elsewhere_is_no_pdfa_finding():
    """pikepdf's content check records every Python warning raised while it parses a stream as a finding about the
    stream: in a full test run the ResourceWarning of an unclosed socket, collected meanwhile, called the French
    fixture's valid PDF invalid. Here a collection runs at nearly every allocation, and each one raises such a
    warning."""
    import gc
    from pipeline.flows.validate_pdf import validate_pdf

    data = CID_FONT_PDF.read_bytes()
    thresholds = gc.get_threshold()
    _UnclosedSocketChain.running = True
    _UnclosedSocketChain()
    gc.set_threshold(1, 1, 1)
    try:
        report = validate_pdf(data)
    finally:
        gc.set_threshold(*thresholds)
        _UnclosedSocketChain.running = False
        gc.collect()
    assert report.valid, [(i.code, i.message) for i in report.issues if i.severity == "ERROR"]
    assert not [i for i in report.issues if "content-parse" in i.code]


def test_zugferd_1_is_indeterminate_after_its_xsd():
    """ZUGFeRD 1.0's rules are not here (no official Schematron; it predates EN 16931): its XSD runs, and the
    report is never valid (issue 37)."""
    from pipeline.flows.validate_pdf import validate_pdf
    report = validate_pdf((REALWORLD / "corpus/ZUGFeRDv1/correct/Intarsys/ZUGFeRD_1p0_COMFORT_Rabatte.pdf").read_bytes())
    assert report.verdict == "indeterminate" and not report.valid and report.version == "ZUGFeRD 1.0"
    assert [n.code for n in report.not_judged] == ["RULES-NOT-INSTALLED"]
    assert [r.pack for r in report.rules][-1] == "zugferd-1.0"


# ---- values travel verbatim, only content counts as loss ---------------------------------------------------------

def test_skonto_lines_keep_their_line_breaks():
    """BT-20 as written, final line break included: XRechnung's Skonto lines each end with one (BR-DE-18)."""
    from lxml import etree
    from pipeline.flows.convert import convert
    from pipeline.flows.parse import parse
    data = (SHARED / "corpus/xrechnung-schematron-tests/ubl-inv/ubl-inv-br-de-18-test.xml").read_bytes()
    stated = etree.fromstring(data).findtext(".//{*}PaymentTerms/{*}Note")
    assert stated.count("#SKONTO#") == 3 and stated.endswith("\n        ")
    assert parse(data).invoice["paymentTerms"] == stated
    cii = convert(data, "CII").document   # validated on the XRechnung rules, BR-DE-18 included
    assert etree.fromstring(cii).findtext(".//{*}SpecifiedTradePaymentTerms/{*}Description") == stated


def test_peppol_specification_identifier_stays_as_sent_where_the_rules_judge_it():
    """parse keeps the Peppol BT-24; a conversion to CII is judged on the EN 16931 rules and names them, said in
    `changed` (issue 35)."""
    from pipeline.flows.convert import convert
    from pipeline.flows.parse import parse
    from roundtrip.reader import read_terms
    data = (REALWORLD / "peppol-bis3/examples/base-example.xml").read_bytes()
    peppol = "urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0"
    parsed = parse(data)
    assert parsed.invoice["processControl"]["specificationIdentifier"] == peppol and not parsed.changed
    done = convert(data, "CII")
    assert read_terms(done.document).terms["processControl"]["specificationIdentifier"] == "urn:cen.eu:en16931:2017"
    assert [(c["businessTerm"], c["source"], c["written"]) for c in done.changed] == [
        ("BT-24", peppol, "urn:cen.eu:en16931:2017")]
    zugferd = convert(data, "ZUGFERD")   # the Factur-X profile needs its own identifier: said, not silent
    assert [(c["businessTerm"], c["source"], c["written"]) for c in zugferd.changed] == [
        ("BT-24", peppol, "urn:cen.eu:en16931:2017")]


def test_no_price_discount_is_made_up():
    """A gross price without a discount (BT-147) gains none on the reading paths (MANUAL writes what was read); UBL,
    which needs an amount beside a gross price, gets gross - net and says so in `changed`."""
    from pipeline.flows.convert import convert
    from pipeline.flows.parse import parse
    data = (REALWORLD / "corpus/XML-Rechnung/CII/EN16931_Einfach.cii.xml").read_bytes()
    assert b"GrossPriceProductTradePrice" in data and b"AppliedTradeAllowanceCharge" not in data
    parsed = parse(data)
    assert all("priceDiscount" not in line.get("priceDetails", {}) for line in parsed.invoice["invoiceLines"])
    assert b"AppliedTradeAllowanceCharge" not in parsed.written
    ubl = convert(data, "UBL")
    assert [c["businessTerm"] for c in ubl.changed] == ["BT-147"]


def test_syntax_plumbing_is_unmapped_without_a_business_term_and_no_loss():
    """The Norwegian example's non-VAT tax registration scheme (`cac:TaxScheme/cbc:ID` TAX) and UNCL5305 scheme
    attributes: listed, businessTerm null, converted without allowLoss."""
    from pipeline.flows.convert import convert
    from pipeline.flows.parse import parse
    data = (REALWORLD / "peppol-bis3/national-examples/NO/Norwegian-example-1.xml").read_bytes()
    plumbing = [u for u in parse(data).unmapped if u["xpath"].endswith(("cac:TaxScheme/cbc:ID", "@schemeID"))]
    assert plumbing and all(u["businessTerm"] is None for u in plumbing)
    assert convert(data, "CII").document


def test_a_refused_target_names_the_source_not_json_fields():
    """UC11's VAT breakdowns "S" state an exemption reason, which its EXTENDED profile accepts and EN 16931 forbids
    (BR-S-10): a named loss of the conversion to UBL (with allowLoss left out, and the UBL valid:
    tests/test_convert_more3_exemption.py); the 422 names the source's nodes (xpath, line), never JSON fields the
    client did not send."""
    from pipeline.errors import ApiError
    from pipeline.flows.convert import convert
    data = (REALWORLD / "mustang/library/cii/UC11_F202600022_EXTENDED_FX_CII_BT-X-589Only_on_GROUP_Line.xml").read_bytes()
    with pytest.raises(ApiError) as err:
        convert(data, "UBL")
    assert err.value.http_status == 422 and err.value.errors
    assert all(e.field is None for e in err.value.errors)
    assert any(e.businessTerm == "BT-120" and "ram:ApplicableTradeTax[1]/ram:ExemptionReason (line 485)" in e.message
               for e in err.value.errors)


def test_category_o_without_rates_parses_complete_and_converts():
    from pipeline.flows.convert import convert
    from pipeline.flows.parse import parse
    data = (REALWORLD / "peppol-bis3/examples/vat-category-O.xml").read_bytes()
    parsed = parse(data)
    assert parsed.complete, (parsed.missing, parsed.problems)
    assert "vatCategoryRate" not in parsed.invoice["vatBreakdowns"][0]
    assert convert(data, "CII").document


def test_an_order_reference_is_never_made_up_silently():
    """An empty order id reads as none; UBL's required order id beside a lone BT-14 is Peppol's "NA", said in
    `changed`; a received "NA" is a value like any other."""
    from pipeline.flows.convert import convert
    from pipeline.flows.parse import parse
    parsed = parse((REALWORLD / "corpus/XML-Rechnung/UBL/XRECHNUNG_Elektron.ubl.xml").read_bytes())
    assert "purchaseOrderReference" not in parsed.invoice and parsed.invoice["salesOrderReference"]
    done = convert((REALWORLD / "corpus/XML-Rechnung/CII/XRECHNUNG_Elektron.cii.xml").read_bytes(), "UBL",
                   allow_loss=True)
    assert b"<cbc:ID>NA</cbc:ID>" in done.document and "BT-13" in [c["businessTerm"] for c in done.changed]
    na = parse((REALWORLD / "peppol-bis3/examples/sales-order-example.xml").read_bytes())
    assert na.invoice["purchaseOrderReference"] == "NA"


def test_one_finding_per_rule_and_place_citing_both_rule_sets():
    """The Factur-X XRECHNUNG profile rules and the XRechnung pack both report PEPPOL-EN16931-R008 at the same
    three empty descriptions, each writing the place its own way: one finding each, the most severe, citing both.
    (Generation's check of a ZUGFeRD XRECHNUNG invoice runs both; a received one is judged on the XRechnung rules
    its BT-24 names, issue 37.)"""
    from pipeline.check.generated import validate_profile_xml
    from pipeline.check.profiles import place
    from pipeline.invoice.specs import PROFILES
    from pipeline.pdf import checks
    found = checks.inspect((REALWORLD / "mustang/validator/invalidXRechnung.pdf").read_bytes(), validate_xml=False,
                           check_pdfa=False)
    from pipeline.check.xmlinput import load, specification_id
    issues = validate_profile_xml(found.xml, PROFILES["XRECHNUNG"], specification_id(load(found.xml))[0])
    keys = [(i.code, place(i.location.xpath), i.location.line) for i in issues if i.location and
            i.location.xpath]
    assert len(keys) == len(set(keys))
    r008 = [i for i in issues if i.code == "PEPPOL-EN16931-R008"]
    assert [i.location.line for i in r008] == [23, 55, 87]
    assert all("also the Factur-X profile rules" in i.message for i in r008)


def test_a_payment_reference_without_means_code_travels_and_the_ubl_code_is_said():
    """CII binds BT-83 outside the payment means, so a valid CII may state it without BT-81 (Mustang's
    invoicing-period example). Parse keeps it (no means code is made up: `missing` names it, since a JSON request
    must send one); back to CII it is written as it came; UBL binds BT-83 in a cac:PaymentMeans whose code it
    requires: UNTDID 4461 "1" (instrument not defined), said in `changed`."""
    from lxml import etree
    from pipeline.flows.convert import convert
    from pipeline.flows.parse import parse
    data = (REALWORLD / "mustang/library/factur-x_invoicingPeriod.xml").read_bytes()
    assert b"PaymentReference>RE1000<" in data and b"SpecifiedTradeSettlementPaymentMeans" not in data
    parsed = parse(data)
    assert parsed.invoice["paymentInstructions"] == {"remittanceInformation": "RE1000"}
    assert parsed.missing == ["invoice.paymentInstructions.meansCode"]
    from pipeline.write.transform import transform
    cii = etree.fromstring(transform(parsed.written, "CII", "en16931"))   # the parse's canonical XML, written as CII
    assert cii.findtext(".//{*}ApplicableHeaderTradeSettlement/{*}PaymentReference") == "RE1000"
    assert cii.find(".//{*}SpecifiedTradeSettlementPaymentMeans") is None
    done = convert(data, "UBL")   # validated on the EN 16931 rules
    means = etree.fromstring(done.document).find("{*}PaymentMeans")
    assert (means.findtext("{*}PaymentMeansCode"), means.findtext("{*}PaymentID")) == ("1", "RE1000")
    assert ("BT-81", None, "1") in [(c["businessTerm"], c["source"], c["written"]) for c in done.changed]



def test_dates_keep_their_time_zone_and_cii_says_it_cannot():
    """A UBL xs:date may carry a time zone (2016-04-04+01:00, Mustang's validator sample): parse keeps it, UBL
    regenerates it as sent; CII's format 102 has no place for it, so convert writes the day and says so."""
    from lxml import etree
    from pipeline.flows.convert import convert
    from pipeline.flows.generate_xml import generate_xml
    from pipeline.flows.parse import parse
    from pipeline.invoice.request_json import dump_request
    data = (REALWORLD / "mustang/validator/01.01a-INVOICE_ubl.xml").read_bytes()
    parsed = parse(data)
    assert parsed.invoice["issueDate"] == "2016-04-04+01:00" and parsed.complete
    request = {"invoice": parsed.invoice, "config": {**parsed.config, "syntax": "UBL"}}
    ubl, _ = generate_xml(dump_request(request), parsed.config["spec"])
    assert etree.fromstring(ubl).findtext("{*}IssueDate") == "2016-04-04+01:00"
    done = convert(data, "CII")
    assert etree.fromstring(done.document).findtext(".//{*}IssueDateTime/{*}DateTimeString") == "20160404"
    assert [(c["businessTerm"], c["source"], c["written"]) for c in done.changed] == [
        # (an XRechnung 2.1 claim, judged on the EN 16931 rules: the CII names those)
        ("BT-24", parsed.source.specification_id, "urn:cen.eu:en16931:2017"),
        ("BT-2", "2016-04-04+01:00", "2016-04-04"), ("BT-134", "2016-01-01+01:00", "2016-01-01"),
        ("BT-135", "2016-12-31+01:00", "2016-12-31")]


def test_extended_line_hierarchy_is_read_and_regenerated_on_its_own_profile():
    """Factur-X EXTENDED's sub-lines (BT-X-304 parent line, BT-X-8 subtype: Mustang's hardware example): parse keeps
    them, the parse's JSON regenerates them in CII judged on the EXTENDED rules its BT-24 names (the EN 16931 rules
    would sum the group lines into BT-106); UBL has no place the CEN rules accept (UBL-CR-646), so converting is
    refused as a loss without allowLoss (with it: tests/test_convert_hierarchy.py)."""
    from lxml import etree
    from pipeline.errors import ApiError
    from pipeline.flows.convert import convert
    from pipeline.flows.generate_xml import generate_xml
    from pipeline.flows.parse import parse
    from pipeline.invoice.request_json import dump_request
    data = (REALWORLD / "mustang/library/subinvoicelines/Extended_SubInvoiceLines_Hardware_Bsp2.xml").read_bytes()
    parsed = parse(data)
    lines = [(l["lineIdentifier"], l.get("parentLineIdentifier"), l["lineStatusReasonCode"])
             for l in parsed.invoice["invoiceLines"]]
    assert lines[:3] == [("0101", "01", "DETAIL"), ("0102", "01", "DETAIL"), ("01", None, "GROUP")]
    request = {"invoice": parsed.invoice, "config": {**parsed.config, "syntax": "CII"}}
    cii, report = generate_xml(dump_request(request), parsed.config["spec"])
    assert report.version == "Factur-X 1.09 EXTENDED" and report.valid
    written = etree.fromstring(cii).findall(".//{*}AssociatedDocumentLineDocument")
    assert [(d.findtext("{*}LineID"), d.findtext("{*}ParentLineID"), d.findtext("{*}LineStatusReasonCode"))
            for d in written] == lines
    with pytest.raises(ApiError) as err:
        convert(data, "UBL")
    assert err.value.error_code == "CONVERSION_LOSS" and "send request.allowLoss true" in err.value.message
    assert all("Factur-X EXTENDED's line hierarchy" in e.message for e in err.value.errors
               if e.businessTerm in ("BT-X-304", "BT-X-8"))
