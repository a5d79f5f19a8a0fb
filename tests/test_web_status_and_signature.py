"""The page in a real browser (headless Debian chromium, as tests/test_web_browser.py drives it), on what is not an
invoice's own: a lifecycle status message (CDV) on the validate tab with "detect from the file" went to an invoice
endpoint and came back XML-UNKNOWN-ROOT with a sentence calling it an invoice; it goes to the status validation
endpoint and its page is drawn in the page's language. A signed file's documents carry what the signature says
(`signature`: intact, broken or unchecked, and a sentence in English and German); the page shows it under each
document in its language, as the service's own job results state it."""
from __future__ import annotations

import json
import time

import pytest
import requests

from test_p7m_signature import CII, changed, sign  # noqa: F401
from test_web_browser import (browser, by_id, enter_key, follow_job, frame_text, ink, live, page,  # noqa: F401
                              screenshots, shown, start_job, validate, wait)

RECEIVED = "/work/shared/corpus-cdar/UC1_F202500003_02-CDV-202_Recue.xml"
PAINTED = {"en": ("Invoice status", "202 – Received", "Status code"),
           "de": ("Rechnungsstatus", "202 – Empfangen, frz. „Reçue“", "Statuscode")}
VERDICT = {"en": "Valid", "de": "Gültig"}
HEADING = {"en": "The status message", "de": "Die Statusmeldung"}
SIGNATURE = {"en": ("Signature intact", "Signature broken"), "de": ("Signatur intakt", "Signatur gebrochen")}


@pytest.mark.parametrize("lang", ["en", "de"])
def test_detect_sends_a_status_message_to_the_status_endpoint(page, live, screenshots, lang):
    server, token = live
    page.get(f"{server.url}/?lang={lang}")
    enter_key(page, token)
    assert by_id(page, "spec").get_attribute("value") == "auto"
    validate(page, RECEIVED)
    assert not by_id(page, "validate-error").is_displayed()
    assert "valid" in by_id(page, "verdict").get_attribute("class").split()
    assert by_id(page, "verdict-title").text == VERDICT[lang]
    report = frame_text(page, "report-frame")
    assert "XML-UNKNOWN-ROOT" not in report and "CDAR" in report
    assert by_id(page, "result").get_attribute("data-spec") == "fr-ctc/status"
    assert by_id(page, "invoice-heading").text.lower() == HEADING[lang].lower()   # not "The invoice"
    text = frame_text(page, "invoice-frame")
    for words in PAINTED[lang]:
        assert words in text, words
    if lang == "de":
        assert "Received" not in text and "Invoice" not in text
    # what works on an invoice only is not offered: no conversion, no "invoice as JSON"
    assert not any(shown(page, b) for b in ("convert-button", "convert-button-2"))
    assert not page.find_element("css selector", '[data-download="parsed"]').is_displayed()
    time.sleep(0.5)  # a paint, not a DOM change
    frame = by_id(page, "invoice-frame")
    frame.screenshot(str(screenshots / f"status-detected-{lang}.png"))
    assert ink(page, frame) > 500, "the status page's frame is blank"


def _items(driver, list_id: str) -> list[str]:
    return [li.text for li in driver.find_elements("css selector", f"#{list_id} > li")]


@pytest.mark.parametrize("lang", ["en", "de"])
def test_a_signed_file_s_signature_is_shown_under_its_document(page, live, tmp_path, screenshots, sign, lang):
    server, token = live
    (tmp_path / "intact.p7m").write_bytes(sign(CII))
    (tmp_path / "broken.p7m").write_bytes(changed(sign(CII)))
    start_job(page, server.url, token, lang, "job-files",
              "\n".join(str(tmp_path / name) for name in ("intact.p7m", "broken.p7m")))
    job_id = follow_job(page).split()[1].rstrip(":")
    if shown(page, "job-valid"):
        page.find_element("css selector", "#job-valid > summary").click()
        wait(page, lambda d: _items(d, "job-valid-names"))
    items = _items(page, "job-documents") + _items(page, "job-valid-names")
    lines = requests.get(f"{server.url}/v1/jobs/{job_id}/results", headers={"Authorization": f"Bearer {token}"},
                         timeout=60).text.splitlines()
    entries = [json.loads(line) for line in lines if line.strip()]
    assert len(entries) == 2
    for entry in entries:
        [item] = [text for text in items if entry["name"] in text]
        signature = entry["signature"]
        said = SIGNATURE[lang][0 if entry["name"].startswith("intact") else 1]
        assert signature["status"] == ("intact" if entry["name"].startswith("intact") else "broken")
        assert said in item and " ".join(signature["meaning"][lang].split()) in " ".join(item.split()), item
    assert "fatture@seller.example" in " ".join(items)
    page.save_screenshot(str(screenshots / f"signature-{lang}.png"))
