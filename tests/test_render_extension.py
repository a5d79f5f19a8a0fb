"""The readable page of an XRechnung extension invoice: sub-invoice lines (BG-DEX-01) drawn under their line, one
step in per level and marked as counting in no total; a totals row per third-party payment (BG-DEX-09) between the
paid amount and the amount due, so that the column adds up. Received through the render flow, and generated."""
from __future__ import annotations

import re
from decimal import Decimal

import pytest
from lxml import html as lxml_html

from conftest import CORPUS
from pipeline.flows.generate_xml import normalize
from pipeline.flows.parse import parse
from pipeline.flows.render import render
from pipeline.invoice.request_json import dump_request
from pipeline.pdf import page
from test_extension import EXTENSION, THIRD_PARTY, _extension_request, _nested
from test_render_page import (layout_faults, page_text, pdftotext, values_not_shown,
                              weasyprint_reference, with_long_words)

# The official extension business cases with sub-lines (3 levels) and KoSIT's instance with two third-party
# payments: neither business case has one.
SOURCES = [EXTENSION / "04.01a-INVOICE_ubl.xml", EXTENSION / "04.03a-INVOICE_ubl.xml", THIRD_PARTY]
CASES = [(s, lang) for s in SOURCES for lang in ("en", "de")]
IDS = [f"{s.name[:6]}-{lang}" for s, lang in CASES]


def sub_lines(lines: list[dict], level: int = 1):
    """(level, sub-line) of every sub-line below `lines`, in page order."""
    for line in lines:
        for sub in line.get("subInvoiceLines", []):
            yield level, sub
            yield from sub_lines([sub], level + 1)


def shown(value: Decimal, lang: str) -> str:
    s = f"{value:,.2f}"
    return s.replace(",", "_").replace(".", ",").replace("_", ".") if lang == "de" else s


@pytest.fixture(scope="module")
def pdfs() -> dict:
    """Each source rendered once per language through the render flow (the path of POST /v1/invoice/render)."""
    return {(s, lang): render(s.read_bytes(), lang) for s, lang in CASES}


@pytest.mark.parametrize("source_file, lang", CASES, ids=IDS)
def test_every_sub_line_and_third_party_payment_is_on_the_page(pdfs, source_file, lang, tmp_path):
    invoice = parse(source_file.read_bytes()).invoice
    text = " ".join(pdftotext(pdfs[source_file, lang], tmp_path, "-raw").split())
    # a name wrapped after a hyphen ("Beton-/" | "Stahlbeton...") has no space there: compared without spaces
    packed = "".join(text.split())
    subs = list(sub_lines(invoice["invoiceLines"]))
    payments = invoice.get("thirdPartyPayments", [])
    assert subs or payments
    for _, sub in subs:
        assert "".join(sub["itemInformation"]["name"].split()) in packed, sub["itemInformation"]["name"]
    for payment in payments:
        assert f"+{shown(payment['amount'], lang)} EUR" in text
        assert "".join(payment["description"].split()) in packed and payment["paymentType"] in text
    assert (("Sub-lines" if lang == "en" else "Unterpositionen") in text) == bool(subs)
    assert (("Third-party payment" if lang == "en" else "Fremdforderung") in text) == bool(payments)


@pytest.mark.parametrize("source_file, lang", CASES, ids=IDS)
def test_nothing_is_cut_off_or_overlaps(pdfs, source_file, lang, tmp_path):
    assert layout_faults(pdfs[source_file, lang], tmp_path) == []


@pytest.mark.parametrize("source_file", SOURCES, ids=[s.name[:6] for s in SOURCES])
def test_every_value_is_on_the_page(source_file):
    canonical = parse(source_file.read_bytes()).canonical
    for lang in ("en", "de"):
        assert values_not_shown(canonical, page_text(page.invoice_html(canonical, lang)), lang) == []


def test_sub_lines_follow_their_line_one_level_deeper_each():
    """The rows in page order are the lines' tree walked depth first; a sub-line's row says its level and holds
    its number beside its name (the No. column stays for the lines), its amount in the amount column."""
    source = EXTENSION / "04.01a-INVOICE_ubl.xml"
    invoice = parse(source.read_bytes()).invoice
    doc = lxml_html.fromstring(render(source.read_bytes(), "en", html=True))
    rows = doc.xpath("//table[@class='lines']/tbody")
    wanted = []
    for line in invoice["invoiceLines"]:
        wanted.append(("line", line["lineIdentifier"], line["netAmount"]))
        wanted += [(f"line sub level-{level}", sub["lineIdentifier"], sub["netAmount"])
                   for level, sub in sub_lines([line])]
    got = [(row.get("class"), row.xpath("string(.//td[@class='pos'])") or row.xpath("string(.//span[@class='sub-id'])"),
            Decimal(row.xpath("string(.//td[@class='num amount'])").replace(",", ""))) for row in rows]
    assert got == [(c, i if c == "line" else f"↳ {i}", a) for c, i, a in wanted]
    assert max(int(c.rsplit("-", 1)[1]) for c, _, _ in wanted if c != "line") == 2   # 1 > 1 1 > 1 1 1


