"""Generating France's lifecycle status messages (CDV) from JSON: POST /v1/invoice/fr-ctc/status.

The fixtures `fixtures/fr-status-*.json` (200, 204, 207 and 210 with their reasons, 211, 212 with the amounts received
per VAT rate) generate messages the official chain alone finds valid; reading a message and generating it again
gives the same message (our fixtures byte for byte, FNFE's examples element for element); every required field
removed from a fixture is a 400 naming that field and its MDT term; contradicting data is a 400 before any
generation; what the rules still refuse is a 422 naming field and term."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import falcon.testing
import pytest
from lxml import etree

from cdar_cases import examples, official_chain
from conftest import REPO
from pipeline.errors import ApiError
from pipeline.flows import status_generate, status_read
from pipeline.invoice import cdar, cdar_terms
from pipeline.invoice.request_json import dump_request, load_request
from pipeline.service.app import create_app

FIXTURES = sorted((REPO / "fixtures").glob("fr-status-*.json"))
STATUS = "/v1/invoice/fr-ctc/status"


def _fixture(status: str) -> dict:
    return load_request((REPO / "fixtures" / f"fr-status-{status}.json").read_bytes())


def _generate(request: dict) -> bytes:
    return status_generate.generate_status(dump_request(request))[0]


def _refusal(request: dict) -> ApiError:
    with pytest.raises(ApiError) as caught:
        _generate(request)
    return caught.value


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def test_the_fixtures_cover_the_statuses_the_issue_names():
    assert {p.stem.rsplit("-", 1)[1] for p in FIXTURES} >= {"200", "204", "207", "210", "211", "212"}
    assert all(_fixture(code)["status"]["details"][0]["reasonCode"] for code in ("207", "210"))
    amounts = _fixture("212")["status"]["details"][0]["characteristics"]
    assert len(amounts) >= 2 and all(c["typeCode"] == "MEN" and c["amount"] and c["percent"] for c in amounts)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_each_fixture_generates_a_message_the_official_chain_alone_finds_valid(path):
    xml, report = status_generate.generate_status(path.read_bytes())
    valid, rules, xsd_valid, _ = official_chain(xml)
    assert valid and xsd_valid and not rules, rules
    assert report.valid and not report.issues and report.syntax == "CDAR"
    request = load_request(path.read_bytes())
    root = etree.fromstring(xml)
    ns = {"ram": "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100"}
    assert root.xpath("//ram:ReferenceReferencedDocument/ram:ProcessConditionCode/text()", namespaces=ns) == \
        [request["status"]["code"]]
    assert root.xpath("//ram:ReferenceReferencedDocument/ram:IssuerAssignedID/text()", namespaces=ns) == \
        [request["invoice"]["number"]]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_parse_then_generate_gives_the_same_message(path):
    xml = status_generate.generate_status(path.read_bytes())[0]
    read = status_read.parse_status(xml)
    assert read["complete"] and not read["missing"] and not read["unmapped"]
    again = _generate({k: read[k] for k in ("message", "status", "invoice")})
    assert again == xml
    sent = load_request(path.read_bytes())
    for part in ("message", "invoice"):   # what was sent is read back as sent (the status gains its derived values)
        assert read[part] == sent[part] | {"guidelineId": read[part].get("guidelineId")} if part == "message" else \
            read[part] == sent[part]


def _same(a: bytes, b: bytes) -> bool:
    """The same elements, attributes and values (comments, indentation and a BOM aside)."""
    parser = etree.XMLParser(remove_blank_text=True, remove_comments=True)

    def canonical(data):
        root = etree.fromstring(data.lstrip(b"\xef\xbb\xbf"), parser)
        for element in root.iter():
            element.text = (element.text or "").strip() or None
        return etree.tostring(root, method="c14n2", strip_text=True)

    return canonical(a) == canonical(b)


@pytest.mark.parametrize("path", examples(), ids=lambda p: p.name)
def test_each_official_example_read_and_generated_again_is_the_same_message(path):
    read = status_read.parse_status(path.read_bytes())
    assert read["complete"] and not read["unmapped"], (read["missing"], read.get("problems"), read["unmapped"])
    assert _same(_generate({k: read[k] for k in ("message", "status", "invoice")}), path.read_bytes())


# ---------------------------------------------------------------- required fields

def _leaves(node, path=""):
    """Every field path of a request (objects and values; list items by index)."""
    if isinstance(node, dict):
        for key, value in node.items():
            child = f"{path}.{key}" if path else key
            yield child
            yield from _leaves(value, child)
    elif isinstance(node, list):
        for n, item in enumerate(node):
            yield from _leaves(item, f"{path}[{n}]")


def _without(request: dict, path: str) -> dict:
    out = copy.deepcopy(request)
    node, steps = out, path.replace("[", ".[").split(".")
    for step in steps[:-1]:
        node = node[int(step[1:-1])] if step.startswith("[") else node[step]
    del node[steps[-1]]
    return out


def _required(request: dict) -> set[str]:
    """The fields FNFE's rules (and the message's structure) require of this request's status."""
    message, status = request["message"], request["status"]
    code = status["code"]
    required = {"message", "message.id", "message.issueDateTime", "message.sender", "message.sender.role",
                "message.issuer", "message.issuer.role", "message.recipients", "status", "status.code",
                "status.dateTime", "invoice", "invoice.number", "invoice.typeCode", "invoice.issueDate",
                "invoice.sellerSiren"}
    required |= {f"message.recipients[{n}].electronicAddress" for n, r in enumerate(message["recipients"])
                 if r["role"] not in ("WK", "DFH")}
    if message.get("guidelineId") != cdar.GUIDELINE_PPF:
        required.add("message.businessProcess")
    if code in cdar.PROCESSING_STATUSES:
        required.add("message.issuer.id")
    if code in cdar.REASON_REQUIRED:
        required.add("status.details[0].reasonCode")
    if code == cdar.PAYMENT_RECEIVED:
        required |= {"status.details", "status.details[0].characteristics"}
        required |= {f"status.details[0].characteristics[{n}].{f}" for n, _ in
                     enumerate(status["details"][0]["characteristics"]) for f in ("amount", "percent")}
    return required


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_removing_each_required_field_is_a_400_naming_it_with_its_mdt_term(path):
    request = load_request(path.read_bytes())
    required = _required(request)
    present = set(_leaves(request))
    assert required <= present, required - present
    for field in sorted(present):
        try:
            _generate(_without(request, field))
        except ApiError as exc:
            assert exc.http_status == 400 and exc.error_code == "INVALID_INPUT", (field, exc.message)
            named = {e.field: e for e in exc.errors}
            if field in required:
                assert field in named, (field, [e.to_dict() for e in exc.errors])
                assert named[field].code == "REQUIRED"
                assert named[field].businessTerm == cdar_terms.business_term(field), field
                assert named[field].message.startswith(field)
            continue
        assert field not in required, f"{field} removed and still generated"


