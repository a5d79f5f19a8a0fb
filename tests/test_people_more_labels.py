"""The invoice page's party labels as painted in the PDF. In the three blocks side by side (payee, tax
representative, delivery) the label column was 22 mm and hyphenated by syllable: the German page read
"Registernum- / mer" and, in the seller's block, "Weitere rechtliche In- / formationen". A label now breaks between
its words only, in a column that holds its longest word."""
from __future__ import annotations

import json
import re
import subprocess

import pytest
from lxml import html as lxml_html

from pipeline.pdf import page
from test_render_page import ALL_FIELDS, canonical_of


def painted(pdf: bytes, tmp_path) -> str:
    """The PDF's text in reading order as drawn, a word hyphenated at a line end kept as such (U+2010 + newline)."""
    path = tmp_path / "page.pdf"
    path.write_bytes(pdf)
    return subprocess.run(["pdftotext", "-raw", str(path), "-"], capture_output=True, check=True).stdout.decode()


@pytest.mark.parametrize("lang, label", [("de", "Registernummer"), ("en", "registration")])
def test_party_labels_break_between_words_only(lang, label, tmp_path):
    body = json.loads(ALL_FIELDS.read_text())
    body["config"] = {"syntax": "CII"}
    html = page.invoice_html(canonical_of(body), lang, "EN 16931")
    tree = lxml_html.document_fromstring(html)
    blocks = tree.xpath("//section[contains(@class, 'parties')][count(*[contains(@class, 'party')]) = 3]")
    assert blocks, "invoice-all-fields has payee, tax representative and delivery side by side"
    labels = {word for dt in tree.xpath("//dl[contains(@class, 'ids')]/div/dt | //dl[contains(@class, 'ids')]/dt")
              for word in re.findall(r"\w+", dt.text_content())}
    assert label in labels, sorted(labels)
    text = painted(page.html_to_pdf(html), tmp_path)
    broken = {a + b for a, b in re.findall(r"(\w+)\u2010\n(\w+)", text)}
    assert not broken & labels, sorted(broken & labels)
    assert len(re.findall(rf"\b{label}\b", text)) >= 3  # seller, buyer and payee say it whole
