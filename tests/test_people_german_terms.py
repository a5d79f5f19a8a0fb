"""The German pages named fourteen EN 16931 terms in English ("BG-16 Payment instructions", "BG-5 Postal address",
"BT-160 Item attribute name"): KoSIT's XRechnung viewer, whose German labels templates/term-names-de.json holds,
has no id for them. Now every term of EN 16931 has its German name, and a German report paints it where a finding
is about that group: an XSD finding in the payment instructions of a real ZUGFeRD PDF (../shared/realworld)."""
from __future__ import annotations

import re

from lxml import html as lxml_html

from conftest import RULES_SOURCE, SHARED
from pipeline.flows.validate_pdf import validate_pdf
from pipeline.flows.validation_report import readable_report
from pipeline.invoice.terms import TERMS, term_name

PDF = SHARED / "realworld/corpus/ZUGFeRDv2/fail/MustangRE-20171118_506_ZUGFeRD1and2.pdf"


def test_every_en16931_term_has_a_german_name():
    core = [t for t in TERMS if t.bt and re.fullmatch(r"B[GT]-\d+", t.bt)]
    english = sorted({t.bt for t in core if term_name(t, "de") == t.name})
    assert not english, english
    by_bt: dict[str, str] = {}
    for t in core:   # the invoice line's, not a sub-line's (BT-160 is in both)
        by_bt.setdefault(t.bt, term_name(t, "de"))
    assert (by_bt["BG-16"], by_bt["BG-25"], by_bt["BT-160"]) == (
        "Zahlungsanweisungen", "Rechnungsposition", "Name der Artikeleigenschaft (Rechnungsposition)")
    # a postal address says whose, in German; the seller's one not twice
    assert by_bt["BG-5"] == "Postanschrift des Verkäufers"


def test_a_german_report_names_the_group_of_a_finding_in_german():
    data = PDF.read_bytes()
    report = validate_pdf(data)
    assert any(i.code == "XSD-ELEMENT-CONTENT" for i in report.issues)
    text = " ".join(lxml_html.fromstring(readable_report(data, report, PDF.name, "de")).text_content().split())
    assert "XSD-ELEMENT-CONTENT · BG-16 Zahlungsanweisungen" in text, text[:2000]
    assert "Payment instructions" not in text


def test_extension_terms_have_german_names():
    """The extension terms (XRechnung BG-DEX/BT-DEX, Factur-X EXTENDED BT-X) were English in German reports:
    BT-X-8 has the name of ZUGFeRD's German specification, a sub-invoice line's groups (BG-DEX-01..08) the names of
    the line's groups they mirror, the third-party payment (BG-DEX-09, BT-DEX-001..003) the labels of KoSIT's viewer
    that shows it; BT-X-304 has our own name (templates/term-names-de.json says where each comes from)."""
    extension = [t for t in TERMS if t.bt and not re.fullmatch(r"B[GT]-\d+(-\d+)?", t.bt)]
    english = {t.bt for t in extension if term_name(t, "de") == t.name}
    assert not english, english
    by_path = {t.json_path: term_name(t, "de") for t in extension}
    assert by_path["invoice.invoiceLines[].lineStatusReasonCode"] == "Untertyp der Rechnungsposition"
    assert by_path["invoice.invoiceLines[].subInvoiceLines[]"] == "Rechnungsposition (Unterposition)"
    assert by_path["invoice.invoiceLines[].subInvoiceLines[].lineVatInformation"] == \
        "Umsatzsteuerinformationen zur Rechnungsposition (Unterposition)"
    assert by_path["invoice.thirdPartyPayments[]"] == "Fremdforderung"
    assert by_path["invoice.thirdPartyPayments[].amount"] == "Betrag der Fremdforderung"
    assert by_path["invoice.invoiceLines[].parentLineIdentifier"] == "Kennung der übergeordneten Rechnungsposition"


# A business term's id as the official rule texts write it: BT-5, BT-18-1, BG-DEX-09, BT-DEX-001, BT-X-304.
_TERM_ID = re.compile(r"\bB[TG]-(?:(?:DEX|X)-)?\d+(?:-\d+)?\b")


def _ids_in_official_rules() -> set[str]:
    """Every BT/BG id named anywhere in the official Schematron sources under ../shared/rules (messages, comments,
    variable names alike: more than the findings can name, never fewer)."""
    found: set[str] = set()
    for sch in RULES_SOURCE.rglob("*.sch"):
        found.update(_TERM_ID.findall(sch.read_text(encoding="utf-8", errors="replace")))
    return found


def test_every_term_a_report_or_page_can_show_has_a_german_name():
    """The ids a German report or page names: the term table's (invoice page, render term table, content findings)
    and the ones the official rules name (a finding's term, RULE_TERMS). Each has a row in the term table (else a
    report shows the bare id) and a German name there, on every row carrying it."""
    from pipeline.invoice.terms import RULE_TERMS

    rows: dict[str, list] = {}
    for t in TERMS:
        if t.bt:
            rows.setdefault(t.bt, []).append(t)
    in_rules = _ids_in_official_rules()
    assert {"BT-1", "BT-DEX-001", "BG-DEX-09"} <= in_rules   # the scan reads the official texts
    named = set(rows) | in_rules | {bt for terms in RULE_TERMS.values() for bt in terms}
    assert not named - set(rows), sorted(named - set(rows))
    english = sorted({bt for bt in named for t in rows[bt] if term_name(t, "de") == t.name})
    assert not english, english


def test_a_german_report_names_the_third_party_payment_in_german():
    """KoSIT's negative test of BR-DEX-10/11/12: each finding names its term of the third-party payment in German."""
    from pipeline.flows.validate_xml import validate_xml

    data = (SHARED / "corpus/xrechnung-schematron-tests/ubl-inv/ubl-inv-br-dex-10-11-12-negative-test.xml").read_bytes()
    report = validate_xml(data, "xrechnung")
    assert {"BR-DEX-10", "BR-DEX-11", "BR-DEX-12"} <= {i.code for i in report.issues}
    text = " ".join(lxml_html.fromstring(readable_report(data, report, "x.xml", "de")).text_content().split())
    for rule, label in (("BR-DEX-10", "BT-DEX-001 Art der Fremdforderung"),
                        ("BR-DEX-11", "BT-DEX-002 Betrag der Fremdforderung"),
                        ("BR-DEX-12", "BT-DEX-003 Beschreibung der Fremdforderung")):
        assert f"{rule} · {label}" in text, text[:3000]   # (the official rule texts name it in English)


def test_a_german_report_names_a_sub_invoice_line_group_in_german():
    """BR-DEX-03 (KoSIT's negative test): its finding is about BG-DEX-06, painted with its German name."""
    from pipeline.flows.validate_xml import validate_xml

    data = (SHARED / "corpus/xrechnung-schematron-tests/ubl-inv/ubl-inv-br-dex-03-invalid-test.xml").read_bytes()
    report = validate_xml(data, "xrechnung")
    assert "BR-DEX-03" in {i.code for i in report.issues}
    text = " ".join(lxml_html.fromstring(readable_report(data, report, "x.xml", "de")).text_content().split())
    assert "BR-DEX-03 · BG-DEX-06 Umsatzsteuerinformationen zur Rechnungsposition (Unterposition)" in text, text[:3000]
    assert "VAT information" not in text