def test_the_400_names_the_mdt_term_and_the_rule():
    request = _fixture("207")
    del request["status"]["details"][0]["reasonCode"]
    [entry] = _refusal(request).errors
    assert (entry.field, entry.businessTerm, entry.code) == ("status.details[0].reasonCode", "MDT-113", "REQUIRED")
    assert "BR-FR-CDV-15" in entry.message and "Rejection reason code, MDT-113" in entry.message


# ---------------------------------------------------------------- contradictions

@pytest.mark.parametrize("status, change, field, term", [
    ("210", lambda r: r["status"].update(name="Approuvée"), "status.name", "MDT-106"),
    ("204", lambda r: r["status"].update(typeCode="305"), "status.typeCode", "MDT-77"),
    ("200", lambda r: r["message"]["sender"].update(role="SE"), "message.sender.role", "MDT-21"),
    ("204", lambda r: r["message"]["issuer"].update(role="WK"), "message.issuer.role", "MDT-40"),
    ("207", lambda r: r["status"]["details"][0].update(reasonCode="NON_TRANSMISE"), "status.details[0].reasonCode",
     "MDT-113"),
    ("210", lambda r: r["status"]["details"][0].update(reasonCode="JUSTIF_ABS"), "status.details[0].reasonCode",
     "MDT-113"),
    ("204", lambda r: r["message"].update(guidelineId=cdar.GUIDELINE_PPF), "message.guidelineId", "MDT-3"),
    ("204", lambda r: r["message"].update(businessProcess="B2X"), "message.businessProcess", "MDT-2"),
    ("204", lambda r: r["status"].update(documentStatusCode="10"), "status.documentStatusCode", "MDT-88"),
    ("204", lambda r: r["status"].update(dateTime="2026-09-16T10:10:00+02:00"), "status.dateTime", "MDT-78"),
    ("204", lambda r: r["invoice"].update(typeCode="325"), "invoice.typeCode", "MDT-91"),
    ("204", lambda r: r["invoice"].update(sellerSiren="1000000"), "invoice.sellerSiren", "MDT-129"),
    ("204", lambda r: r["message"]["issuer"].update(id="12345678X"), "message.issuer.id", "MDT-38"),  # scheme 0002
    ("204", lambda r: r["message"]["recipients"][0].update(id="100000009", idScheme="0009"),
     "message.recipients[0].id", "MDT-57"),  # a SIRET has 14 digits
    ("212", lambda r: r["message"]["recipients"].append({"role": "SE", "id": "100000009", "idScheme": "0002",
                                                         "electronicAddress": "x"}),
     "message.guidelineId", "MDT-3"),
    ("207", lambda r: r["status"]["details"][0].update(actionCode="XYZ"), "status.details[0].actionCode", "MDT-121"),
    ("299", None, "status.name", "MDT-106"),
    # a name of another status in English contradicts the code as the French one does (was generated: "207 Refused")
    ("207", lambda r: r["status"].update(name="Refused"), "status.name", "MDT-106"),
    ("212", lambda r: r["status"].update(name="payment sent"), "status.name", "MDT-106"),
])
def test_contradicting_data_is_a_400_before_any_generation(status, change, field, term, monkeypatch):
    request = _fixture(status if status != "299" else "204")
    if change is None:
        request["status"]["code"] = status   # a code outside FNFE's list has no name of ours
    else:
        change(request)
    ran = []
    monkeypatch.setattr(status_generate, "write_validated", lambda *a: ran.append(a))
    errors = {e.field: e for e in _refusal(request).errors}
    assert field in errors and errors[field].businessTerm == term, [e.to_dict() for e in errors.values()]
    assert not ran


