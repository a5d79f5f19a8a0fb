"""What a receiver converting real invoices got wrong (issue 35, audit of helper 8):

- `pipeline convert FOLDER -o OUT` printed each document's notes (`changed: BT-24 ...`, `not carried: ...`) on
  stderr without saying whose: nine Peppol examples gave nine identical `changed:` lines. Now each note of several
  documents starts with the document's name, as their refusals do; one document's notes stay as they were.
- How a value left out was written counted as a value of its own: a lost price charge's ChargeIndicator ("true"),
  a lost due date's `@format` ("102"), a lost amount's `@currencyID`. X-Conversion-Losses said more values than the
  source had, with no business term, which the issue forbids ("counts only values that a business term carries").
  They are technical now (X-Conversion-Technical-Left); the value they qualify is still named as lost. Beside a
  value the target carries, a currency or format stays content (an amount in USD in an EUR invoice would change).
- A VATEX code in small letters (BT-121, valid EN 16931) made a ZUGFeRD PDF fail the Factur-X rules: it is written
  in the code list's capitals there, and said.
"""
from __future__ import annotations

from conftest import SHARED
from test_platform_helpers import cli

from pipeline.errors import ApiError
from pipeline.flows.convert import convert
from pipeline.flows.parse import parse
from pipeline.pdf import checks
from pipeline.service.resources.reading import conversion_headers
from roundtrip.reader import read_terms

PEPPOL = SHARED / "realworld/peppol-bis3/examples"
PEPPOL_BT24 = "urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0"
# Factur-X EXTENDED: a price charge on line 3, a discount and a charge on line 4 (UBL has no place for the charges)
PRICE_CHARGES = SHARED / "realworld/corpus/ZUGFeRDv2/correct/Mustangproject/testout-ZF2PushItemChargesAllowances.xml"
# Factur-X EXTENDED: a second payment term's due date (format 102) among a line hierarchy UBL has no place for
HIERARCHY = SHARED / "realworld/mustang/library/subinvoicelines/Extended_SubInvoiceLines_Hardware_Bsp2.xml"


