"""The PDF page leaves ligatures at their default (templates/invoice.css): Liberation Sans, the page's font, has no
ligature features, so the page must come out byte for byte as it did with `font-variant-ligatures: none`, which only
cost WeasyPrint a font-features attribute on each Pango layout. A font update that brings fi/fl ligatures, or text
that falls back to a font with them, fails here instead of changing the page unnoticed."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from weasyprint import CSS

from pipeline.flows.generate_xml import normalize
from pipeline.pdf import page
from tests.test_zugferd_samples import invoice_request

ALL_FIELDS = Path(__file__).resolve().parent.parent / "fixtures" / "invoice-all-fields.json"
# Latin words with f-ligature pairs, and scripts drawn by the fallback fonts (DejaVu, Droid Sans Fallback, Symbola)
WORDS = "Effizienz official fluff ﬁ Œuvre ĳ Ωμέγα Москва مرحبا שלום 上海 \U0001F642 ↳"


def _request(name: str) -> dict:
    if name == "all-fields":
        body = json.loads(ALL_FIELDS.read_text())
        body["config"] = {"syntax": "CII"}
        return body
    body = invoice_request(10 if name == "10-lines" else 2, "EN16931")
    if name == "scripts":
        body["invoice"]["seller"]["name"] = "Official Effizienz " + WORDS
        body["invoice"]["buyer"]["name"] = WORDS
        body["invoice"]["invoiceLines"][0]["itemInformation"]["description"] = "Zertifizierung, Pflichtfelder " + WORDS
    return body


@pytest.mark.parametrize("name, lang", [("all-fields", "de"), ("10-lines", "en"), ("scripts", "en")])
def test_ligature_setting_draws_the_same_pdf(name, lang, monkeypatch):
    canonical = normalize(json.dumps(_request(name)).encode(), "zugferd")[1]
    html = page.invoice_html(canonical, lang, "EN 16931")
    default = page.html_to_pdf(html)
    weasy = page._weasyprint()
    none = CSS(string=page.CSS_FILE.read_text(encoding="utf-8") + "\nhtml { font-variant-ligatures: none; }",
               font_config=weasy["fonts"], url_fetcher=weasy["fetcher"])
    monkeypatch.setitem(weasy, "css", none)
    assert page.html_to_pdf(html) == default