def test_a_status_code_outside_the_list_with_its_name_is_generated_with_the_rules_warning():
    request = _fixture("204")
    request["status"].update(code="299", name="Statut convenu entre les parties", typeCode="23")
    xml, report = status_generate.generate_status(dump_request(request))
    assert report.valid and {(i.code, i.severity) for i in report.issues} == {("BR-FR-CDV-CL-06_MDT-105", "WARNING")}
    assert official_chain(xml)[1] == {"BR-FR-CDV-CL-06_MDT-105": 2}


def test_what_the_rules_refuse_after_the_model_is_a_422_naming_field_and_term(monkeypatch):
    monkeypatch.setattr(cdar, "request_errors", lambda request: [])
    request = _fixture("212")
    request["status"]["details"][0]["characteristics"] = [{"typeCode": "MPA", "amount": 10, "currencyCode": "EUR"}]
    error = _refusal(request)
    assert error.http_status == 422 and error.error_code == "VALIDATION_FAILED"
    [entry] = error.errors
    assert entry.code == "BR-FR-CDV-14_MDT-207" and entry.businessTerm == "MDT-207"
    assert entry.field == "status.details[].characteristics[].typeCode"
    assert entry.message.startswith("[BR-FR-CDV-14/MDT-207]")


def test_derived_values_are_written_and_sent_ones_kept():
    request = _fixture("204")
    derived = cdar.with_derived(cdar.validate_status_request(request))
    assert (derived.status.name, derived.status.typeCode, derived.status.documentStatusCode) == \
        ("Prise en charge", "23", "45")
    assert derived.message.guidelineId == cdar.GUIDELINE_INVOICE
    request["status"].update(name="Prise_en_charge", documentStatusCode="5")
    derived = cdar.with_derived(cdar.validate_status_request(request))
    assert (derived.status.name, derived.status.documentStatusCode) == ("Prise_en_charge", "5")


# ---------------------------------------------------------------- the endpoint