@pytest.mark.parametrize("lang, labels", [("en", ("Total with VAT", "Paid amount", "Amount due for payment")),
                                          ("de", ("Gesamtbetrag mit USt.", "Bereits gezahlt", "Zahlbetrag"))])
def test_the_amount_due_adds_up_on_the_page(lang, labels):
    """Total with VAT - paid + third-party payments + rounding = amount due (BR-DEX-09), row by row as shown; the
    payments sit between the paid amount (when there is one) and the amount due."""
    request = canonical_request()
    request["invoice"]["documentTotals"] = {"prepaidAmount": 20}
    doc = lxml_html.fromstring(page.invoice_html(normalize(dump_request(request), "xrechnung")[1], lang))
    rows = [(tr.get("class"), tr.xpath("string(th)"), tr.xpath("string(td)")) for tr in doc.xpath("//table[@class='totals']/tr")]
    kinds = [kind for kind, _, _ in rows]
    assert kinds[-5:] == ["taxInclusiveAmount", "prepaidAmount", "thirdPartyPayment", "thirdPartyPayment", "payableAmount"]
    assert [th for kind, th, _ in rows if kind != "thirdPartyPayment"][-3:] == list(labels)

    def amount(td: str) -> Decimal:
        number = td.split()[0]
        return Decimal(number.replace(".", "").replace(",", ".") if lang == "de" else number.replace(",", ""))

    values = {kind: amount(td) for kind, _, td in rows if kind != "thirdPartyPayment"}
    payments = [amount(td) for kind, _, td in rows if kind == "thirdPartyPayment"]
    assert all(td.startswith("+") for kind, _, td in rows if kind == "thirdPartyPayment")
    assert values["taxInclusiveAmount"] - values["prepaidAmount"] + sum(payments) == values["payableAmount"]
    assert payments == [Decimal("12.50"), Decimal("7.25")]


def canonical_request() -> dict:
    """test_extension's request (a sub-line tree under line 1, a third-party payment) with a second payment."""
    request = _extension_request()
    request["invoice"]["thirdPartyPayments"].append({"paymentType": "Porto", "amount": 7.25,
                                                     "description": "Versand durch Dritte"})
    return request


def test_an_invoice_without_the_groups_has_neither_note_nor_rows():
    html = page.invoice_html(parse((CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml")
                                   .read_bytes()).canonical, "en")
    doc = lxml_html.fromstring(html)
    assert not doc.xpath("//tbody[contains(@class, 'sub')] | //p[@class='sub-note'] | //tr[@class='thirdPartyPayment']")


@pytest.mark.parametrize("lang", ["en", "de"])
def test_ten_levels_of_long_words_stay_inside_the_page(lang, tmp_path):
    """The deepest nesting the extension allows, every text an unbreakable 70-character word: each level is
    indented further, and nothing runs off the page or over its neighbour."""
    request = _nested(10)
    request["invoice"] = with_long_words(request["invoice"])
    canonical = normalize(dump_request(request), "xrechnung")[1]
    doc = lxml_html.fromstring(page.invoice_html(canonical, lang))
    assert [row.get("class") for row in doc.xpath("//tbody[contains(@class, 'sub')]")][-1] == "line sub level-10"
    assert layout_faults(page.html_to_pdf(page.invoice_html(canonical, lang, "EN 16931")), tmp_path) == []


def test_business_terms_name_the_groups(tmp_path):
    """showBusinessTerms: the sub-line note names BG-DEX-01, a payment's row BG-DEX-09; the list gives each
    third-party payment value its BT-DEX term and a sub-line value at any depth its sub-line term."""
    text = page_text(render(THIRD_PARTY.read_bytes(), "en", business_terms=True, html=True))
    assert "Third-party payment (BG-DEX-09)" in text
    for term, value in [("BT-DEX-001 Third party payment type", "MobilesBezahlen"),
                        ("BT-DEX-002 Third party payment amount", "19.96"),
                        ("BT-DEX-003 Third party payment description", "Mobiles Bezahlen (Brutto-Forderung")]:
        assert re.search(rf"{term}\s*{re.escape(value)}", text), term
    source = (EXTENSION / "04.01a-INVOICE_ubl.xml").read_bytes()
    text = page_text(render(source, "de", business_terms=True, html=True))
    assert "Unterpositionen (BG-DEX-01):" in text
    assert re.search(r"BT-153 Bezeichnung \(Unterposition\)\s*Demontage TW-Rohrleitung DN 12-25", text)  # level 2
    assert "BG-DEX" not in page_text(render(source, "de", html=True))


def test_fast_path_renders_the_same_pdf_as_weasyprints_entry_point():
    """The extension's rows use only elements and defaults templates/page-ua.css covers."""
    html = render((EXTENSION / "04.01a-INVOICE_ubl.xml").read_bytes(), "de", html=True)
    assert page.html_to_pdf(html) == weasyprint_reference(html)

