"""Issue 38, the German newcomer's round in headless Chromium (a started `pipeline serve`, a real key, Debian's
chromium through chromedriver, as tests/test_web_browser.py drives it): what was still said in English, or said
about another document, on /?lang=de and /docs?lang=de.

- A conversion's notes ("Die Quelle wurde nach den Regeln des Ziels geprüft") and its "Fertig in 0,6 s." stayed
  under the next document's verdict, an invalid one that was never converted.
- A request that is no JSON was refused with the Python reader's English ("Expecting value: line 1 column 13").
- The API reference headed its operation groups with the tags' names (generation, validation, reading, jobs,
  service, pages) and said "Schemas" and "Type".
- A ZUGFeRD 1.0 invoice (not judged) was offered two conversions that answered 400 NOT_AN_EINVOICE, and the German
  page said the file was "weder CII- noch UBL-XML noch ein PDF" where the service says it is ZUGFeRD 1.0.
"""
from __future__ import annotations

import requests

from conftest import SHARED
from test_web_browser import (INVALID, VALID, browser, by_id, enter_key, live, page, screenshots,  # noqa: F401
                              shown, validate, visible, wait)

BROKEN_JSON = '{"invoice": '
ZUGFERD_1 = SHARED / "realworld/mustang/validator/validV1.xml"


def test_a_new_document_drops_what_the_downloads_said_about_the_last(page, live):
    server, token = live
    page.get(server.url + "/?lang=de")
    enter_key(page, token)
    validate(page, VALID)
    by_id(page, "convert-button").click()
    wait(page, lambda d: visible("convert-notes")(d) and "Fertig" in by_id(d, "download-status").text)
    assert "nach den Regeln des Ziels geprüft" in by_id(page, "convert-notes").text
    validate(page, INVALID)
    assert by_id(page, "verdict-title").text == "Ungültig"
    assert not shown(page, "convert-notes") and not shown(page, "download-error")
    assert by_id(page, "download-status").text == ""
    assert "Regeln des Ziels" not in by_id(page, "panel-validate").text


def _refused_json(driver) -> str:
    by_id(driver, "tab-generate").click()
    driver.execute_script("arguments[0].value = arguments[1]", by_id(driver, "request"), BROKEN_JSON)
    by_id(driver, "generate-button").click()
    wait(driver, lambda d: visible("generate-error")(d) and d.find_element("id", "generate-button").is_enabled())
    return by_id(driver, "generate-error").text


def test_a_request_that_is_no_json_is_said_in_german_with_its_place(page, live):
    """The German row says what the JSON reader missed and where, in German; the English page shows the service's
    message. Both hold the service's place (line 1, column 13) for the same body."""
    server, token = live
    api = requests.post(f"{server.url}/v1/invoice/xrechnung", data=BROKEN_JSON, timeout=60,
                        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"}).json()
    [entry] = api["errors"]
    assert entry["code"] == "MALFORMED_JSON" and "line 1 column 13" in entry["message"], entry
    page.get(server.url + "/?lang=de")
    enter_key(page, token)
    german = _refused_json(page)
    assert "Hier fehlt ein Wert (Zeile 1, Spalte 13)." in german, german
    assert "Expecting" not in german and "line" not in german and "Meldung des Lesers" not in german, german
    page.get(server.url + "/?lang=en")
    english = _refused_json(page)
    assert "malformed JSON: Expecting value: line 1 column 13 (char 12)" in english, english


def test_docs_in_german_head_the_operation_groups_in_german(page, live, screenshots):
    """Each group's heading is in German (its deep link keeps the tag: #/validation), as are "Schemata" and an
    opened operation's header table ("Typ")."""
    from selenium.webdriver.common.by import By

    server, _ = live
    german = requests.get(server.url + "/v1/openapi.json?lang=de", timeout=30).json()
    tags = [tag["name"] for tag in german["tags"]]
    page.get(server.url + "/docs?lang=de")
    wait(page, lambda d: len(d.find_elements(By.CSS_SELECTOR, ".opblock-tag")) == len(tags), 60)
    headings = {h.get_attribute("data-tag"): (h.find_element(By.CSS_SELECTOR, "a span").text,
                                              h.find_element(By.CSS_SELECTOR, "a").get_attribute("href"))
                for h in page.find_elements(By.CSS_SELECTOR, ".opblock-tag")}
    assert set(headings) == set(tags)
    said = {tag: text for tag, (text, _) in headings.items()}
    assert said == {"generation": "Erzeugen", "validation": "Prüfen", "reading": "Lesen", "jobs": "Aufträge",
                    "service": "Dienst", "pages": "Seiten"}, said
    assert all(href.endswith(f"#/{tag}") for tag, (_, href) in headings.items())
    wait(page, lambda d: d.find_elements(By.CSS_SELECTOR, ".models"), 30)
    models = page.find_element(By.CSS_SELECTOR, ".models h4").text
    assert models.startswith("Schemata"), models
    block = page.find_element(By.CSS_SELECTOR, "#operations-validation-validate_xrechnung")
    block.find_element(By.CSS_SELECTOR, ".opblock-summary").click()
    wait(page, lambda d: block.find_elements(By.CSS_SELECTOR, ".headers-wrapper"), 30)
    columns = {c.text for c in block.find_elements(By.CSS_SELECTOR, ".headers-wrapper .header-col")
               if c.text in ("Type", "Typ")}
    assert columns == {"Typ"}, columns
    page.execute_script("window.scrollTo(0, 0)")
    page.save_screenshot(str(screenshots / "docs-de-groups.png"))
    # the English reference keeps the document's own names
    page.get(server.url + "/docs?lang=en")
    wait(page, lambda d: len(d.find_elements(By.CSS_SELECTOR, ".opblock-tag")) == len(tags), 60)
    assert {h.find_element(By.CSS_SELECTOR, "a span").text
            for h in page.find_elements(By.CSS_SELECTOR, ".opblock-tag")} == set(tags)


def test_a_zugferd_1_invoice_is_offered_no_conversion_and_said_in_german(page, live):
    server, token = live
    answer = requests.post(f"{server.url}/v1/invoice/convert", timeout=60,
                           headers={"Authorization": f"Bearer {token}"},
                           files={"file": (ZUGFERD_1.name, ZUGFERD_1.read_bytes()),
                                  "request": (None, '{"to": "UBL"}', "application/json")})
    assert answer.status_code == 400 and answer.json()["errorCode"] == "NOT_AN_EINVOICE", answer.text
    page.get(server.url + "/?lang=de")
    enter_key(page, token)
    validate(page, ZUGFERD_1)
    assert by_id(page, "verdict-title").text == "Nicht beurteilbar"
    wait(page, visible("invoice-error"))
    assert not shown(page, "convert-button") and not shown(page, "convert-button-2")
    note = by_id(page, "invoice-error").text
    assert "nach ZUGFeRD 1.0 lässt sich nicht in das Modell der EN 16931 lesen" in note, note
    assert "weder CII" not in note and "cannot" not in note, note
    validate(page, VALID)  # a readable invoice after it: its conversions are offered again
    assert shown(page, "convert-button") and shown(page, "convert-button-2")
