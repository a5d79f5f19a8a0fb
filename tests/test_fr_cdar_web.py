"""The page's status messages tab in a real browser (headless Debian chromium, as tests/test_web_browser.py drives
it): several messages shown as their invoice's timeline, painted in the frame (pixels, not only the DOM), and a
message generated from an example, whose 400 names the field and its MDT term."""
from __future__ import annotations

import json
import time

import requests

from cdar_cases import examples
from test_platform_helpers import REPO
from test_web_browser import (WAIT, browser, by_id, enter_key, frame_text, ink, live, page,  # noqa: F401
                              screenshots, visible, wait)

UC1 = [p for p in examples() if p.name.startswith("UC1_")]


def test_several_messages_are_shown_as_the_invoice_s_timeline(page, live, screenshots):
    from selenium.webdriver.support.ui import Select

    _, token = live
    enter_key(page, token)
    by_id(page, "tab-status").click()
    assert by_id(page, "panel-status").is_displayed() and not by_id(page, "panel-validate").is_displayed()
    by_id(page, "status-files").send_keys("\n".join(str(p) for p in reversed(UC1)))
    Select(by_id(page, "status-language")).select_by_value("fr")
    by_id(page, "status-button").click()
    wait(page, lambda d: by_id(d, "status-frame").get_attribute("srcdoc") or visible("status-error")(d))
    assert not by_id(page, "status-error").is_displayed()
    text = frame_text(page, "status-frame")
    assert "Cycle de vie de la facture" in text and "F202500003" in text
    order = [text.index(f"{code} {name}") for code, name in (("200", "Déposée"), ("202", "Reçue"),
                                                               ("211", "Paiement transmis"), ("212", "Encaissée"))]
    assert order == sorted(order)
    time.sleep(0.5)  # a paint, not a DOM change
    frame = by_id(page, "status-frame")
    frame.screenshot(str(screenshots / "status-timeline.png"))
    assert ink(page, frame) > 500, "the status frame is blank"


def test_a_message_generated_from_an_example_and_a_400_naming_the_mdt_term(page, live):
    from selenium.webdriver.support.ui import Select

    server, token = live
    enter_key(page, token)
    by_id(page, "tab-status").click()
    options = [o.get_attribute("value") for o in Select(by_id(page, "status-example")).options]
    assert "fr-status-212.json" in options and not [o for o in options if not o.startswith("fr-status-")]
    invoices = [o.get_attribute("value") for o in Select(by_id(page, "example")).options]
    assert not [o for o in invoices if o.startswith("fr-status-")]   # the invoice tab offers invoices only
    Select(by_id(page, "status-example")).select_by_value("fr-status-212.json")
    by_id(page, "status-load-example").click()
    fixture = (REPO / "fixtures" / "fr-status-212.json").read_text()
    wait(page, lambda d: by_id(d, "status-request").get_attribute("value").strip() == fixture.strip(), 30)
    by_id(page, "status-generate-button").click()
    wait(page, lambda d: visible("status-generated")(d) or visible("status-generate-error")(d))
    assert "CrossDomainAcknowledgementAndResponse" in by_id(page, "status-generated-preview").text
    request = json.loads(fixture)
    del request["invoice"]["sellerSiren"]
    body = json.dumps(request, indent=2)
    page.execute_script("arguments[0].value = arguments[1]", by_id(page, "status-request"), body)
    by_id(page, "status-generate-button").click()
    wait(page, visible("status-generate-error"))
    api = requests.post(f"{server.url}/v1/invoice/fr-ctc/status", data=body, timeout=WAIT,
                        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"}).json()
    rows = by_id(page, "status-generate-error").find_elements("css selector", "table.findings tbody tr")
    cells = [[td.text for td in row.find_elements("css selector", "td")][:2] for row in rows]
    assert cells == [[e["field"], e["businessTerm"]] for e in api["errors"]] == [["invoice.sellerSiren", "MDT-129"]]
