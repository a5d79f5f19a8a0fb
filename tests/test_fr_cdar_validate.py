"""France's lifecycle status messages (CDV, CDAR D22B) on the `fr-cdar` pack: every official example validates as the
official chain run on its own says (FNFE's XSD and original stylesheets, their SVRL read by the test, no code of
ours between), each example mutated to break one rule fails exactly that rule on both sides, and the pack's
optimised copies find what the originals find."""
from __future__ import annotations

import json
from collections import Counter

import pytest
from lxml import etree

from cdar_cases import (EXD, FATAL, MUTATIONS, PACK, RRD, RULES_THAT_CANNOT_FAIL, WARNING, _add, _drop, example,
                        examples, mutated, official_chain)
from pipeline.check import cdar, engine, optimise, packs, xmlinput
from pipeline.flows.status_validate import validate_status
from pipeline.invoice import cdar_terms

ISSUE_CASES = MUTATIONS[:5]


def _ours(report) -> tuple[bool, Counter, bool, Counter]:
    xsd_valid = not any(i.code.startswith(engine.XSD_PREFIX) for i in report.issues)
    rules = [i for i in report.issues if not i.code.startswith(engine.XSD_PREFIX)]
    return (report.valid, Counter(i.code for i in rules), xsd_valid,
            Counter((i.code, i.severity) for i in rules))


def test_the_pack_is_installed_with_its_chain_and_listed():
    pack = packs.latest_active(cdar.SPEC)
    assert (pack.version, pack.release) == ("1.4.0.03", "FNFE-MPE BR-FR-CDV 1.4.0.03")
    rules = pack.rules_for(cdar.SYNTAX)
    assert rules.xsd.name == "CrossDomainAcknowledgementAndResponse_100pD22B.xsd"
    assert [s.name for s in rules.stylesheets] == [FATAL.name, WARNING.name]
    assert {pack.runnable(s) for s in rules.stylesheets} == set(pack.optimised.values())
    assert pack.content_sha256 == next(e for e in packs.load_registry() if e["spec"] == cdar.SPEC)["content_sha256"]
    listed = [p for p in packs.list_installed() if p.spec == cdar.SPEC]
    assert [p.to_dict()["syntaxes"] for p in listed] == [["CDAR"]]


@pytest.mark.parametrize("path", examples(), ids=lambda p: p.name)
def test_every_official_example_validates_as_the_official_chain_alone_says(path):
    data = path.read_bytes()
    official = official_chain(data)
    report = validate_status(data)
    assert _ours(report) == official
    assert report.valid and official[0] and not report.issues
    assert (report.syntax, report.version) == ("CDAR", "1.4.0.03")