def test_the_notes_of_a_folder_name_their_document(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    names = ["base-example.xml", "vat-category-E.xml"]
    for name in names:
        (folder / name).write_bytes((PEPPOL / name).read_bytes())
    run = cli({}, "convert", str(folder), "--to", "cii", "-o", str(tmp_path / "out"))
    assert run.returncode == 0, run.stderr
    lines = run.stderr.splitlines()
    for name in names:
        assert f"{name}: changed: BT-24 {PEPPOL_BT24} -> urn:cen.eu:en16931:2017 (the converted document was " \
               "judged on the en16931 rules" in run.stderr, run.stderr
    assert all(line.split(": ")[0] in names for line in lines), lines
    # one document: its notes as before, without a name
    one = cli({}, "convert", str(folder / names[0]), "--to", "cii", "-o", str(tmp_path / "one.xml"))
    assert one.returncode == 0 and one.stderr.startswith(f"changed: BT-24 {PEPPOL_BT24} -> "), one.stderr


def test_the_notes_of_a_folder_name_their_document_in_german_too(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("base-example.xml", "Allowance-example.xml"):
        (folder / name).write_bytes((PEPPOL / name).read_bytes())
    run = cli({}, "convert", str(folder), "--to", "cii", "--lang", "de", "-o", str(tmp_path / "out"))
    assert run.returncode == 0, run.stderr
    assert "Allowance-example.xml: geändert: BT-24 " in run.stderr and "base-example.xml: geändert: BT-24 " \
        in run.stderr, run.stderr


def test_a_lost_price_charge_counts_its_values_not_its_indicator():
    data = PRICE_CHARGES.read_bytes()
    done = convert(data, "UBL", allow_loss=True)
    assert all(u["businessTerm"] for u in done.losses), done.losses
    charges = [u for u in done.losses if u["businessTerm"].startswith("BT-X-302")]
    assert [u["value"] for u in charges] == ["1.0000", "1.0000"]      # the two charges' amounts, still named
    indicators = [t for t in done.technical if t["xpath"].endswith("/ram:ChargeIndicator/udt:Indicator")]
    assert [(t["value"], t["line"]) for t in indicators] == [("true", 109), ("true", 153)]
    headers = conversion_headers(done)
    assert headers["X-Conversion-Losses"] == str(len(done.losses)) == "6"
    assert headers["X-Conversion-Technical-Left"].count("ChargeIndicator") == 2
    # the source's own reading says the same: technical, no business term
    entries = {u["xpath"]: u for u in parse(data).unmapped}
    assert all(entries[t["xpath"]]["technical"] for t in indicators)


def test_a_lost_dates_format_is_technical_and_the_date_stays_named():
    done = convert(HIERARCHY.read_bytes(), "UBL", allow_loss=True)
    assert all(u["businessTerm"] for u in done.losses), [u for u in done.losses if not u["businessTerm"]]
    formats = [t for t in done.technical if t["xpath"].endswith("/ram:DueDateDateTime/udt:DateTimeString/@format")]
    assert [t["value"] for t in formats] == ["102"]
    date = formats[0]["xpath"].rsplit("/@", 1)[0]
    assert [u["value"] for u in done.losses if u["xpath"] == date], "the due date itself is no longer named as lost"


def test_an_amount_in_a_third_currency_is_lost_and_its_currency_technical():
    """A second BT-110 in a currency that is neither BT-5 nor BT-6 (USD beside EUR and GBP): the amount is the loss,
    its currency how it was written."""
    data = (SHARED / "corpus/xrechnung-schematron-tests/cii/cii-peppol-en16931-r054-2-negative-test.xml").read_bytes()
    entries = parse(data).unmapped
    amount = [u for u in entries if u["xpath"].endswith("/ram:TaxTotalAmount[2]")]
    currency = [u for u in entries if u["xpath"].endswith("/ram:TaxTotalAmount[2]/@currencyID")]
    assert [(u["value"], u["technical"]) for u in amount] == [("123.45", False)]
    assert amount[0]["businessTerm"].startswith("BT-110")
    assert [(u["value"], u["technical"], u["businessTerm"]) for u in currency] == [("USD", True, None)]


def test_a_carried_amount_in_another_currency_stays_content():
    """Only beside a value left out is a currency no value of its own: a line total the target carries, stated in
    USD in an EUR invoice, is one the target would write in EUR, so converting it is refused without allowLoss."""
    data = (PEPPOL / "base-example.xml").read_bytes()
    total = b'<cbc:LineExtensionAmount currencyID="EUR">'
    at = data.index(total)
    data = data[:at] + data[at:].replace(total, total.replace(b"EUR", b"USD"), 1)
    [entry] = [u for u in parse(data).unmapped if u["xpath"].endswith("/@currencyID")]
    assert (entry["value"], entry["technical"]) == ("USD", False)
    try:
        convert(data, "CII")
    except ApiError as err:
        assert err.error_code == "CONVERSION_LOSS" and "USD" in err.errors[0].message
    else:
        raise AssertionError("an amount's other currency was dropped silently")


def test_a_vatex_code_in_small_letters_goes_to_a_zugferd_pdf_in_capitals_and_says_so():
    """CEN's example XRechnung-O states BT-121 "vatex-eu-132-1a": valid EN 16931 (BR-CL-22 compares in capitals),
    refused by the Factur-X rules (FX-SCH-A-000589) once written into a ZUGFeRD PDF. The PDF gets the code list's
    "VATEX-EU-132-1A" and X-Conversion-Changed says it; an XML target keeps the value as sent."""
    data = (SHARED / "corpus/en16931-cen/cii/examples/XRechnung-O.xml").read_bytes()
    done = convert(data, "ZUGFERD")
    [change] = [c for c in done.changed if c["businessTerm"] == "BT-121"]
    assert (change["source"], change["written"]) == ("vatex-eu-132-1a", "VATEX-EU-132-1A") and change["reasonDe"]
    assert "BT-121 vatex-eu-132-1a -> VATEX-EU-132-1A" in conversion_headers(done)["X-Conversion-Changed"]
    xml = checks.inspect(done.document, validate_xml=False, check_pdfa=False).xml
    assert read_terms(xml).terms["vatBreakdowns"][0]["exemptionReasonCode"] == "VATEX-EU-132-1A"
    kept = convert(data, "UBL")
    assert read_terms(kept.document).terms["vatBreakdowns"][0]["exemptionReasonCode"] == "vatex-eu-132-1a"
    assert not [c for c in kept.changed if c["businessTerm"] == "BT-121"]
