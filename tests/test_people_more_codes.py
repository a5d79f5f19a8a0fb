"""A finding's code in the report for people as a phone paints it. The PDF checks' codes are long and joined by
colons ("PDFA_NOT_CHECKED:pikepdf:embedded-file"); in the web page's findings pane on a phone (320-340 px) Chromium broke them inside a word ("...:embedde /
d-file"). The report now allows a break after each colon, and a code breaks there (or at its own hyphen)."""
from __future__ import annotations

import re

from lxml import html as lxml_html

from conftest import CORPUS
from pipeline.flows.validate_pdf import validate_pdf
from pipeline.flows.validation_report import readable_report
from pipeline.pdf.page import styled
from test_render_page import pdftotext
from test_web_browser import chromium

ZUGFERD = CORPUS / "mustangproject/validator/validXRechnung.pdf"

# Each character's line (its box's top) in the finding codes as laid out: where a code wraps, the last character
# before the new line.
BREAKS = """
return [...document.querySelectorAll('.finding .rule')].map((rule) => {
  const tops = [];
  const walker = document.createTreeWalker(rule, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (let i = 0; i < node.data.length; i++) {
      const range = document.createRange();
      range.setStart(node, i);
      range.setEnd(node, i + 1);
      const box = range.getClientRects()[0];
      if (box) tops.push([node.data[i], Math.round(box.top)]);
    }
  }
  return [rule.textContent, tops.filter((t, i) => i > 0 && t[1] > tops[i - 1][1]).map((t, i, all) =>
    tops[tops.indexOf(t) - 1][0])];
});
"""


def test_long_finding_codes_break_at_their_colons_on_a_phone(tmp_path):
    data = ZUGFERD.read_bytes()
    report = validate_pdf(data)
    codes = [i.code for i in report.issues if i.code.count(":") >= 2 and len(i.code) > 30]
    assert codes, [i.code for i in report.issues]  # the PDF checks' long codes are among the findings
    html = readable_report(data, report, ZUGFERD.name, "de")
    rules = [r.text_content() for r in lxml_html.document_fromstring(html).find_class("rule")]
    assert set(codes) <= set(rules), rules  # the codes read as they are (the break opportunity adds no character)
    page = tmp_path / "report.html"
    page.write_bytes(styled(html))  # with the invoice page's stylesheets, as the web page's findings pane has them
    driver = chromium("--disable-gpu", "--window-size=375,900")
    painted = []
    try:
        for width in (320, 340):  # the findings pane on a phone is about that wide
            driver.set_window_size(width, 900)
            driver.get(page.as_uri())
            painted += driver.execute_script(BREAKS)
    finally:
        driver.quit()
    wrapped = [(code, before) for code, before in painted if before and code in codes]
    assert wrapped, painted  # so narrow, a long code does not fit its line
    assert all(set(before) <= {":", "-"} for _, before in wrapped), wrapped  # after a colon or the code's hyphen
    # the PDF report reads each code whole
    text = pdftotext(readable_report(data, report, ZUGFERD.name, "de", pdf=True), tmp_path, "-raw")
    assert all(re.search(re.escape(code).replace(":", r":\s?"), text) for code in codes), text
