"""What README's ZUGFeRD section says of a request with no delivery data: CII requires ApplicableHeaderTradeDelivery,
XRechnung's PEPPOL-EN16931-R008 leaves that element out of "no empty elements", Factur-X 1.09's copy does not: the
generated PDF's one warning is that rule on that element, from the Factur-X profile's own stylesheet, which generation
runs on what it writes; a delivery date (BT-72) fills the element and the warning goes."""
from __future__ import annotations

import json

from conftest import REPO
from pipeline.flows.generate_zugferd import generate_zugferd
from pipeline.flows.validate_pdf import validate_pdf


def _generated(invoice_changes: dict) -> tuple[bytes, list]:
    request = json.loads((REPO / "fixtures" / "credit-note.json").read_text())
    request["invoice"].update(invoice_changes)
    warnings: list = []
    pdf = generate_zugferd(json.dumps(request).encode(), rule_warnings=warnings)
    return pdf, warnings


def test_no_delivery_data_is_the_factur_x_rules_warning_on_the_empty_delivery_element():
    pdf, warnings = _generated({})
    assert [w.code for w in warnings] == ["PEPPOL-EN16931-R008"]
    assert warnings[0].location.xpath.rsplit("/", 1)[-1].startswith("*:ApplicableHeaderTradeDelivery[")
    # a received EN16931-profile invoice is judged by its guideline id on CEN's rules alone, which have no R008
    report = validate_pdf(pdf)
    assert report.valid and report.issues == [] and [r.pack for r in report.rules] == ["pdf", "en16931"]


def test_a_delivery_date_fills_the_element_and_no_warning_is_left():
    pdf, warnings = _generated({"deliveryInformation": {"actualDeliveryDate": "2026-10-12"}})
    assert warnings == []
    report = validate_pdf(pdf)
    assert report.valid and report.issues == []
