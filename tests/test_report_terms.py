"""`businessTerms` on every finding of a validation report (an extension of the service specification's Issue): the
ids of the business terms the finding is about. For an official rule they are the ids its published text names, in
that order, each once; checked here against the rule texts of the official Schematron sources (`../shared/rules`),
read by this test on its own, on real documents of `../shared/corpus` that fail those rules, over HTTP and the CLI."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest
from lxml import etree

from conftest import CORPUS, RULES_SOURCE, SHARED
from test_parse import upload

REPO = Path(__file__).resolve().parents[1]
KOSIT = CORPUS / "kosit-validator-configuration-tests"
PREPAID = KOSIT / "instances/ubl-br-dex-09-prepaidpayment.xml"   # BR-CO-16: amount due != total - paid + rounding
XR_UBL = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml"
CDV_200 = SHARED / "corpus-cdar/UC1_F202500003_01-CDV-200_Deposee.xml"
SCH = "http://purl.oclc.org/dsdl/schematron"
# what a business-term id looks like (EN 16931, Factur-X BT-X, XRechnung BT-DEX, France EXT-FR-FE, CDV MDT / MDG)
ID = re.compile(r"\b(?:BT|BG)-(?:X-|DEX-)?[0-9]+(?:-[0-9]+)?\b|\bEXT-FR-FE-(?:BG-)?[0-9]+\b|\bMD[TG]-[0-9]+(?:-[0-9]+)?\b")


@lru_cache(maxsize=1)
def _rule_texts() -> dict[str, list[str]]:
    """Rule id -> its published texts (one per syntax / stylesheet that has it), the document's values left out."""
    texts: dict[str, list[str]] = {}
    for path in sorted(RULES_SOURCE.rglob("*.sch")):
        if "preprocessed" in path.parts:
            continue
        for check in etree.parse(str(path)).iter(f"{{{SCH}}}assert", f"{{{SCH}}}report"):
            if check.get("id"):
                parts = [check.text or ""] + [(child.tail or "") if child.tag == f"{{{SCH}}}value-of"
                                              else "".join(child.itertext()) + (child.tail or "") for child in check]
                texts.setdefault(check.get("id"), []).append(" ".join("".join(parts).split()))
    return texts


def _named(text: str) -> list[str]:
    return list(dict.fromkeys(ID.findall(text)))


@pytest.fixture(scope="module")
def client():
    import falcon.testing

    from pipeline.service.app import create_app
    return falcon.testing.TestClient(create_app(platform=False))


def _cli_json(path: Path, spec: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "pipeline", "validate", str(path), "--spec", spec, "--json"],
                          capture_output=True, timeout=180, cwd=REPO)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def _terms(report: dict) -> list[tuple[str, list[str] | None]]:
    return [(i["code"], i.get("businessTerms")) for i in report["issues"]]


def test_br_co_16_names_the_terms_of_its_official_text_over_http_and_the_cli(client):
    texts = _rule_texts()["BR-CO-16"]
    assert {tuple(_named(t)) for t in texts} == {("BT-115", "BT-112", "BT-113", "BT-114")}
    report = upload(client, PREPAID.read_bytes(), {}, path="/v1/invoice/en16931/validate").json
    [finding] = [i for i in report["issues"] if i["code"] == "BR-CO-16"]
    assert finding["businessTerms"] == ["BT-115", "BT-112", "BT-113", "BT-114"]
    assert _terms(_cli_json(PREPAID, "en16931")) == _terms(report)


