"""The German page's answer to a conversion that cannot carry a value (issue 38, item 5), as painted in headless
chromium against a started `pipeline serve`: a UBL credit note citing two preceding invoices, converted to CII,
says in German why CII has no place for the second one (the entry's own reason, not the code's general sentence),
at the place and value the English names."""
from __future__ import annotations

from test_german_losses import CREDIT_NOTE
from test_people_german_errors import ENGLISH, GERMAN
from test_web_browser import (WAIT, browser, by_id, enter_key, live, page, screenshots, validate,  # noqa: F401
                              visible, wait)


def test_the_german_page_says_why_cii_has_no_place_for_a_second_preceding_invoice(page, live):  # noqa: F811
    server, token = live
    page.get(f"{server.url}/?lang=de")
    enter_key(page, token)
    validate(page, CREDIT_NOTE)
    button = next(b for b in (by_id(page, "convert-button"), by_id(page, "convert-button-2")) if "CII" in b.text)
    button.click()
    error = " ".join(wait(page, visible("download-error"), WAIT).text.split())
    assert error.startswith("422 CONVERSION_LOSS: " + GERMAN["CONVERSION_LOSS"]), error
    assert ("/CreditNote/cac:BillingReference[2]/cac:InvoiceDocumentReference/cbc:ID (Zeile 59) = 'Preceding invoice "
            "no.2': CII (D16B) trägt nur einen Verweis auf eine vorausgegangene Rechnung (BG-3); das umgewandelte "
            "Dokument hätte sie daher nicht (NOT_CARRIED)") in error, error
    assert GERMAN["NOT_CARRIED"] not in error, error
    # no English but the source's own value ("Preceding invoice no.2") and the lossy button's target name
    assert not ENGLISH.search(error.replace("'Preceding invoice no.2'", "")), error
