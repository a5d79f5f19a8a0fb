"""A German report for people of a lifecycle status message (CDV) is German: the readable status page had English and
French only, so a German validate report, job report or render showed the message in English. The German names of
the MDT terms, of the code lists and of the page's labels are ours; each code keeps its official French name beside
the German one. Judged on FNFE's official examples, as the PDF paints them (pdftotext) and as the HTML shows them."""
from __future__ import annotations

import io
import json
import re
import zipfile

import falcon.testing
import pytest
import requests
from lxml import html as lxml_html

from cdar_cases import example, examples
from pipeline.flows import status_read
from pipeline.invoice import cdar, cdar_terms
from pipeline.service.app import create_app
from test_render_page import page_text, pdftotext
from test_validate_endpoints import post

RECEIVED = "/work/shared/corpus-cdar/UC1_F202500003_02-CDV-202_Recue.xml"
VALIDATE = "/v1/invoice/fr-ctc/status/validate"
RENDER = "/v1/invoice/fr-ctc/status/render"
GERMAN_202 = ["Rechnungsstatus", "202 – Empfangen, frz. „Reçue“", "Statuscode MDT-105",
              "305 – Übermittlung (Plattform)", "380 – Handelsrechnung, frz. „Facture commerciale“",
              "WK – Plattform oder Dienstleister für elektronische Rechnungen, frz. „Plateforme ou opérateur de dématérialisation“", "Beteiligte", "01.07.2025 16:10"]


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def _labels(page: bytes) -> set[str]:
    """The page's own words: its headings, column heads and the names of its facts and codes (not the values)."""
    root = lxml_html.document_fromstring(page)
    texts = [" ".join(e.text_content().split()) for e in root.iter("h1", "h2", "th", "dt")]
    texts += [m.group(1) for m in re.finditer(r" – ([^,;()0-9]+)", page_text(page))]
    return {word for text in texts for word in re.findall(r"[A-Za-zÄÖÜäöüß]{4,}", text)}


@pytest.mark.parametrize("path", examples(), ids=lambda p: p.stem)
def test_the_german_pdf_paints_no_english_label(path, tmp_path):
    """Every word the English page labels with and the German page does not is absent from the painted German page
    (French official names aside: they are French words, and the messages' own texts are shown as sent)."""
    files = [(path.name, path.read_bytes())]
    english = _labels(status_read.render_status(files, "en", html=True))
    german_html = status_read.render_status(files, "de", html=True)
    assert '<html lang="de">' in german_html.decode()
    french = _labels(status_read.render_status(files, "fr", html=True))
    own = set(re.findall(r"[A-Za-z]{4,}", path.read_text(encoding="utf-8")))   # the message's own values ("invoice")
    only_english = english - _labels(german_html) - french - own
    painted = set(re.findall(r"[A-Za-zÄÖÜäöüß]{4,}", pdftotext(status_read.render_status(files, "de"), tmp_path,
                                                                 "-raw")))
    assert only_english and not only_english & painted, sorted(only_english & painted)


def test_the_received_message_in_german(tmp_path):
    data = open(RECEIVED, "rb").read()
    pdf = status_read.render_status([("202.xml", data)], "de")
    text = " ".join(pdftotext(pdf, tmp_path, "-raw").split())
    for words in [*GERMAN_202, "Seite 1 von 1"]:
        assert words in text, words
    for english in ("Invoice status", "Received", "Status code", "Platform or e-invoicing operator", "Page 1 of 1"):
        assert english not in text, english


def test_every_code_and_term_has_a_german_name():
    for kind, table in cdar.CODE_LISTS.items():
        named = {code for code, names in table.items() if names}
        assert named == set(cdar.GERMAN_NAMES[kind]), kind
    assert all(cdar_terms.GERMAN[t.json_path] for t in cdar_terms.TERMS)
    assert cdar_terms.rule_label("BR-FR-CDV-14_MDT-207", "de") == "MDT-207 Code der Angabenart"
    assert cdar_terms.rule_label("BR-FR-CDV-14_MDT-207", "en") == "MDT-207 Data type code"


def test_amounts_and_dates_in_german_notation():
    path = example("212")
    text = page_text(status_read.render_status([(path.name, path.read_bytes())], "de", html=True))
    assert "MEN – Eingegangener Betrag (brutto), frz. „Montant encaissé (TTC)“12.000 EUR20,00 %" in text   # three cells
    assert "212 Zahlung eingegangen, frz. „Encaissée“ ·" in text


def test_the_validate_report_with_metadata_language_de(client):
    data = open(RECEIVED, "rb").read()
    r = post(client, VALIDATE, headers={"Accept": "text/html"}, file=data, request='{"metadataLanguage": "de"}')
    assert r.status_code == 200
    text = page_text(r.content)
    assert "Gültig" in text and all(words in text for words in GERMAN_202), text
    r = post(client, VALIDATE, headers={"Accept": "text/html"}, file=data)
    assert "202 – Received" in page_text(r.content) and "Rechnungsstatus" not in page_text(r.content)


def test_an_invalid_message_s_german_report_names_the_term_in_german(client):
    from cdar_cases import MUTATIONS, mutated
    _, status, edit, rule = MUTATIONS[3]   # BR-FR-CDV-14_MDT-207
    r = post(client, VALIDATE, headers={"Accept": "text/html"}, file=mutated(edit, status),
             request='{"metadataLanguage": "de"}')
    text = page_text(r.content)
    assert rule in text and "MDT-207 Code der Angabenart" in text and "Data type code" not in text


def test_the_render_endpoint_in_german(client):
    files = [("file", (p.name, p.read_bytes(), "application/xml")) for p in examples() if p.name.startswith("UC1_")]
    body, content_type = _multipart(files, {"language": "de"})
    r = client.simulate_post(RENDER, body=body, headers={"Content-Type": content_type, "Accept": "text/html"})
    assert r.status_code == 200, r.text
    text = page_text(r.content)
    assert "Lebenszyklus der Rechnung" in text and "Status in zeitlicher Reihenfolge" in text
    assert text.index("200 Eingereicht") < text.index("202 Empfangen") < text.index("212 Zahlung eingegangen")


def _multipart(files, request: dict) -> tuple[bytes, str]:
    prepared = requests.Request("POST", "http://x", files=[*files, ("request", (None, json.dumps(request),
                                                                                 "application/json"))]).prepare()
    return prepared.body, prepared.headers["Content-Type"]


def test_a_job_s_report_for_people_in_german(tmp_path):
    from test_jobs import get, submit, wait_for
    from test_platform_helpers import serve_with_key

    server, _, token = serve_with_key(tmp_path, "jobs-cdar-de", 10, workers=1, warm=False)
    try:
        archive = io.BytesIO()
        with zipfile.ZipFile(archive, "w") as z:
            z.writestr("202.xml", open(RECEIVED, "rb").read())
        r = submit(server.url, token, archive.getvalue(),
                   {"operation": "validate", "spec": "fr-cdar", "html": True, "metadataLanguage": "de"})
        assert r.status_code == 202, r.text
        job = wait_for(server.url, token, r.json()["id"])
        assert (job["state"], job["valid"]) == ("done", 1)
        reports = zipfile.ZipFile(io.BytesIO(get(server.url, token, f"/v1/jobs/{job['id']}/results?format=zip")
                                             .content))
        [name] = [n for n in reports.namelist() if n.endswith(".html")]
        text = page_text(reports.read(name))
        assert all(words in text for words in GERMAN_202), text
    finally:
        server.stop()
