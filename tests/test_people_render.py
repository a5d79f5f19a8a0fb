"""What a person sees of `render` with `validate`: the verdict's findings table and the invoice page, as painted.

On A4 (WeasyPrint, read back with pdftotext) the class column broke "Geschäftsregel" inside the word ("Geschäftsreg /
el"). On a phone (headless chromium at 375 px) the table kept its A4 column widths and left the finding's text one
letter wide, finding texts broke inside words (word-break: break-all), the facts grid broke "Rechnungsnummer" and
the totals ran off the screen. The document is an official XRechnung sample with two mandatory items taken out, so
the official rules find BR-DE-15 and BR-DE-7.
"""
from __future__ import annotations

import logging
import re
import time

import pytest

from conftest import CORPUS, SHARED
from pipeline.flows.render import render
from pipeline.flows.status_read import render_status
from pipeline.pdf import page
from test_render_page import pdftotext

SAMPLE = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml"


@pytest.fixture(scope="module")
def broken() -> bytes:
    """The sample without its buyer reference (BT-10) and the seller's contact e-mail (BT-43)."""
    data = SAMPLE.read_bytes()
    data = re.sub(rb"<cbc:BuyerReference>[^<]*</cbc:BuyerReference>", b"", data, count=1)
    out = re.sub(rb"<cbc:ElectronicMail>[^<]*</cbc:ElectronicMail>", b"", data, count=1)
    assert out != data
    return out


def words(pdf: bytes, tmp_path) -> list[str]:
    """The words of the PDF as laid out, one per box (pdftotext -bbox)."""
    return re.findall(r"<word [^>]*>([^<]*)</word>", pdftotext(pdf, tmp_path, "-bbox"))


@pytest.mark.parametrize("lang, word", [("de", "Geschäftsregel"), ("en", "business")])
def test_the_class_of_each_finding_stays_whole_on_a4(broken, tmp_path, lang, word):
    pdf = render(broken, lang, validate=True)
    found = words(pdf, tmp_path)
    # the rules found BR-DE-15 and BR-DE-7, both business rules; each id is one word, each class word is whole
    assert "BR-DE-15" in found and "BR-DE-7" in found
    assert found.count(word) >= 2, [w for w in found if w.startswith(word[:6])]
    assert not [w for w in found if w != word and word.startswith(w.rstrip("\u2010-")) and len(w) > 3], found


def chromium_at(width: int):
    from test_web_browser import chromium  # the suite's one way to start Debian's headless chromium

    driver = chromium("--disable-dev-shm-usage", "--disable-gpu", f"--window-size={width},900", "--hide-scrollbars")
    driver.set_window_size(width, 900)
    return driver


@pytest.fixture(scope="module")
def phone():
    driver = chromium_at(375)
    yield driver
    driver.quit()


@pytest.mark.parametrize("lang", ["de", "en"])
def test_the_verdict_and_the_page_fit_a_phone(phone, broken, tmp_path, lang):
    path = tmp_path / "page.html"
    path.write_bytes(render(broken, lang, validate=True, html=True))
    phone.get(path.as_uri())
    time.sleep(0.2)
    width = phone.execute_script("return document.documentElement.clientWidth")
    assert width <= 375
    # nothing but the lines table (which scrolls on its own) is wider than the screen
    wide = phone.execute_script(
        "return Array.from(document.querySelectorAll('body *')).filter(e => !e.closest('table.lines') && "
        "e.getBoundingClientRect().right > arguments[0] + 0.5).map(e => e.tagName + '.' + e.className)", width)
    assert wide == []
    assert phone.execute_script("return document.documentElement.scrollWidth") <= width
    lines = phone.execute_script("const t = document.querySelector('table.lines'); "
                                 "return [getComputedStyle(t).overflowX, t.getBoundingClientRect().right]")
    assert lines[0] == "auto" and lines[1] <= width
    # each finding: its rule id on one line, its text as wide as the screen allows, broken between words only
    rows = phone.execute_script("""
        return Array.from(document.querySelectorAll('table.findings tbody tr'), tr => {
          const rule = tr.querySelector('td.rule'), text = tr.querySelector('td.wrap');
          const r = document.createRange(); r.selectNodeContents(rule.firstChild);
          const lines = new Map();  // the words of the text by the line they are painted on
          const t = text.firstChild, s = t.textContent;
          for (const m of s.matchAll(/\\S+/g)) {
            const w = document.createRange(); w.setStart(t, m.index); w.setEnd(t, m.index + m[0].length);
            const boxes = w.getClientRects();
            lines.set(m[0], boxes.length);
          }
          return {rule: rule.firstChild.textContent, ruleLines: r.getClientRects().length,
                  width: text.getBoundingClientRect().width,
                  split: Array.from(lines).filter(([w, n]) => n > 1 && w.length < 20).map(([w]) => w),
                  label: getComputedStyle(tr.querySelector('td.class'), '::before').content};
        })""")
    assert {r["rule"] for r in rows} >= {"BR-DE-15", "BR-DE-7"}
    for row in rows:
        assert row["ruleLines"] == 1, row
        assert row["width"] > 0.8 * width, row
        assert row["split"] == [], row  # a word of the text broken over two lines
        assert row["label"] == {"de": '"Klasse: "', "en": '"Class: "'}[lang], row
    # the facts grid: a label such as "Rechnungsnummer" on one line
    labels = phone.execute_script(
        "return Array.from(document.querySelectorAll('section.facts dl.grid dt'), dt => {"
        "const r = document.createRange(); r.selectNodeContents(dt); "
        "return [dt.textContent, r.getClientRects().length]; })")
    assert labels and all(n == 1 for _, n in labels), labels


