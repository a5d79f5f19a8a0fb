"""The place of a finding (an XML path) as a person reads it on a phone and in the PDF: broken after a step's slash,
never inside a step.

The report for people (the web page's Findings pane, `pipeline validate --html/--pdf`, the endpoints' HTML reports)
gives each finding's place as `/rsm:CrossIndustryInvoice/rsm:SupplyChainTradeTransaction/...`; France's status page
gives the place of each datum of a dispute the same way. Chromium does not break a line after "/", so at 375 px these
broke inside a step ("ram:Inclu / dedSupplyChainTradeLineItem[1]", "ram:Specifi / edLineTradeSettlement"). Now the
HTML has <wbr> after each step's slash; the PDF, whose Pango breaks after a slash by itself, is laid out as before.
The document is an official XRechnung CII sample whose first line has a VAT category and a line amount the rules
refuse, so the findings point deep into a line.
"""
from __future__ import annotations

import re
import time

import pytest

from conftest import CORPUS, SHARED
from pipeline.flows.status_read import render_status
from pipeline.flows.validate_xml import validate_xml
from pipeline.flows.validation_report import readable_report
from pipeline.pdf import page as invoice_page
from test_people_render import phone  # noqa: F401 (a fixture)
from test_render_page import pdftotext

SAMPLE = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml"
DISPUTE = SHARED / "corpus-cdar" / "UC5_F202500007_04-CDV-207_En_litige.xml"


@pytest.fixture(scope="module")
def deep() -> bytes:
    data = SAMPLE.read_bytes()
    line = data.index(b"<ram:IncludedSupplyChainTradeLineItem>")
    code = data.index(b"<ram:CategoryCode>", line) + len(b"<ram:CategoryCode>")
    data = data[:code] + b"Q" + data[code + 1:]   # S -> Q: no VAT category
    total = data.index(b"<ram:LineTotalAmount>", line) + len(b"<ram:LineTotalAmount>")
    end = data.index(b"</ram:LineTotalAmount>", total)
    return data[:total] + b"1.234" + data[end:]   # three decimals


@pytest.fixture(scope="module")
def report(deep):
    found = validate_xml(deep, "xrechnung")
    paths = [i.location.xpath for i in found.issues if i.location and i.location.xpath]
    assert not found.valid and any("IncludedSupplyChainTradeLineItem" in p and p.count("/") > 5 for p in paths)
    return found


# Each step of the paths under `selector` as painted: [step, number of line boxes]; one step over two lines is broken.
STEPS = """
    const out = [];
    for (const box of document.querySelectorAll(arguments[0])) {
      const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
      for (let t = walker.nextNode(); t; t = walker.nextNode()) {
        for (const m of t.textContent.matchAll(/[A-Za-z]+:[A-Za-z]+(\\[\\d+\\])?/g)) {
          const r = document.createRange(); r.setStart(t, m.index); r.setEnd(t, m.index + m[0].length);
          out.push([m[0], r.getClientRects().length, r.getBoundingClientRect().right]);
        }
      }
    }
    return out;"""


@pytest.mark.parametrize("lang", ["en", "de"])
def test_a_finding_s_place_breaks_between_steps_on_a_phone(deep, report, phone, tmp_path, lang):
    html = readable_report(deep, report, "deep.xml", lang)
    assert b"/<wbr/>ram:IncludedSupplyChainTradeLineItem[1]" in html
    path = tmp_path / "report.html"
    path.write_bytes(html)
    phone.get(path.as_uri())
    time.sleep(0.2)
    width = phone.execute_script("return document.documentElement.clientWidth")
    steps = phone.execute_script(STEPS, ".finding .where")
    assert len(steps) > 20 and {"ram:IncludedSupplyChainTradeLineItem[1]", "ram:CategoryCode"} <= {s for s, *_ in steps}
    assert [s for s, lines, _ in steps if lines != 1] == []
    assert max(right for *_, right in steps) <= width
    # the paths still read as paths: the text is the path the report names, nothing added between the steps
    where = phone.execute_script("return Array.from(document.querySelectorAll('.finding .where'), e => e.textContent)")
    assert any(w.endswith("/rsm:CrossIndustryInvoice/rsm:SupplyChainTradeTransaction/"
                          "ram:IncludedSupplyChainTradeLineItem[1]/ram:SpecifiedLineTradeSettlement/"
                          "ram:ApplicableTradeTax/ram:CategoryCode") for w in where), where


def test_the_pdf_report_breaks_a_place_after_a_slash(deep, report, tmp_path):
    pdf = readable_report(deep, report, "deep.xml", "en", pdf=True)
    lines = pdftotext(pdf, tmp_path, "-layout").splitlines()
    placed = [line.strip() for line in lines if re.search(r"\b(rsm|ram):[A-Za-z]+", line) and "|" not in line]
    assert placed
    # a line of a path ends with a whole step (then "/" or the path's end), never inside one
    assert all(re.search(r"(/|[A-Za-z\]])$", line) for line in placed), placed
    steps = {m for line in placed for m in re.findall(r"ram:[A-Za-z]+", line)}
    assert "ram:IncludedSupplyChainTradeLineItem" in steps and "ram:Inclu" not in steps
    assert "\u200b" not in pdftotext(pdf, tmp_path, "-raw")   # nothing invisible a copy would carry


def test_the_pdf_is_laid_out_from_the_path_without_its_break_hints():
    """WeasyPrint is given the text without <wbr>: given the elements, it broke a path inside a step."""
    tree = invoice_page.parse_page(b"<html><body><p>at /a:B/<wbr>c:D[1]/<wbr>e:F</p></body></html>")
    [p] = tree.iter("p")
    assert p.text == "at /a:B/c:D[1]/e:F" and not list(p)


@pytest.mark.parametrize("lang", ["fr", "en"])
def test_a_disputed_datum_s_place_breaks_between_steps_on_a_phone(phone, tmp_path, lang):
    html = render_status([(DISPUTE.name, DISPUTE.read_bytes())], lang, html=True)
    assert b"/<wbr>ram:SpecifiedLineTradeSettlement" in html
    path = tmp_path / "status.html"
    path.write_bytes(html)
    phone.get(path.as_uri())
    time.sleep(0.2)
    steps = phone.execute_script(STEPS, "tr.location td")
    assert {"ram:SpecifiedLineTradeSettlement", "ram:RateApplicablePercent"} <= {s for s, *_ in steps}
    assert [s for s, lines, _ in steps if lines != 1] == []
    # an identifier of a party stays whole in its scrolling table (a SIREN was split "20000000 / 8")
    ids = phone.execute_script("return Array.from(document.querySelectorAll('table.parties td.wrap'), td => {"
                               "const t = td.firstChild, m = t && t.textContent.match(/^\\d{9,14}/);"
                               "if (!m) return null; const r = document.createRange(); r.setStart(t, 0);"
                               "r.setEnd(t, m[0].length); return [m[0], r.getClientRects().length]; })")
    ids = [i for i in ids if i]
    assert len(ids) >= 2 and [i for i, n in ids if n != 1] == [], ids
