"""The validation report as a person receives it from a started `pipeline serve` (PDF read back with pdftotext, page by
page, as painted; the page's findings frame in headless Chromium).

- A valid invoice's page starts with its head (seller, title, number) on the page its parties are on: the head of a
  real XRechnung (ZUGFeRD community corpus) stood alone at the foot of the findings' last page.
- A code frame of a document of long lines (a ZUGFeRD PDF's invoice: long lines, empty ones between them, CRLF)
  shows an empty line as empty: each read "2 | …", as if the frame had cut text away.
- A file that is no text (an image under an .xml name, from the KoSIT configuration's own tests) gets no "code frame"
  of its bytes ("BM6", control characters) but a sentence saying what it is, in the report's language.
"""
from __future__ import annotations

import json
import re

import pytest
import requests

from conftest import CORPUS, SHARED
from test_platform_helpers import serve_with_key
from test_render_page import pdf_pages

ELEKTRON = SHARED / "realworld/corpus/XML-Rechnung/CII/XRECHNUNG_Elektron.cii.xml"  # valid, 3 warnings, 2 lines
LONG_LINES = SHARED / "realworld/corpus/ZUGFeRDv2/fail/ZUGFeRD_2.0_fully_compliant_complete.pdf"
IMAGE = CORPUS / "kosit-validator-configuration-tests/instances/bin001.xml"  # a BMP picture named .xml
WAIT = 360  # s: a request's longest wait on a 2-core machine kept busy by other suites
# what each language paints: the invoice's type and its parties' heading; the note on a file that is no text
WORDS = {"en": ("Final construction invoice", "SELLER", "The file is not text but an image"),
         "de": ("Schlussrechnung (Bau)", "VERKÄUFER", "Die Datei ist kein Text, sondern ein Bild")}


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    # the time budget is not what these tests look at: room for a loaded machine (a 503 TIME_BUDGET at 60 s)
    server, _, token = serve_with_key(tmp_path_factory.mktemp("people-more2-report"), "report-pdf", 10,
                                      env={"EINVOICE_REQUEST_BUDGET": str(WAIT - 60)})
    yield server, token
    server.stop()


def report(live, path, language: str, accept: str, spec: str = "xrechnung") -> bytes:
    server, token = live
    r = requests.post(f"{server.url}/v1/invoice/{spec}/validate",
                      headers={"Authorization": f"Bearer {token}", "Accept": accept},
                      files={"file": (path.name, path.read_bytes()),
                             "request": (None, json.dumps({"metadataLanguage": language}), "application/json")},
                      timeout=WAIT)
    assert r.status_code == 200, r.text[:500]
    return r.content


@pytest.mark.parametrize("language", ["en", "de"])
def test_the_invoice_head_is_painted_on_the_page_of_its_parties(live, tmp_path, language):
    title, parties, _ = WORDS[language]
    pages = pdf_pages(report(live, ELEKTRON, language, "application/pdf"), tmp_path)
    assert len(pages) >= 2, pages
    with_title = [n for n, text in enumerate(pages) if title in text]
    assert len(with_title) == 1, (title, with_title)
    page = pages[with_title[0]]
    # the head: seller's name, then the title, then the number; the parties' heading below them on the same page
    assert "ELEKTRON Industrieservice GmbH" in page and "181301674" in page
    assert parties in page and page.index(title) < page.index(parties), page[:600]
    # and the findings before it: the warnings' last frame is not on a page of its own after the invoice
    assert with_title[0] >= 1 and "CHECK-LEITWEG-ID" in "".join(pages[:with_title[0]])


@pytest.mark.parametrize("language", ["en", "de"])
def test_a_file_that_is_no_text_gets_a_sentence_not_a_frame_of_its_bytes(live, tmp_path, language):
    assert IMAGE.read_bytes().startswith(b"BM")  # a bitmap, whatever its name says
    _, _, note = WORDS[language]
    painted = "\n".join(pdf_pages(report(live, IMAGE, language, "application/pdf"), tmp_path))
    assert "XML-MALFORMED" in painted
    assert note in " ".join(painted.split()), painted
    # no frame: no numbered source line, none of the picture's bytes
    assert " 1 | " not in painted and "BM6" not in painted and "\ufffd" not in painted, painted
    html = report(live, IMAGE, language, "text/html").decode("utf-8")
    assert 'class="frame"' not in html and "BM6" not in html


def test_a_readable_file_keeps_its_frame(live, tmp_path):
    """The sentence is for bytes only: a text file that is no XML still shows where reading stopped."""
    text = tmp_path / "notes.xml"
    text.write_text("Rechnung 4711 über 119,00 EUR\nbitte überweisen\n", encoding="utf-8")
    painted = "\n".join(pdf_pages(report(live, text, "de", "application/pdf"), tmp_path))
    assert "1 | Rechnung 4711 über 119,00 EUR" in painted and WORDS["de"][2] not in painted


def test_an_empty_line_between_long_ones_is_painted_empty(live, tmp_path):
    painted = pdf_pages(report(live, LONG_LINES, "de", "application/pdf", "zugferd"), tmp_path)[0]
    frame = [line.strip() for line in painted.splitlines() if re.match(r"\s+\d+ \| ", line + " ")]
    # the finding on line 3, column 535: lines 1-5 through the same window; 2 and 4 are empty in the document
    assert [line.split(" |")[0] for line in frame[:5]] == ["1", "2", "3", "4", "5"], frame
    assert frame[1] == "2 |" and frame[3] == "4 |", frame
    # cut on the left where text was: the long lines still start with "…"
    assert frame[0].startswith("1 | …") and frame[2].startswith("3 | …"), frame


def test_the_page_paints_the_sentence_for_a_picture(live, tmp_path_factory):
    """The page's findings pane (the service's HTML report in a sandboxed frame) in German, as Chromium paints it."""
    from test_web_browser import by_id, chromium, enter_key, frame_text, validate

    server, token = live
    driver = chromium("--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,1000", "--lang=de-DE")
    try:
        driver.set_page_load_timeout(WAIT)
        driver.get(server.url + "/?lang=de")
        enter_key(driver, token)
        validate(driver, IMAGE)
        assert by_id(driver, "verdict-title").text == "Ungültig"
        painted = frame_text(driver, "report-frame")  # WebDriver's text: what is rendered, not hidden markup
        assert WORDS["de"][2] in " ".join(painted.split()), painted
        assert "XML-MALFORMED" in painted and "BM6" not in painted and not re.search(r"\b1 \|", painted), painted
        driver.save_screenshot(str(tmp_path_factory.mktemp("screenshots") / "picture.png"))
    finally:
        driver.quit()