@pytest.mark.parametrize("lang", ["fr", "en"])
def test_a_status_message_page_fits_a_phone(phone, tmp_path, lang):
    """France's status message page at 375 px: the partners table (five columns) ran past the screen, and a term
    was broken at its hyphen ("MDT- / 87"). The tables scroll on their own; every term is on one line."""
    message = SHARED / "corpus-cdar" / "UC1_F202500003_07-CDV-212_Encaissee_POUR_PPF.xml"
    path = tmp_path / "status.html"
    path.write_bytes(render_status([(message.name, message.read_bytes())], lang, html=True, validate=True))
    phone.get(path.as_uri())
    time.sleep(0.2)
    width = phone.execute_script("return document.documentElement.clientWidth")
    assert phone.execute_script("return document.documentElement.scrollWidth") <= width
    tables = phone.execute_script("return Array.from(document.querySelectorAll('table.plain'), "
                                  "t => [t.className, getComputedStyle(t).overflowX, t.getBoundingClientRect().right])")
    assert tables and all(o == "auto" and right <= width for _, o, right in tables), tables
    terms = phone.execute_script("return Array.from(document.querySelectorAll('.term'), e => "
                                 "[e.textContent, e.getClientRects().length])")
    assert terms and all(n == 1 for _, n in terms), [t for t in terms if t[1] != 1]


# ---- the rules for narrow screens, which WeasyPrint does not read ------------------------------------------------

def test_a_pdf_is_laid_out_without_a_stylesheet_warning(broken, caplog):
    """WeasyPrint logged "Invalid media type ' screen and (max-width: 720px) ' the whole @media rule was ignored"
    (and the 480 px one) on every PDF: the screen rules lived in the stylesheet it reads."""
    page._weasy.clear()   # the stylesheets are parsed (and warned about) once a process: parse them again here
    with caplog.at_level(logging.DEBUG, logger="weasyprint"):
        pdf = render(broken, "de", validate=True)
        status = render_status([(m.name, m.read_bytes()) for m in sorted((SHARED / "corpus-cdar").glob("*.xml"))],
                               "fr", validate=True)
    assert pdf.startswith(b"%PDF") and status.startswith(b"%PDF")
    said = [r.getMessage() for r in caplog.records if r.name.startswith("weasyprint") and r.levelno >= logging.WARNING]
    assert said == []
    assert "@media" not in page.CSS_FILE.read_text()


@pytest.mark.parametrize("what", ["invoice", "status"])
def test_html_answered_to_people_carries_the_screen_rules(broken, phone, tmp_path, what):
    """The rules WeasyPrint no longer reads still reach a browser: at 375 px the facts grid has two columns and the
    status page's tables scroll on their own (both from templates/invoice-screen.css)."""
    message = SHARED / "corpus-cdar" / "UC1_F202500003_01-CDV-200_Deposee.xml"
    html = (render(broken, "de", validate=True, html=True) if what == "invoice"
            else render_status([(message.name, message.read_bytes())], "fr", html=True))
    assert page.SCREEN_CSS_FILE.read_text(encoding="utf-8") in html.decode("utf-8")
    path = tmp_path / "page.html"
    path.write_bytes(html)
    phone.get(path.as_uri())
    time.sleep(0.2)
    lefts = phone.execute_script("return Array.from(document.querySelectorAll('section.facts dl.grid .fact'), "
                                 "f => Math.round(f.getBoundingClientRect().left))")
    assert len(set(lefts)) == 2, lefts
    if what == "status":
        assert phone.execute_script("return getComputedStyle(document.querySelector('table.parties')).overflowX") \
            == "auto"
