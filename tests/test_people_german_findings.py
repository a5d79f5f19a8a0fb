"""The German page drew the findings of a job's documents from the JSON results, whose messages are English: our own
findings (a file that is no XML, a content check) read in English on a page otherwise German, though this service
wrote their German itself (the report for people in German has it). The JSON now carries that German beside the
English message (`messageDe`, only where this service wrote the finding), and the page shows it.

In headless chromium against a started `pipeline serve`: a ZIP job of a real valid invoice and a broken XML."""
from __future__ import annotations

import zipfile

import pytest

from conftest import CORPUS
from pipeline.flows.validate_xml import validate_xml
from test_web_browser import WAIT, by_id, browser, live, page, screenshots, wait  # noqa: F401
from test_web_browser import follow_job, start_job

VALID = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml"
BROKEN = b"<?xml version='1.0'?><Invoice><ID>1</Invoice>"


def test_the_json_carries_our_german_beside_the_english_message_and_not_for_official_rules():
    broken = validate_xml(BROKEN, "xrechnung").to_dict()
    [issue] = broken["issues"]
    assert issue["code"] == "XML-MALFORMED" and issue["message"].startswith("The file is not well-formed XML")
    assert "wohlgeformt" in issue["messageDe"], issue
    # a content check run strictly (an error): its German names the business term in German
    strict = validate_xml(VALID.read_bytes(), "xrechnung", content_checks=True, strict=True).to_dict()
    vat = next(i for i in strict["issues"] if i["code"] == "CHECK-VAT-ID")
    assert "Umsatzsteuer-ID (Verkäufer)" in vat["messageDe"] and "fails the check digits" in vat["message"]
    # the official rules' findings: as published, no German of ours
    official = [i for i in strict["issues"] if i["code"].startswith("BR-")]
    assert official and all("messageDe" not in i for i in official)


def test_the_german_page_lists_a_jobs_own_findings_in_german(page, live, tmp_path, screenshots):  # noqa: F811
    server, token = live
    archive = tmp_path / "zwei.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.write(VALID, VALID.name)
        z.writestr("kaputt.xml", BROKEN)
    start_job(page, server.url, token, "de", "job-files", archive)
    follow_job(page)
    wait(page, lambda d: d.find_elements("css selector", "#job-documents li.invoice"), WAIT)
    listed = by_id(page, "job-documents").text
    page.save_screenshot(str(screenshots / "job-german-findings.png"))
    assert "kaputt.xml" in listed and "XML-MALFORMED" in listed, listed
    assert "wohlgeformt" in listed and "not well-formed" not in listed, listed