def test_the_endpoint_answers_the_validated_message(client):
    body = (REPO / "fixtures" / "fr-status-212.json").read_bytes()
    r = client.simulate_post(STATUS, body=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 200 and r.headers["content-type"] == "application/xml"
    assert r.headers["X-Validation-Warnings"] == "0"
    assert r.content == status_generate.generate_status(body)[0]


@pytest.mark.parametrize("body, headers, status, code", [
    (b'{"message": ', {"Content-Type": "application/json"}, 400, "INVALID_INPUT"),
    (b"{}", {"Content-Type": "application/json"}, 400, "INVALID_INPUT"),
    (b"[]", {"Content-Type": "application/json"}, 400, "INVALID_INPUT"),
    (b"{}", {"Content-Type": "text/plain"}, 415, "UNSUPPORTED_MEDIA_TYPE"),
    (b"{}", {"Content-Type": "application/json", "Accept": "image/png"}, 406, "NOT_ACCEPTABLE"),
])
def test_bad_requests_get_their_status(client, body, headers, status, code):
    r = client.simulate_post(STATUS, body=body, headers=headers)
    assert r.status_code == status and r.json["errorCode"] == code


def test_an_empty_object_names_each_missing_part(client):
    r = client.simulate_post(STATUS, body=b"{}", headers={"Content-Type": "application/json"})
    assert {e["field"] for e in r.json["errors"]} == {"message", "status", "invoice"}


def test_unknown_fields_are_refused_by_name(client):
    request = _fixture("204")
    request["status"]["colour"] = "red"
    r = client.simulate_post(STATUS, body=dump_request(request), headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and [e["field"] for e in r.json["errors"]] == ["status.colour"]
    assert r.json["errors"][0]["code"] == "UNKNOWN_FIELD"


def test_the_fixtures_are_json_a_person_can_read():
    for path in FIXTURES:
        assert json.loads(path.read_text("utf-8"))["status"]["code"] == path.stem.rsplit("-", 1)[1]


def test_pipeline_generate_is_not_needed_for_statuses_but_the_cli_validates_them(tmp_path):
    import subprocess
    import sys
    out = tmp_path / "212.xml"
    out.write_bytes(status_generate.generate_status((REPO / "fixtures" / "fr-status-212.json").read_bytes())[0])
    run = subprocess.run([sys.executable, "-m", "pipeline", "validate", "--spec", "fr-cdar", str(out)], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith(f"VALID: {out} (fr-cdar 1.4.0.03, CDAR)")
    Path(out).write_bytes(out.read_bytes().replace(b"<ram:TypeCode>MEN</ram:TypeCode>",
                                                   b"<ram:TypeCode>MPA</ram:TypeCode>"))
    run = subprocess.run([sys.executable, "-m", "pipeline", "validate", "--spec", "fr-cdar", "--json", str(out)],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1
    assert {i["code"] for i in json.loads(run.stdout)["issues"]} == {"BR-FR-CDV-14_MDT-207"}


def test_a_status_named_in_english_is_generated_with_that_name():
    request = _fixture("207")
    request["status"]["name"] = "Disputed"
    assert b"<ram:ProcessCondition>Disputed</ram:ProcessCondition>" in _generate(request)


@pytest.mark.parametrize("status, change, field, term", [
    ("207", lambda r: r["status"].pop("details"), "status.details[0].reasonCode", "MDT-113"),
    ("207", lambda r: r["status"].update(details=[]), "status.details[0].reasonCode", "MDT-113"),
    ("212", lambda r: r["status"].pop("details"), "status.details", "MDG-37"),
    ("212", lambda r: r["status"]["details"][0].pop("characteristics"), "status.details[0].characteristics",
     "MDG-43"),
    ("204", lambda r: r["message"].update(recipients=[]), "message.recipients", "MDG-23"),
])
def test_a_missing_list_is_a_400_naming_its_term(status, change, field, term):
    """A 400 about a list left out or empty names a term too (it named none: `status.details`, `message.recipients`
    had no row of their own); a missing reason is named where it goes, with the term the official rule names."""
    request = _fixture(status)
    change(request)
    errors = {e.field: e for e in _refusal(request).errors}
    assert field in errors and errors[field].businessTerm == term, [e.to_dict() for e in errors.values()]
    assert errors[field].message.startswith(field + " (")


def test_the_term_of_a_missing_reason_is_the_one_the_official_rule_names():
    """The 207 fixture's message without its reason code fails BR-FR-CDV-15_MDT-113 on FNFE's chain alone; the 400
    for the request without details names that term."""
    xml = _generate(_fixture("207"))
    tree = etree.fromstring(xml)
    for node in tree.iterfind(".//{*}SpecifiedDocumentStatus/{*}ReasonCode"):
        node.getparent().remove(node)
    valid, failed, _, severities = official_chain(etree.tostring(tree))
    rules = {rule for (rule, severity) in severities if severity == "ERROR"}
    assert not valid and rules == {"BR-FR-CDV-15_MDT-113"}
    request = _fixture("207")
    del request["status"]["details"]
    [entry] = _refusal(request).errors
    assert (entry.field, entry.businessTerm) == ("status.details[0].reasonCode",
                                                 cdar_terms.term_of_rule("BR-FR-CDV-15_MDT-113"))


def test_a_state_platform_s_refusal_names_its_own_reason_list(monkeypatch):
    """A refusal sent by the State's platform (sender 9999 of scheme 0238) has its own reasons (BR-FR-CDV-CL-09
    _MDT-113_210B2G); the rule's text lists CONTACT_ACHTR, its test refuses it. The 400 named the list of a
    business's refusal and said nothing of the State's: it now names the list and the rule that apply."""
    from test_fr_cdar_every_status import request_for
    request = request_for("210", False)
    request["message"]["sender"].update(id="9999", idScheme="0238")
    request["status"]["details"] = [{"reasonCode": "CONTACT_ACHTR"}]
    [entry] = _refusal(request).errors
    assert (entry.field, entry.businessTerm, entry.code) == ("status.details[0].reasonCode", "MDT-113", "INVALID_VALUE")
    assert "State's platform" in entry.message and "BR-FR-CDV-CL-09_MDT-113_210B2G" in entry.message
    assert "RETRAIT_MAN_SERV" in entry.message
    monkeypatch.setattr(cdar, "request_errors", lambda request: [])   # the official rules say the same
    error = _refusal(request)
    assert error.http_status == 422 and [e.code for e in error.errors] == ["BR-FR-CDV-CL-09_MDT-113_210B2G"]
    request["status"]["details"] = [{"reasonCode": "RETRAIT_MAN_SERV"}]   # the State's own reason
    assert official_chain(_generate(request))[0]
