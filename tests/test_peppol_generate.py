"""Peppol BIS Billing 3.0 generation: POST /v1/invoice/peppol writes UBL with the release's identifiers, refuses a
request that misses a Peppol requirement with 400 on its JSON field, and every document it returns passes the
official Peppol rules run on their own."""
from __future__ import annotations

import json
import re

import pytest
from falcon import testing
from lxml import etree

from conftest import RULES_SOURCE
from pipeline.check import packs
from pipeline.errors import ApiError
from pipeline.flows import generate_xml as generate
from pipeline.invoice import peppol
from pipeline.invoice.request_json import dump_request, load_request
from pipeline.service.app import create_app
from pipeline.settings import REPO_ROOT
from test_peppol_validation import NS, _official_findings

FIXTURE = REPO_ROOT / "fixtures" / "peppol-invoice.json"
RELEASE = json.loads((RULES_SOURCE / "peppol" / "2026.5" / "VERSION.json").read_text("utf-8"))


@pytest.fixture(scope="module")
def client():
    return testing.TestClient(create_app(platform=False))


def _request(**changes) -> dict:
    request = load_request(FIXTURE.read_bytes())
    for path, value in changes.items():
        *parents, leaf = path.split("__")
        node = request["invoice"] if parents[:1] != ["config"] else request
        for p in parents:
            node = node.setdefault(p, {})
        if value is None:
            node.pop(leaf, None)
        else:
            node[leaf] = value
    return request


def _official_errors(xml: bytes) -> set[str]:
    xsd_ok, found = _official_findings(xml)
    return ({"XSD"} if not xsd_ok else set()) | {rule for rule, severity in found if severity == "ERROR"}


def test_the_identifiers_are_the_release_ones_and_the_official_rules_pass_the_document():
    xml, report = generate.generate_xml(FIXTURE.read_bytes(), "peppol")
    root = etree.fromstring(xml)
    assert root.findtext("cbc:CustomizationID", namespaces=NS) == RELEASE["customizationId"] == peppol.BILLING_ID
    assert root.findtext("cbc:ProfileID", namespaces=NS) == RELEASE["profileId"] == peppol.BILLING_PROCESS
    assert report.valid and report.version == "2026.5"
    assert _official_errors(xml) == set()


def test_a_self_billing_invoice_gets_the_self_billing_identifiers_and_rules():
    request = _request(invoiceTypeCode="389", processControl={"specificationIdentifier": peppol.SELF_BILLING_ID})
    xml, report = generate.generate_xml(dump_request(request), "peppol")
    root = etree.fromstring(xml)
    assert root.findtext("cbc:CustomizationID", namespaces=NS) == RELEASE["selfBilling"]["customizationId"]
    assert root.findtext("cbc:ProfileID", namespaces=NS) == RELEASE["selfBilling"]["profileId"]
    assert report.valid and _official_errors(xml) == set()


@pytest.mark.parametrize("changes, field, rule", [
    ({"seller__electronicAddress": None, "seller__electronicAddressSchemeId": None},
     "invoice.seller.electronicAddress", "PEPPOL-EN16931-R020"),
    ({"buyer__electronicAddress": None, "buyer__electronicAddressSchemeId": None},
     "invoice.buyer.electronicAddress", "PEPPOL-EN16931-R010"),
    ({"buyer__electronicAddressSchemeId": "EM", "buyer__electronicAddress": "ap@example.be"},
     "invoice.buyer.electronicAddressSchemeId", "PEPPOL-EN16931-CL008"),
    ({"seller__electronicAddressSchemeId": "0037"}, "invoice.seller.electronicAddressSchemeId",
     "PEPPOL-EN16931-CL008"),
    ({"buyerReference": None}, "invoice.buyerReference", "PEPPOL-EN16931-R003"),
    ({"additionalInvoiceNotes": [{"invoiceNote": "a second note"}]}, "invoice.additionalInvoiceNotes",
     "PEPPOL-EN16931-R002"),
    ({"invoiceTypeCode": "384", "precedingInvoiceReference": {"documentReference": "PE-2026-0041"}},
     "invoice.invoiceTypeCode", "PEPPOL-EN16931-P0112"),
    ({"processControl": {"businessProcessType": "urn:example:process"}},
     "invoice.processControl.businessProcessType", "PEPPOL-EN16931-R007"),
])
def test_a_peppol_requirement_missed_is_a_400_on_its_field_and_the_rules_would_have_refused_it(changes, field,
                                                                                               rule):
    request = _request(**changes)
    with pytest.raises(ApiError) as refused:
        generate.generate_xml(dump_request(request), "peppol")
    err = refused.value
    assert err.http_status == 400 and err.error_code == "INVALID_INPUT"
    [entry] = [e for e in err.errors if e.field == field]
    assert rule in entry.message or rule == "PEPPOL-EN16931-CL008" and "CL008" in entry.message
    assert entry.businessTerm or field.endswith("additionalInvoiceNotes")
    # the same request written as EN 16931 UBL with the Peppol identifiers fails exactly that official rule
    request["config"]["spec"] = "en16931"
    canonical_request, canonical = generate.normalize(dump_request(request), "en16931")
    from pipeline.write.transform import transform
    xml = transform(canonical, "UBL", "peppol", request["invoice"].get("processControl", {}).get(
        "specificationIdentifier"))
    assert rule in _official_errors(xml)


def test_cii_is_refused_on_config_syntax():
    with pytest.raises(ApiError) as refused:
        generate.generate_xml(dump_request(_request(config__syntax="CII")), "peppol")
    [entry] = refused.value.errors
    assert refused.value.http_status == 400 and entry.field == "config.syntax" and entry.rejectedValue == "CII"


def test_a_document_the_rules_refuse_is_a_422_naming_the_rule():
    # a GLN with a wrong check digit: no request check knows GS1's rule, the official PEPPOL-COMMON-R040 does
    request = _request(seller__electronicAddressSchemeId="0088", seller__electronicAddress="4000001123453")
    with pytest.raises(ApiError) as refused:
        generate.generate_xml(dump_request(request), "peppol")
    assert refused.value.http_status == 422 and refused.value.error_code == "VALIDATION_FAILED"
    assert "PEPPOL-COMMON-R040" in {e.code for e in refused.value.errors}


def test_the_eas_list_is_the_release_code_list():
    pack = packs.in_force("peppol", "UBL-Invoice", None)
    sch = (pack.root / "sch" / "PEPPOL-EN16931-UBL.sch").read_text("utf-8")
    [listed] = re.findall(r'<let name="eaid"\s+value="tokenize\(\'([^\']*)\'', sch)
    assert peppol.EAS == frozenset(listed.split())
    processes = re.search(r'<let name="profile"\s+value="(.*?)" />', sch, re.S).group(1)
    assert set(re.findall(r"'(urn:[^']*)'", processes)) == set(peppol.PROCESSES[peppol.BILLING_ID])


def test_the_endpoint_answers_the_document(client):
    r = client.simulate_post("/v1/invoice/peppol", body=FIXTURE.read_bytes(),
                             headers={"Content-Type": "application/json"})
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/xml")
    assert _official_errors(r.content) == set()
    bad = client.simulate_post("/v1/invoice/peppol", body=dump_request(_request(buyerReference=None)),
                               headers={"Content-Type": "application/json"})
    assert bad.status_code == 400 and bad.json["errors"][0]["field"] == "invoice.buyerReference"
    assert bad.json["errors"][0]["businessTerm"] == "BT-10"
