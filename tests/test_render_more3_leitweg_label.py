"""Issue 38, the German reader of the invoice page: BT-10 was labelled "Käuferreferenz (Leitweg-ID)" on every
invoice, a French buyer's "ACHAT-2026-118" and a Swedish one's "0150abc" too, as if a German public buyer's routing
ID were there. The label names the Leitweg-ID only for a value of its form (the screen page and the PDF alike)."""
from __future__ import annotations

import json

import pytest
from lxml import html as lxml_html

from pipeline.pdf import page
from test_render_page import ALL_FIELDS, REPO, canonical_of, pdf_pages

LABELS = {"de": ("Käuferreferenz", "Käuferreferenz (Leitweg-ID)"),
          "en": ("Buyer reference", "Buyer reference (Leitweg-ID)")}


def label_of(html: bytes, value: str) -> str:
    """The label (dt) of the invoice's facts whose value (dd) is `value`."""
    doc = lxml_html.document_fromstring(html)
    [dt] = doc.xpath("//section[@class='facts']//div[@class='fact'][dd = $v]/dt", v=value)
    return dt.text_content().strip()


def request(name: str, buyer_reference: str | None = None) -> dict:
    body = json.loads((REPO / "fixtures" / name).read_text())
    body["config"] = {"syntax": "CII"}
    if buyer_reference is not None:
        body["invoice"]["buyerReference"] = buyer_reference
    return body


@pytest.mark.parametrize("lang", ["de", "en"])
@pytest.mark.parametrize("name, reference, leitweg", [
    ("invoice-all-fields.json", None, True),                 # 04011000-12345-03: a Land's ID with check digits
    ("invoice-all-fields.json", "991-33333TEST-33", True),   # the Bund's test ID, a fine address with letters
    ("fr-b2b-goods.json", None, False),                      # ACHAT-2026-118
    ("invoice-all-fields.json", "0150abc", False),           # Peppol's example
    ("invoice-all-fields.json", "PO-4711", False),
])
def test_the_buyer_reference_is_called_a_leitweg_id_only_in_its_form(lang, name, reference, leitweg):
    body = request(name, reference)
    value = body["invoice"]["buyerReference"]
    html = page.invoice_html(canonical_of(body), lang, "EN 16931")
    assert label_of(html, value) == LABELS[lang][leitweg]


def test_the_pdf_says_it_as_the_screen(tmp_path):
    french = request("fr-b2b-goods.json")
    [first, *_] = pdf_pages(page.html_to_pdf(page.invoice_html(canonical_of(french), "de", "EN 16931")), tmp_path)
    assert "Käuferreferenz" in first and "Leitweg" not in first
    german = request("invoice-all-fields.json")
    pages = pdf_pages(page.html_to_pdf(page.invoice_html(canonical_of(german), "de", "EN 16931")), tmp_path)
    assert "Käuferreferenz (Leitweg-ID)" in pages[0]