@pytest.mark.parametrize("name, status, edit, rule", MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_an_example_mutated_to_break_one_rule_fails_exactly_that_rule(name, status, edit, rule):
    data = mutated(edit, status)
    official = official_chain(data)
    report = validate_status(data)
    assert _ours(report) == official
    assert set(official[1]) == {rule} and set(_ours(report)[1]) == {rule}
    # as FNFE publishes it: the fatal stylesheet's flag, and the same check again as a warning
    severities = Counter(i.severity for i in report.issues)
    if rule.startswith("BR-FR-CDV-CL-06_"):   # FNFE left the status code list a warning, for agreed codes
        assert report.valid and severities == Counter({"WARNING": 2})
    else:
        assert not report.valid and severities == Counter({"ERROR": 1, "WARNING": 1})


def test_every_assert_of_fnfe_s_stylesheets_is_broken_by_a_mutation_or_cannot_fail():
    """The mutations cover FNFE's rules: each assert id of both published stylesheets (.sch, fatal and _WARNING) is
    the one rule a mutation breaks, or one no message can fail (RULES_THAT_CANNOT_FAIL)."""
    def asserts(name):
        tree = etree.parse(str(PACK / "sch" / name))
        return {a.get("id") for a in tree.iter("{http://purl.oclc.org/dsdl/schematron}assert")}
    fatal, warning = asserts(FATAL.stem + ".sch"), asserts(WARNING.stem + ".sch")
    broken = [m[3] for m in MUTATIONS]
    assert fatal == warning
    assert len(broken) == len(set(broken)) and not set(broken) & set(RULES_THAT_CANNOT_FAIL)
    assert fatal == set(broken) | set(RULES_THAT_CANNOT_FAIL)


@pytest.mark.parametrize("rule, status, edit", [
    # the element the rule is about left out: the rule does not fire (another may, or the XSD)
    ("BR-FR-CDV-01_MDG-3", "204", _drop("//ram:GuidelineSpecifiedDocumentContextParameter")),
    ("BR-FR-CDV-04_MDG-4", "204", _drop(f"{EXD}/ram:IssueDateTime")),
    ("BR-FR-CDV-05_MDG-9", "204", _drop(f"{EXD}/ram:SenderTradeParty")),
    ("BR-FR-CDV-06_MDT-21", "204", _drop(f"{EXD}/ram:SenderTradeParty/ram:RoleCode")),
    ("BR-FR-CDV-10_MDT-87", "204", _drop(f"{RRD}/ram:IssuerAssignedID")),
    # an issuer identifier in the transmission phase, which the rule's text forbids
    ("BR-FR-CDV-07_MDT-38_no", "200",
     _add(f"{EXD}/ram:IssuerTradeParty", None, '<ram:GlobalID schemeID="0238">0003</ram:GlobalID>')),
], ids=lambda v: v if isinstance(v, str) and v.startswith("BR-") else "")
def test_the_rules_that_cannot_fail_do_not_fire_where_their_text_says_they_should(rule, status, edit):
    data = mutated(edit, status)
    official = official_chain(data)
    assert rule in RULES_THAT_CANNOT_FAIL and rule not in official[1]
    assert _ours(validate_status(data)) == official


def test_the_issue_cases_are_the_first_five_mutations():
    assert [m[3] for m in ISSUE_CASES] == ["BR-FR-CDV-CL-06_MDT-105", "BR-FR-CDV-CL-02_MDT-21_305",
                                           "BR-FR-CDV-15_MDT-113", "BR-FR-CDV-14_MDT-207", "BR-FR-CDV-08_MDT-73"]


def test_a_finding_has_its_line_column_french_text_and_mdt_term():
    _, status, edit, rule = ISSUE_CASES[4]   # a recipient without its electronic address
    data = mutated(edit, status)
    [error] = [i for i in validate_status(data).issues if i.severity == "ERROR"]
    assert error.code == rule == "BR-FR-CDV-08_MDT-73"
    assert error.message.startswith("[BR-FR-CDV-08/MDT-73] : Lorsque le rôle du destinataire (MDT-59) est différent")
    line = data.decode("utf-8").split("\n")[error.location.line - 1]
    assert line[error.location.column - 1:].startswith("<ram:RecipientTradeParty")
    assert "RecipientTradeParty" in error.location.xpath
    assert cdar_terms.term_of_rule(error.code) == "MDT-73"
    assert cdar_terms.field_for_rule(error.code) == ("message.recipients[].electronicAddress", "MDT-73")
    assert cdar_terms.rule_label(error.code, "fr") == "MDT-73 Adresse électronique (réseau CEF)"
    assert json.loads(json.dumps(validate_status(data).to_dict()))["syntax"] == "CDAR"


def test_an_xsd_error_is_reported_with_the_rules_findings():
    data = example("204").read_bytes().replace(b"<ram:TypeCode>23</ram:TypeCode>",
                                              b"<ram:Bogus>23</ram:Bogus><ram:TypeCode>23</ram:TypeCode>")
    report = validate_status(data)
    assert not report.valid and [i for i in report.issues if i.code.startswith(engine.XSD_PREFIX)]
    assert _ours(report) == official_chain(data)


@pytest.mark.parametrize("data, code", [
    (b"", xmlinput.XML_EMPTY), (b"<a>", xmlinput.XML_MALFORMED),
    (b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e "e">]><x/>', xmlinput.XML_DTD_FORBIDDEN),
])
def test_unreadable_input_gets_a_report_not_an_exception(data, code):
    report = validate_status(data)
    assert not report.valid and [i.code for i in report.issues] == [code] and report.syntax is None


def test_an_invoice_is_no_status_message():
    from conftest import CORPUS
    invoice = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml"
    [issue] = validate_status(invoice.read_bytes()).issues
    assert issue.code == xmlinput.XML_UNKNOWN_ROOT and "/v1/invoice/fr-ctc/validate" in issue.message


def test_an_invoice_endpoint_names_where_a_status_message_belongs():
    from pipeline.flows.validate_xml import validate_xml
    [issue] = validate_xml(example("204").read_bytes(), "en16931").issues
    assert issue.code == xmlinput.XML_UNKNOWN_ROOT and "POST /v1/invoice/fr-ctc/status/validate" in issue.message


def test_an_unknown_version_is_refused():
    from pipeline.errors import ApiError
    with pytest.raises(ApiError) as caught:
        validate_status(example("200").read_bytes(), version="0.9")
    assert caught.value.error_code == "UNSUPPORTED_VERSION" and "1.4.0.03" in caught.value.message


def test_the_optimised_copies_find_what_the_originals_find():
    """Every official example and every mutation, each stylesheet of the chain run as the original and as the
    optimised copy: the same findings (id, severity, text, location with line and column)."""
    pack = packs.latest_active(cdar.SPEC)
    pairs = [(s, pack.runnable(s)) for s in pack.rules_for(cdar.SYNTAX).stylesheets]
    assert all(copy != original and optimise.is_copy(copy.name) for original, copy in pairs)
    documents = [p.read_bytes() for p in examples()] + [mutated(edit, status) for _, status, edit, _ in MUTATIONS]
    findings = 0
    for data in documents:
        doc = xmlinput.load(data)
        sdoc = engine.saxon_document(doc)
        for original, copy in pairs:
            want = [i.to_dict() for i in engine.schematron_issues(sdoc, original, None, doc)]
            assert [i.to_dict() for i in engine.schematron_issues(sdoc, copy, None, doc)] == want
            findings += len(want)
    assert findings >= 2 * len(MUTATIONS)


# ---------------------------------------------------------------- endpoint, reports for people, batch, jobs, CLI

import io  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import zipfile  # noqa: E402

import falcon.testing  # noqa: E402

from conftest import REPO  # noqa: E402
from pipeline.service.app import create_app  # noqa: E402
from test_validate_endpoints import post  # noqa: E402

VALIDATE = "/v1/invoice/fr-ctc/status/validate"


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def test_the_endpoint_answers_the_report_of_every_validate_endpoint(client):
    r = post(client, VALIDATE, headers={"X-Request-Id": "cdv-1"}, file=example("212").read_bytes())
    assert r.status_code == 200
    assert r.json == {**validate_status(example("212").read_bytes(), request_id="cdv-1").to_dict()}
    assert (r.json["valid"], r.json["syntax"], r.json["version"], r.json["requestId"]) == \
        (True, "CDAR", "1.4.0.03", "cdv-1")
    _, status, edit, rule = ISSUE_CASES[3]
    r = post(client, VALIDATE, file=mutated(edit, status), request='{"version": "1.4.0.03"}')
    assert r.status_code == 200 and not r.json["valid"]
    assert {i["code"] for i in r.json["issues"]} == {rule}
    error = next(i for i in r.json["issues"] if i["severity"] == "ERROR")
    assert error["location"]["line"] and error["message"].startswith("[BR-FR-CDV-14/MDT-207] : Si le statut est")
    r = post(client, VALIDATE, file=example("212").read_bytes(), request='{"version": "9.9"}')
    assert r.status_code == 400 and r.json["errorCode"] == "UNSUPPORTED_VERSION"


def test_the_report_for_people_names_the_mdt_term_and_shows_a_valid_message(client, tmp_path):
    from test_render_page import page_text, pdftotext
    _, status, edit, rule = ISSUE_CASES[4]
    r = post(client, VALIDATE, headers={"Accept": "text/html"}, file=mutated(edit, status))
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    text = page_text(r.content)
    assert rule in text and "MDT-73 Recipient electronic address" in text
    assert "l’adresse électronique du destinataire (MDT-73) est obligatoire" in text.replace("'", "’")
    r = post(client, VALIDATE, headers={"Accept": "application/pdf"}, file=example("207").read_bytes(),
             request='{"metadataLanguage": "de"}')
    assert r.status_code == 200 and r.content.startswith(b"%PDF")
    shown = " ".join(pdftotext(r.content, tmp_path, "-raw").split())
    assert "Gültig" in shown and "Syntax: CDAR" in shown   # the verdict, then the message's own page
    assert "F202500007" in shown and "TX_TVA_ERR – Falscher Umsatzsteuersatz, frz. „Taux de TVA erroné“" in shown


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def test_the_batch_gives_each_message_its_report(client):
    members = {p.name: p.read_bytes() for p in examples()}
    members["broken.xml"] = mutated(ISSUE_CASES[2][2], ISSUE_CASES[2][1])
    r = post(client, VALIDATE + "/batch", file=_zip(members))
    assert r.status_code == 200
    assert r.json["summary"] == {"files": 7, "valid": 6, "invalid": 1, "indeterminate": 0, "errors": 0, "noInvoice": 0}
    by_name = {e["name"]: e["report"] for e in r.json["results"]}
    assert {i["code"] for i in by_name["broken.xml"]["issues"]} == {ISSUE_CASES[2][3]}
    assert all(report["syntax"] == "CDAR" for report in by_name.values())


def test_a_job_validates_status_messages_like_the_endpoint(tmp_path):
    from test_jobs import results, submit, wait_for
    from test_platform_helpers import serve_with_key

    server, _, token = serve_with_key(tmp_path, "jobs-cdar", 10, workers=1, warm=False)
    try:
        members = {"204.xml": example("204").read_bytes(), "no-address.xml": mutated(ISSUE_CASES[4][2], "204")}
        r = submit(server.url, token, _zip(members), {"operation": "validate", "spec": "fr-cdar"})
        assert r.status_code == 202, r.text
        job = wait_for(server.url, token, r.json()["id"])
        assert (job["state"], job["valid"], job["invalid"]) == ("done", 1, 1)
        lines = {line["name"]: line["report"] for line in results(server.url, token, job["id"])}
        alone = validate_status(members["204.xml"]).to_dict()
        assert lines["204.xml"] == alone | {"requestId": lines["204.xml"]["requestId"]}
        assert {i["code"] for i in lines["no-address.xml"]["issues"]} == {"BR-FR-CDV-08_MDT-73"}
    finally:
        server.stop()


def test_the_command_line_validates_with_spec_fr_cdar(tmp_path):
    ok = subprocess.run([sys.executable, "-m", "pipeline", "validate", "--spec", "fr-cdar", str(example("200"))],
                        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0 and ok.stdout.startswith("VALID:") and "(fr-cdar 1.4.0.03, CDAR)" in ok.stdout
    bad = tmp_path / "role.xml"
    bad.write_bytes(mutated(ISSUE_CASES[1][2], ISSUE_CASES[1][1]))
    run = subprocess.run([sys.executable, "-m", "pipeline", "validate", "--spec", "fr-cdar", str(bad),
                          "--html", str(tmp_path / "r.html")], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1 and "BR-FR-CDV-CL-02_MDT-21_305" in run.stdout
    assert "MDT-21" in (tmp_path / "r.html").read_text("utf-8")
    # without --spec the rules are detected from each file (pipeline.check.detect): a status message is fr-cdar
    many = subprocess.run([sys.executable, "-m", "pipeline", "validate", "--jobs", "1", str(example("200").parent)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert many.returncode == 0, many.stdout + many.stderr
    assert "6 documents: 6 valid, 0 invalid" in many.stdout and many.stdout.count(" fr-cdar ") == 6


@pytest.mark.parametrize("data, worst", [
    (example("207").read_bytes(), None),
    (mutated(MUTATIONS[2][2], MUTATIONS[2][1]), "business-rule"),   # BR-FR-CDV-15_MDT-113 on the official chain
    (b"<a/>", "format"),
])
def test_a_status_report_s_sentence_speaks_of_a_status_message_not_of_a_german_e_invoice(data, worst):
    """The summary sentence of a status report said what the BMF letter's classes mean for a German e-invoice ("not
    an e-invoice but an other invoice", "input VAT deduction", "the e-invoice breaks a business rule"): a status
    message of France's reform is no invoice. It now says what the class means for the message, in both languages;
    the class itself is the report's as before. The verdict is the official chain's."""
    report = validate_status(data)
    if data != b"<a/>":
        assert report.valid == official_chain(data)[0]
    assert report.worst_category == worst and report.meanings() == cdar.MEANING[worst]
    as_json = report.to_dict()["summary"]["meaning"]
    for language, text in as_json.items():
        assert "status message is no invoice" in text or "Statusmeldung ist keine Rechnung" in text, language
        assert "input VAT" not in text and "Vorsteuerabzug" not in text and "e-invoice breaks" not in text
        assert "E-Rechnung verstößt" not in text and "other invoice" not in text