@pytest.mark.parametrize("path, endpoint", [
    (KOSIT / "instances/ubl008.xml", "en16931"),     # BR-S-01, BR-S-08 (13 terms), BR-CO-10, BR-22..24
    (KOSIT / "instances/ubl002.xml", "en16931"),     # BR-06
    (KOSIT / "instances/ubl004.xml", "xrechnung"),   # BR-DE-3 (BT-37), BR-DE-TMP-32 (BT-72 "Actual delivery date", ...)
    (CORPUS / "mustangproject/library/ubl/BT-128.ubl.xml", "en16931"),   # BR-CO-15, BR-CO-10
    (CORPUS / "mustangproject/library/ubl-creditnote.xml", "en16931"),   # BR-01, BR-04, BR-CO-15, BR-S-01, BR-37
    (KOSIT / "cen-unit-test/ubl-br-o-02-and-br-o-04-with-bt-63.xml", "en16931"),   # BR-O-02, BR-O-04
], ids=lambda v: v.name if isinstance(v, Path) else v)
def test_each_official_finding_names_the_terms_its_rule_text_names_in_order(client, path, endpoint):
    report = upload(client, path.read_bytes(), {}, path=f"/v1/invoice/{endpoint}/validate").json
    texts = _rule_texts()
    checked = 0
    for issue in report["issues"]:
        terms = issue.get("businessTerms")
        assert terms is None or (terms and len(set(terms)) == len(terms) and all(ID.fullmatch(t) for t in terms))
        named = [_named(t) for t in texts.get(issue["code"], [])]
        if any(named):
            assert terms in named, (issue["code"], terms, named)
            checked += 1
    assert checked >= 1 and report["verdict"] == "invalid"


def test_a_code_list_rule_names_the_term_at_the_place_it_fires():
    """BR-CL-10 / BR-CL-21 name no term in their text: the finding names the identifier scheme it is on (KoSIT's
    extension sample, judged by the plain CEN rules)."""
    from pipeline.flows.validate_xml import validate_xml

    assert not any(_named(t) for code in ("BR-CL-10", "BR-CL-21") for t in _rule_texts()[code])
    path = CORPUS / "xrechnung-testsuite/business-cases/extension/04.05a-INVOICE_uncefact.xml"
    issues = [i.to_dict() for i in validate_xml(path.read_bytes(), "en16931").issues]
    party = {"SellerTradeParty": ["BT-29-1"], "BuyerTradeParty": ["BT-46-1"], "PayeeTradeParty": ["BT-60-1"]}
    found = {(i["code"], next((p for p in party if f"{p}[" in i["location"]["xpath"]), None)): i["businessTerms"]
             for i in issues if i["code"].startswith("BR-CL-")}
    assert found == {("BR-CL-10", p): terms for p, terms in party.items()} | {("BR-CL-21", None): ["BT-157-1"]}


def test_the_specification_identifier_is_the_term_of_a_document_no_scenario_takes(client):
    """ubl006 states no CustomizationID: the CEN rules say so (BR-01, BT-24); XRechnung's configuration has no
    scenario for it (our XRECHNUNG-NO-SCENARIO, about BT-24 too)."""
    data = (KOSIT / "instances/ubl006.xml").read_bytes()
    cen = upload(client, data, {}, path="/v1/invoice/en16931/validate").json
    assert ("BR-01", ["BT-24"]) in _terms(cen) and {tuple(_named(t)) for t in _rule_texts()["BR-01"]} == {("BT-24",)}
    xrechnung = upload(client, data, {}, path="/v1/invoice/xrechnung/validate").json
    assert _terms(xrechnung) == [("XRECHNUNG-NO-SCENARIO", ["BT-24"])]


def test_content_checks_name_the_term_they_judge(client):
    """The sample's placeholder VAT ids fail their check digits (CHECK-VAT-ID): the seller's BT-31, the buyer's
    BT-48; a due date before the issue date names both dates."""
    report = upload(client, XR_UBL.read_bytes(), {}, path="/v1/invoice/xrechnung/validate").json
    assert ("CHECK-VAT-ID", ["BT-31"]) in _terms(report)
    issued = b"<cbc:IssueDate>2016-04-04</cbc:IssueDate>"
    early = XR_UBL.read_bytes().replace(issued, issued + b"<cbc:DueDate>2016-03-04</cbc:DueDate>", 1)
    dated = upload(client, early, {}, path="/v1/invoice/xrechnung/validate").json
    assert ("CHECK-DUE-DATE", ["BT-9", "BT-2"]) in _terms(dated), _terms(dated)


