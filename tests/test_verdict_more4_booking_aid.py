"""MINIMUM and BASIC WL pass their profile's rules but are no invoice: FeRD's own samples call BASIC WL a
"Buchungshilfe" (booking aid). A `valid` verdict on them said only "No error"; a receiver booking one as an
e-invoice under German VAT law needs to be told, in the report's findings, in both languages."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import falcon.testing

from pipeline.check.profiles import BOOKING_AID
from pipeline.flows.validate_pdf import validate_pdf
from pipeline.service.app import create_app
from tests.test_zugferd_samples import invoice_request

SHARED = Path(__file__).resolve().parents[2] / "shared"
CORRECT = SHARED / "realworld/corpus/ZUGFeRDv2/correct"


def _generated(profile: str) -> bytes:
    """A ZUGFeRD PDF of `profile` from the service (the corpus's MINIMUM samples break their own profile's rules)."""
    client = falcon.testing.TestClient(create_app(platform=False))
    resp = client.simulate_post("/v1/invoice/zugferd", body=json.dumps(invoice_request(3, profile, "de")),
                                headers={"Content-Type": "application/json"})
    assert resp.status_code == 200, resp.text
    assert int(resp.headers["x-validation-warnings"]) >= 1  # the sender is told before it goes out
    return resp.content


@pytest.mark.parametrize("source", ["symtrax/Beispiele/BASIC WL/zugferd_2p1_BASIC-WL_Buchungshilfe.pdf",
                                    "MINIMUM"])
def test_a_booking_aid_is_valid_on_its_rules_and_named_no_invoice(source):
    data = _generated(source) if source == "MINIMUM" else (CORRECT / source).read_bytes()
    report = validate_pdf(data)
    aid = [i for i in report.issues if i.code == BOOKING_AID]
    assert report.verdict == "valid", [(i.code, i.message) for i in report.issues if i.severity == "ERROR"]
    assert len(aid) == 1 and aid[0].severity == "WARNING"
    assert "not invoices under German VAT law" in aid[0].message
    assert "keine Rechnungen nach deutschem Umsatzsteuerrecht" in aid[0].message_de
    assert aid[0].location is not None and aid[0].location.line  # the BT-24 that names the profile


@pytest.mark.parametrize("path", ["symtrax/Beispiele/BASIC/zugferd_2p1_BASIC_Rechnungskorrektur.pdf",
                                  "symtrax/Beispiele/EN16931/zugferd_2p1_EN16931_Einfach_DueDate.pdf",
                                  "symtrax/Beispiele/EXTENDED/zugferd_2p1_EXTENDED_Kostenrechnung.pdf"])
def test_the_invoice_profiles_get_no_such_warning(path):
    report = validate_pdf((CORRECT / path).read_bytes())
    assert not [i for i in report.issues if i.code == BOOKING_AID]
