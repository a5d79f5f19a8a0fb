"""render of a ZUGFeRD PDF that embeds a second invoice file with other content (FX_SECOND_INVOICE): the page shows
the invoice file read and says, above it, which file it does not show, in the words convert uses when it leaves that
file out (issue 35). A real PDF of ../shared/realworld with an xrechnung.xml added in memory."""
from __future__ import annotations

import io
import re
import subprocess

import falcon.testing
import pytest
from lxml import html as lxml_html
from PIL import Image

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


def _words(pdf_path) -> list[tuple[str, float, float, float]]:
    """The first page's words with their left edge, top and bottom (pt) as pdftotext -bbox reads them."""
    out = subprocess.run(["pdftotext", "-f", "1", "-l", "1", "-bbox", str(pdf_path), "-"], capture_output=True,
                         check=True).stdout.decode("utf-8")
    return [(w, float(x0), float(y0), float(y1)) for x0, y0, y1, w in re.findall(
        r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="[\d.]+" yMax="([\d.]+)">(.*?)</word>', out)]


@pytest.mark.parametrize("lang, title, sentence, verdict", [
    ("en", "Not shown", "The PDF embeds a second invoice file", "Indeterminate"),
    ("de", "Nicht gezeigt", "Das PDF enthält eine zweite Rechnungsdatei", "Nicht beurteilbar")])
def test_the_pdf_paints_the_notice_in_a_box_between_the_verdict_and_the_invoice(client, tmp_path, lang, title,
                                                                                 sentence, verdict):
    """What is painted (the PDF's first page at 72 dpi, 1 px = 1 pt): the notice's heading and sentence in the
    request's language, inside a framed box (its left bar and tinted background around the text), under the
    verdict box and above the invoice's header (the seller's name, then the document type)."""
    pdf, _ = _with_second_invoice(PDF.read_bytes())
    path = tmp_path / f"{lang}.pdf"
    path.write_bytes(_render(client, pdf, {"metadataLanguage": lang, "validate": True}, html=False).content)
    words = _words(path)
    text = [w for w, *_ in words]

    def at(phrase: str, start: int = 0) -> int:
        first, n = phrase.split(), len(phrase.split())
        return next(i for i in range(start, len(text)) if text[i:i + n] == first)

    # (the verdict's not-judged line says the same sentence: the notice's is the one after its heading)
    judged = at(verdict)
    heading = at(title, judged)
    said = at(sentence, heading)
    header = next(i for i in range(said, len(text)) if text[i:i + 2] == ["Lieferant", "GmbH"])
    top = lambda i: words[i][2]   # noqa: E731
    assert top(judged) < top(heading) < top(said) < top(header), (judged, heading, said, header)

    subprocess.run(["pdftoppm", "-f", "1", "-l", "1", "-r", "72", "-png", str(path), str(tmp_path / lang)], check=True)
    [png] = tmp_path.glob(f"{lang}-*.png")
    image = Image.open(io.BytesIO(png.read_bytes())).convert("RGB")
    _, x0, y0, y1 = words[heading]
    row = int((y0 + y1) / 2)
    # the heading's own ink: dark pixels where pdftotext places it
    ink = [image.getpixel((x, y)) for x in range(int(x0), int(words[heading + 1][1]) + 20)
           for y in range(int(y0), int(y1))]
    assert sum(1 for px in ink if sum(px) < 300) > 20
    # left of the text, the box: its tinted background, then its bar (a purple, blue > red > green)
    left = [image.getpixel((x, row)) for x in range(int(x0) - 20, int(x0) - 1)]
    assert any(b > r > g and b - g > 40 for r, g, b in left), left
    tint = image.getpixel((int(x0) - 3, row))
    assert tint != (255, 255, 255) and min(tint) > 220, tint
    # under the box, before the invoice's header, the page is white again
    below = image.getpixel((int(x0) - 3, int(words[header][2]) - 4))
    assert below == (255, 255, 255), below


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