def test_values_of_the_document_are_never_taken_for_terms(client):
    """An XSD finding quotes the value it refuses, a BR-FR-CDV rule quotes the value it judges: ids inside them are
    the document's, not the rule's. The date's finding names its place's term (BT-2), the status message's rule the
    MDT term of its id and its text (MDT-3)."""
    data = re.sub(rb"<cbc:IssueDate>[^<]*</cbc:IssueDate>", b"<cbc:IssueDate>BT-99 (BT-98)</cbc:IssueDate>",
                  XR_UBL.read_bytes(), count=1)
    report = upload(client, data, {}, path="/v1/invoice/xrechnung/validate").json
    [xsd] = [i for i in report["issues"] if i["code"].startswith("XSD-")]
    assert "BT-99 (BT-98)" in xsd["message"] and xsd["businessTerms"] == ["BT-2"]

    status = CDV_200.read_bytes().replace(b"<ram:ID>urn.cpro.gouv.fr:1p0:CDV:invoice</ram:ID>",
                                          b"<ram:ID>urn.cpro.gouv.fr:1p0:CDV:MDT-88 (MDT-99)</ram:ID>", 1)
    answer = upload(client, status, {}, path="/v1/invoice/fr-ctc/status/validate").json
    findings = [i for i in answer["issues"] if i["code"] == "BR-FR-CDV-02_MDT-3"]
    assert findings and all("MDT-88 (MDT-99)" in i["message"] for i in findings)
    assert {tuple(_named(t)) for t in _rule_texts()["BR-FR-CDV-02_MDT-3"]} == {("MDT-3",)}
    assert all(i["businessTerms"] == ["MDT-3"] for i in findings)


def test_a_status_message_names_the_terms_of_its_rules_on_the_cli_too(tmp_path):
    """A CDV 200 without its message id (MDT-4) fails BR-FR-CDV-03_MDT-4; `pipeline validate --spec fr-cdar --json`
    names the term of the rule's id and text, as the status endpoint does."""
    source = CDV_200.read_bytes()
    data = re.sub(rb"(<rsm:ExchangedDocument>\s*)<ram:ID>[^<]*</ram:ID>", rb"\1", source, count=1)
    assert data != source
    path = tmp_path / "cdv-200-without-id.xml"
    path.write_bytes(data)
    findings = [i for i in _cli_json(path, "fr-cdar")["issues"] if i["code"] == "BR-FR-CDV-03_MDT-4"]
    assert findings and {tuple(_named(t)) for t in _rule_texts()["BR-FR-CDV-03_MDT-4"]} == {("MDT-4",)}
    assert all(i["businessTerms"] == ["MDT-4"] for i in findings)


def test_pdf_container_findings_name_no_term_and_the_embedded_invoice_its_own(client):
    """corruptedV2PDF: the PDF and PDF/A findings are about no business term (no `businessTerms`); the Factur-X
    profile rule on the embedded invoice's guideline id names BT-24, the place it fires."""
    data = (CORPUS / "mustangproject/validator/corruptedV2PDF.pdf").read_bytes()
    report = upload(client, data, {}, name="x.pdf", path="/v1/invoice/zugferd/validate").json
    container = [i for i in report["issues"] if i["code"].startswith(("PDF", "XMP_", "FX_"))]
    assert container and all("businessTerms" not in i for i in container)
    assert ("FX-SCH-A-000556", ["BT-24"]) in _terms(report)


def test_the_openapi_document_describes_the_field_in_both_languages(client):
    issue = client.simulate_get("/v1/openapi.json").json["components"]["schemas"]["Issue"]["properties"]
    assert issue["businessTerms"]["description"].startswith("Extension. The business terms the finding is about")
    german = client.simulate_get("/v1/openapi.json", params={"lang": "de"}).json["components"]["schemas"]["Issue"]
    assert german["properties"]["businessTerms"]["description"].startswith("Erweiterung. Die Geschäftsbegriffe")
