"""A validate job's reports for people (`"html": true`) as a ZIP, for documents that got no report.

A German clerk opening the ZIP of a German job found German reports for the documents that were checked, and for
the ones that were not (a damaged PDF, a ZIP inside the archive, an e-mail without an invoice) a `.error.json` in
English: "The uploaded file is not a readable PDF." Now each gets a page in the job's language, saying why, as the
web page says it; the JSON lines of the API keep their English `message`, with the same German beside it as
`messageDe` (tests/test_german_job_lines.py)."""
from __future__ import annotations

import io
import json
import re
import zipfile

import lxml.html
import pytest
import requests

from conftest import SHARED
from mailbuild import message
from pipeline.flows.validation_report import refusal_page
from pipeline.service import openapi
from pipeline.settings import TEMPLATES_DIR
from test_jobs import get, results, submit, wait_for
from test_platform_helpers import serve_with_key
from test_web_browser import browser, live, page, screenshots  # noqa: F401 - fixtures of the browser test
from test_web_browser import by_id, follow_job, start_job

STRINGS = json.loads((TEMPLATES_DIR / "web" / "strings.json").read_text(encoding="utf-8"))
VALID = SHARED / "realworld" / "corpus" / "XML-Rechnung" / "CII" / "EN16931_Rabatte.cii.xml"
# Words of the service's own English a German page must not hold (its names, codes and the PDF reader's quoted
# words aside)
ENGLISH = {"the", "file", "is", "not", "a", "readable", "document", "inside", "message", "has", "no", "invoice",
           "from", "subject", "date", "report", "checked", "error", "archives", "signature", "validation"}


def _text(html: bytes) -> str:
    root = lxml.html.document_fromstring(html)
    for style in root.xpath("//style"):
        style.drop_tree()
    return " ".join(" ".join(root.body.itertext()).split())  # (dt and dd meet without a space in text_content)


