"""Issue 38 item 6 walked again: the invoice page of fixtures/invoice-all-fields.json in a browser, both languages.

The PDF's three party blocks (payee, tax representative, delivery) give their labels 24 mm, enough for the longest
label word in the PDF's 8 pt Liberation Sans; a screen sets the page in 8.5 pt DejaVu Sans, wider, where that column
broke the German "Registernummer" inside the word ("Registernumm / er": 94.5 px in 85). No label word is painted on
two lines at any width (each word's letters measured as the browser placed them).
"""
from __future__ import annotations

import json

import pytest

from test_web_browser import browser, screenshots  # noqa: F401 - fixtures of the browser test

# Each label word as painted: a word whose letters lie on more than one line was broken inside it.
BROKEN_LABEL_WORDS = """
const broken = [];
for (const dt of document.querySelectorAll('.party dl.ids dt')) {
  for (const node of dt.childNodes) {
    if (node.nodeType !== Node.TEXT_NODE) continue;
    for (const word of node.data.matchAll(/\\S+/g)) {
      const range = document.createRange();
      range.setStart(node, word.index);
      range.setEnd(node, word.index + word[0].length);
      const lines = new Set(Array.from(range.getClientRects()).map((r) => Math.round(r.top)));
      if (lines.size > 1) broken.push(word[0]);
    }
  }
}
return [broken, document.querySelectorAll('.party dl.ids dt').length,
        document.querySelectorAll('.parties .party:first-child:nth-last-child(3)').length];
"""


@pytest.mark.parametrize("lang", ["en", "de"])
def test_party_labels_break_between_words_only_on_screen(browser, tmp_path, screenshots, lang):  # noqa: F811
    from pipeline.pdf import page as invoice_page
    from test_render_page import ALL_FIELDS, canonical_of

    body = json.loads(ALL_FIELDS.read_text())
    body["config"] = {"syntax": "CII"}
    target = tmp_path / f"invoice-{lang}.html"
    target.write_bytes(invoice_page.styled(invoice_page.invoice_html(canonical_of(body), lang, "EN 16931")))
    for width in (1280, 1000, 721, 460, 375):  # three blocks side by side down to 721 px, one under another below
        browser.set_window_size(width, 1200)
        browser.get(target.as_uri())
        broken, labels, rows_of_three = browser.execute_script(BROKEN_LABEL_WORDS)
        browser.save_screenshot(str(screenshots / f"party-labels-{lang}-{width}.png"))
        assert labels >= 20 and rows_of_three == 1, (width, labels, rows_of_three)
        assert broken == [], (width, broken)
