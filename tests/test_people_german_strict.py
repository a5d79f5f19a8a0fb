"""A generation refused by config.strict listed its content checks' findings in English on the German page ("BT-84
Payment account identifier '...' fails the IBAN check digits ..."): the service wrote these texts itself and has
them in German (the report's `messageDe`), so each entry of the 400 carries its German text too (`messageDe`, an
extension of ErrorDetail), and the German page shows it."""
from __future__ import annotations

import json

import requests

from test_platform_helpers import REPO
from test_web_browser import WAIT, browser, by_id, enter_key, live, page, screenshots, visible, wait  # noqa: F401

WRONG_IBAN = "DE00370700600321987000"   # the fixture's IBAN with wrong check digits


def _strict_request() -> dict:
    request = json.loads((REPO / "fixtures/invoice-all-fields.json").read_text())
    request["config"]["strict"] = True
    request["invoice"]["paymentInstructions"]["creditTransfer"]["accountIdentifier"] = WRONG_IBAN
    return request


def test_a_strict_refusal_carries_the_findings_german_text(live):  # noqa: F811
    server, token = live
    r = requests.post(f"{server.url}/v1/invoice/xrechnung", json=_strict_request(),
                      headers={"Authorization": f"Bearer {token}"}, timeout=WAIT)
    assert (r.status_code, r.json()["errorCode"]) == (400, "INVALID_INPUT")
    [entry] = r.json()["errors"]
    assert entry["code"] == "CHECK-IBAN" and "fails the IBAN check digits" in entry["message"]
    assert WRONG_IBAN in entry["messageDe"] and "IBAN" in entry["messageDe"] and "fails" not in entry["messageDe"]


def test_the_german_page_shows_it(page, live):  # noqa: F811
    server, token = live
    page.get(f"{server.url}/?lang=de")
    enter_key(page, token)
    by_id(page, "tab-generate").click()
    area = by_id(page, "request")
    page.execute_script("arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('input'))", area,
                        json.dumps(_strict_request(), indent=2))
    by_id(page, "generate-button").click()
    error = wait(page, visible("generate-error"), WAIT).text
    assert "CHECK-IBAN" in error and WRONG_IBAN in error, error
    assert "fails the IBAN check digits" not in error and "payment would bounce" not in error, error


def test_renders_verdict_names_xsd_elements_by_their_prefix(live, tmp_path):  # noqa: F811
    """POST /render with validate: the verdict box listed an XSD finding as "Element '{urn:un:unece:uncefact:data:
    standard:ReusableAggregateBusinessInformationEntity:100}URIID'" over four lines; it names `ram:URIID` now."""
    from conftest import CORPUS
    from test_render_page import pdftotext

    server, token = live
    two_uriid = CORPUS / "mustangproject/library/Extended_fremdwaehrung.xml"
    r = requests.post(f"{server.url}/v1/invoice/render", headers={"Authorization": f"Bearer {token}"},
                      files={"file": (two_uriid.name, two_uriid.read_bytes()),
                             "request": (None, json.dumps({"validate": True, "metadataLanguage": "de"}),
                                         "application/json")}, timeout=WAIT)
    assert r.status_code == 200, r.text
    text = " ".join(pdftotext(r.content, tmp_path, "-raw").split())
    assert "Element 'ram:URIID': Dieses Element ist hier nicht erwartet. Erwartet wird ( ram:CompleteNumber )." in text
    assert "{urn:" not in text
