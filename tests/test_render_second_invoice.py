"""render of a ZUGFeRD PDF that embeds a second invoice file with other content (FX_SECOND_INVOICE): the page shows
the invoice file read and says, above it, which file it does not show, in the words convert uses when it leaves that
file out (issue 35). A real PDF of ../shared/realworld with an xrechnung.xml added in memory."""
from __future__ import annotations

import falcon.testing
import pytest
from lxml import html as lxml_html

from test_convert_losses import PDF, _with_second_invoice
from test_parse import upload
from test_render_page import pdftotext
from pipeline.service.app import create_app

NOTICE = "//section[contains(@class, 'not-shown')]"


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def _render(client, pdf: bytes, request: dict | None = None, html: bool = True):
    resp = upload(client, pdf, request or {}, name="invoice.pdf", path="/v1/invoice/render",
                  headers={"Accept": "text/html"} if html else None)
    assert resp.status_code == 200, resp.text[:500]
    return resp


def _notices(page: bytes) -> list[str]:
    return [" ".join(" ".join(box.itertext()).split()) for box in lxml_html.fromstring(page).xpath(NOTICE)]


def test_the_page_names_the_second_invoice_file_it_does_not_show(client):
    pdf, _ = _with_second_invoice(PDF.read_bytes())
    [notice] = _notices(_render(client, pdf).content)
    assert notice.startswith("Not shown The PDF embeds a second invoice file 'xrechnung.xml'"), notice
    assert notice.endswith("Only the invoice file read ('factur-x.xml') is shown."), notice
    # convert says the same of that file: the check's sentence, then what it was made of
    refused = upload(client, pdf, {"to": "UBL"}, name="invoice.pdf", path="/v1/invoice/convert")
    [entry] = refused.json["errors"]
    said = entry["message"].removesuffix(" Only the invoice file read ('factur-x.xml') is converted.")
    assert said != entry["message"] and notice == f"Not shown {said} Only the invoice file read ('factur-x.xml') is shown."


def test_in_german_and_in_the_pdf_too(client, tmp_path):
    pdf, _ = _with_second_invoice(PDF.read_bytes())
    [notice] = _notices(_render(client, pdf, {"metadataLanguage": "de"}).content)
    assert notice.startswith("Nicht gezeigt Das PDF enthält eine zweite Rechnungsdatei 'xrechnung.xml'"), notice
    assert notice.endswith("Gezeigt wird nur die gelesene Rechnungsdatei ('factur-x.xml')."), notice
    text = " ".join(pdftotext(_render(client, pdf, html=False).content, tmp_path, "-raw").split())
    assert "Not shown The PDF embeds a second invoice file 'xrechnung.xml'" in text, text[:600]


def test_with_validate_the_notice_stands_beside_the_verdict(client):
    """The verdict box says the file was not judged (FX_SECOND_INVOICE), the notice that the page does not show it."""
    pdf, _ = _with_second_invoice(PDF.read_bytes())
    page = _render(client, pdf, {"validate": True}).content
    assert len(_notices(page)) == 1
    verdict = lxml_html.fromstring(page).xpath("//section[contains(@class, 'verdict')][not(contains(@class, 'not-shown'))]")
    assert verdict and "FX_SECOND_INVOICE" in verdict[0].text_content()


@pytest.mark.parametrize("same", [True, False], ids=["the-same-file-twice", "one-invoice-file"])
def test_no_notice_where_nothing_is_left_out(client, same):
    pdf = _with_second_invoice(PDF.read_bytes(), same=True)[0] if same else PDF.read_bytes()
    assert _notices(_render(client, pdf).content) == []
