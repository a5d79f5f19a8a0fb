"""Our own showcase is clean: the reviewed requests in fixtures/ carry valid numbers (no content finding of ours on
our own examples) and draw no warning of the official rules either, as XML or as our own ZUGFeRD PDF validated by
us (X-Validation-Warnings: 0)."""
from __future__ import annotations

import json

import falcon.testing
import pytest

from pipeline.cli.golden import invoice_fixtures
from pipeline.flows.validate_pdf import validate_pdf
from pipeline.flows.validate_xml import validate_xml
from pipeline.service.app import create_app
from test_platform_helpers import REPO

FIXTURES = invoice_fixtures()  # the status message requests (fr-status-*.json) are no invoices
ALL_FIELDS = REPO / "fixtures" / "invoice-all-fields.json"
# Fixtures that show something the official rules warn about, and why.
WARNED = {"xrechnung-extension": "KoSIT's rules warn on the extension's own elements (UBL-CR-470, UBL-CR-646) and "
                                 "on BT-115 counting third-party payments (BR-CO-16)",
          "repeated-terms": "no delivery date or period, which BR-DE-TMP-32 recommends (the fixture shows BT-8)"}


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def _generate(client, path, body: bytes, accept: str):
    return client.simulate_post(path, body=body, headers={"Content-Type": "application/json", "Accept": accept})


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.stem)
def test_no_fixture_gets_a_content_finding(client, fixture):
    spec = (json.loads(fixture.read_text()).get("config", {}).get("spec") or "xrechnung").lower()
    pdf = spec == "zugferd"
    answer = _generate(client, f"/v1/invoice/{spec}", fixture.read_bytes(),
                       "application/pdf" if pdf else "application/xml")
    assert answer.status_code == 200, answer.text
    assert "X-Content-Warnings" not in answer.headers, answer.headers["X-Content-Warnings"]
    report = (validate_pdf(answer.content, content_checks=True) if pdf
              else validate_xml(answer.content, spec, content_checks=True))
    assert not [i.code for i in report.issues if i.code.startswith("CHECK-")]
    assert int(answer.headers["X-Validation-Warnings"]) == report.warnings
    if fixture.stem not in WARNED:
        assert [(i.severity, i.code) for i in report.issues] == []


@pytest.mark.parametrize("fixture", [ALL_FIELDS, REPO / "fixtures" / "fr-facturx-en16931.json"], ids=lambda p: p.stem)
def test_the_showcase_as_zugferd_validated_by_us_has_no_warning(client, fixture):
    """CEN's CII binding allows one name (BT-123) and one attached file (BT-125) among the supporting documents
    (CII-SR-475 / 476, warnings): the all-fields request links its other two by URL. The French Factur-X request
    states its delivery date (BT-72, a mention French invoices carry), so ApplicableHeaderTradeDelivery is not empty
    (PEPPOL-EN16931-R008 of the Factur-X rules, on the PDF path only). On the French rules too."""
    from pipeline.flows.validate_fr_ctc import validate_fr_ctc

    answer = _generate(client, "/v1/invoice/zugferd", fixture.read_bytes(), "application/pdf")
    assert answer.status_code == 200, answer.text
    assert "X-Content-Warnings" not in answer.headers and answer.headers["X-Validation-Warnings"] == "0"
    reports = [validate_pdf(answer.content, content_checks=True)]
    if fixture.stem.startswith("fr-"):
        reports.append(validate_fr_ctc(answer.content, content_checks=True))
    for ours in reports:
        assert ours.valid and [(i.severity, i.code) for i in ours.issues] == []