def _words(text: str) -> set[str]:
    """The words of `text` but its codes (NESTED_ARCHIVE)."""
    return {w.lower() for w in re.findall(r"[A-Za-zÄÖÜäöüß]+", re.sub(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b", "", text))}


# Every code a validate job's entry can carry: what unpacking refuses, what the validate endpoints refuse for a
# document, what a job says of a document never worked on, and a crash
JOB_CODES = sorted({*openapi.ENTRY_CODES, "NO_INVOICE", "NOT_PROCESSED", "TIME_BUDGET",
                    *(code for kind in ("validate_xml", "validate_pdf", "read_status")
                      for codes in openapi.ERROR_CODES[kind].values() for code in codes),
                    *openapi._COMMON_CODES[500], *openapi._COMMON_CODES[503]})


@pytest.mark.parametrize("code", JOB_CODES)
def test_every_code_of_a_job_entry_is_said_in_german(code):
    kind = "notice" if code == "NO_INVOICE" else "error"
    entry = {"name": "rechnung.xml", kind: {"code": code, "message": "An English sentence of the service."}}
    text = _text(refusal_page(entry, "de"))
    assert STRINGS["de"]["errors"][code] in text and f"( {code} )" in text, text
    assert "English" not in text and STRINGS["de"]["doc_error" if kind == "error" else "doc_notice"] in text
    assert "An English sentence of the service." in _text(refusal_page(entry, "en"))


def test_a_field_of_an_entry_and_its_own_german_come_along():
    entry = {"name": "a.pdf", "signature": {"status": "intact", "meaning": {"en": "It is intact.", "de": "Intakt."}},
             "error": {"code": "INVALID_INPUT", "message": "The request is invalid.", "errors": [
                 {"code": "INVALID_VALUE", "field": "request.spec", "message": "must be one of ..."},
                 {"code": "INVALID_PDF", "field": "file", "message": "the PDF cannot be parsed",
                  "messageDe": "Das PDF lässt sich nicht lesen"}]}}
    text = _text(refusal_page(entry, "de"))
    assert f"request.spec: {STRINGS['de']['errors']['INVALID_VALUE']} ( INVALID_VALUE )" in text, text
    assert "Das PDF lässt sich nicht lesen ( INVALID_PDF )" in text and "file:" not in text
    assert "Signatur Intakt." in text and "must be" not in text and "cannot" not in text


def _mixed() -> bytes:
    buf, inner = io.BytesIO(), io.BytesIO()
    with zipfile.ZipFile(inner, "w") as z:
        z.writestr("x.xml", "<a/>")
    with zipfile.ZipFile(buf, "w") as z:
        z.write(VALID, "valid.xml")
        z.writestr("broken.pdf", b"%PDF-1.4\n1 0 obj garbage")
        z.writestr("nested.zip", inner.getvalue())
        z.writestr("mail.eml", message(1, [], subject="Ihre Rechnung").as_bytes())
    return buf.getvalue()


def test_a_german_job_zip_says_why_in_german_for_each_document_without_a_report(tmp_path):
    server, _, token = serve_with_key(tmp_path, "jobs-zip-de", 100, workers=1, warm=False)
    try:
        archives = {}
        for lang in ("de", "en"):
            r = submit(server.url, token, _mixed(), {"operation": "validate", "html": True, "metadataLanguage": lang})
            assert r.status_code == 202, r.text
            job = wait_for(server.url, token, r.json()["id"])
            assert (job["state"], job["total"], job["errors"], job["noInvoice"]) == ("done", 4, 2, 1), job
            lines = {line["name"]: line for line in results(server.url, token, job["id"])}
            z = zipfile.ZipFile(io.BytesIO(get(server.url, token, f"/v1/jobs/{job['id']}/results?format=zip").content))
            archives[lang] = lines, {n: z.read(n) for n in z.namelist()}
        lines, members = archives["de"]
        mail = next(n for n in lines if n.startswith("mail.eml/"))
        folder = next(n for n in members if n.startswith("mail.eml/"))
        assert sorted(members) == sorted(["valid.xml.html", "broken.pdf.error.html", "nested.zip.error.html", folder])
        assert folder.endswith(".html") and not folder.endswith(".error.html")
        assert all(f'<html lang="de">' in page.decode() for page in members.values())

        for name, member in (("broken.pdf", "broken.pdf.error.html"), ("nested.zip", "nested.zip.error.html"),
                             (mail, folder)):
            said = lines[name].get("error") or lines[name]["notice"]
            # the JSON line as the API gives it: its English message, the page's German beside it
            assert set(said) <= {"code", "message", "messageDe", "errors"} and said["message"].startswith("The ")
            text = _text(members[member])
            assert STRINGS["de"]["errors"][said["code"]] == said["messageDe"] and said["messageDe"] in text, text
            assert said["message"] not in text, text
            # the PDF reader's own words are quoted as such; the rest is German
            own = text.replace(name, "").split(STRINGS["de"]["detail_named"].split("{")[0])[0]
            assert not _words(own) & ENGLISH, (member, _words(own) & ENGLISH)
        mail_page = _text(members[folder])
        assert "Betreff Ihre Rechnung" in mail_page and "Datum 01.03.2026 08:01 (UTC+00:00)" in mail_page
        assert "Keine Rechnung" in mail_page and "Nicht geprüft" in _text(members["broken.pdf.error.html"])
        assert "Gültig" in _text(members["valid.xml.html"])

        lines, members = archives["en"]
        english = _text(members["broken.pdf.error.html"])
        assert '<html lang="en">' in members["broken.pdf.error.html"].decode()
        assert lines["broken.pdf"]["error"]["message"] in english and "Not checked" in english
    finally:
        server.stop()


def test_the_german_job_tab_counts_a_message_without_an_invoice_and_says_it_all_in_german(page, live, tmp_path):
    """The status line added up to 6 of 7 documents: the message without an invoice was in none of its counts."""
    server, token = live
    mixed = tmp_path / "post.zip"
    mixed.write_bytes(_mixed())
    start_job(page, server.url, token, "de", "job-files", mixed)
    status = follow_job(page)
    assert status.endswith(": fertig, 4 von 4 Einträgen: 1 gültig, 0 ungültig, 0 nicht beurteilbar, "
                           "2 nicht geprüft, 1 Nachricht ohne Rechnung."), status
    page.execute_script("document.querySelectorAll('#panel-jobs details').forEach((d) => { d.open = true; })")
    own = page.execute_script("return document.getElementById('panel-jobs').innerText")
    for name in ("post.zip", "broken.pdf", "nested.zip", "valid.xml"):
        own = own.replace(name, "")
    own = re.sub(r"job_[0-9a-f]+", "", own)
    own = "\n".join(line for line in own.splitlines() if not line.startswith("mail.eml/"))  # its subject, sender
    own = own.split(STRINGS["de"]["detail_named"].split("{")[0])  # the PDF reader's words, to the line's end
    own = " ".join([own[0]] + [part.split("\n", 1)[-1] for part in own[1:]])
    assert not _words(own) & ENGLISH, _words(own) & ENGLISH
    assert by_id(page, "job-zip").text == "Prüfberichte herunterladen (ZIP)"
