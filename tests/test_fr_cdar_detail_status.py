"""A status detail's own status (MDT-115 code, MDT-116 name: ram:ProcessConditionCode / ram:ProcessCondition of
ram:SpecifiedDocumentStatus) and the names of the business process (MDT-2).

FNFE's rules judge a detail's reason by the reason list of the detail's own status when it states one
(BR-FR-CDV-CL-09_MDT-113_<code>: `../ram:ProcessConditionCode`), else by the message's (MDT-105), and keep a code
outside the list a warning (BR-FR-CDV-CL-06_MDT-115). The JSON carried neither value: reading a message with one
listed it as unmapped, and a 207 whose detail is a suspension (208, JUSTIF_ABS), which the rules accept, was a
400. The page and the parse answer name MDT-2's codes in French and English."""
from __future__ import annotations

import copy
import json

import falcon.testing
import pytest
from lxml import html as lxml_html

from cdar_cases import DST, _add, _both, _set, mutated, official_chain
from conftest import REPO
from pipeline.errors import ApiError
from pipeline.flows import status_generate, status_read
from pipeline.invoice import cdar
from pipeline.invoice.request_json import dump_request, load_request
from pipeline.write import cdar as writing
from pipeline.service.app import create_app
from test_render_page import layout_faults
from test_validate_endpoints import post

BASE = "/v1/invoice/fr-ctc/status"
DISPUTE = load_request((REPO / "fixtures" / "fr-status-207.json").read_bytes())


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def _with_detail(**fields) -> dict:
    request = copy.deepcopy(DISPUTE)
    request["status"]["details"][0].update(fields)
    return request


def _refusal(request: dict) -> ApiError:
    with pytest.raises(ApiError) as caught:
        status_generate.generate_status(dump_request(request))
    assert caught.value.http_status == 400
    return caught.value


def test_a_detail_s_own_status_is_generated_valid_read_back_and_written_again(client):
    request = _with_detail(statusCode="208", statusName="Suspendue", reasonCode="JUSTIF_ABS")
    xml = status_generate.generate_status(dump_request(request))[0]
    valid, rules, xsd_valid, _ = official_chain(xml)
    assert valid and xsd_valid and not rules, rules
    assert b"<ram:ProcessConditionCode>208</ram:ProcessConditionCode>" in xml
    r = post(client, BASE + "/parse", file=xml)
    body = load_request(r.content)
    assert r.status_code == 200 and body["complete"] and body["unmapped"] == []
    detail = body["status"]["details"][0]
    assert (detail["statusCode"], detail["statusName"]) == ("208", "Suspendue")
    assert body["names"]["status.details[0].statusCode"] == {"code": "208", "fr": "Suspendue", "en": "Suspended",
                                                                "de": "Ausgesetzt"}
    again = status_generate.generate_status(dump_request({k: body[k] for k in ("message", "status", "invoice")}))[0]
    assert again == xml


@pytest.mark.parametrize("code, reason", [
    ("208", "JUSTIF_ABS"), ("208", "TX_TVA_ERR"), ("207", "TX_TVA_ERR"), ("210", "JUSTIF_ABS"), ("210", "DOUBLON"),
    ("206", "PU_ERR"), ("206", "TX_TVA_ERR"), ("204", "JUSTIF_ABS")])
def test_the_reason_list_of_the_detail_s_own_status_judges_as_the_official_rules_do(code, reason):
    """FNFE's 207 example with a detail status and reason: read, the model finds the message complete exactly when
    the official chain finds it valid, and otherwise names the reason (MDT-113) and the detail's status."""
    xml = mutated(_both(_add(DST, "Reason", f"<ram:ProcessConditionCode>{code}</ram:ProcessConditionCode>"),
                        _set(f"{DST}/ram:ReasonCode", reason)), "207")
    valid, rules, _, _ = official_chain(xml)
    read = status_read.parse_status(xml)
    assert read["complete"] == valid, (rules, read.get("problems"))
    assert read["status"]["details"][0]["statusCode"] == code and read["unmapped"] == []
    if not valid:
        assert set(rules) == {f"BR-FR-CDV-CL-09_MDT-113_{code}"}
        [problem] = read["problems"]
        assert (problem["field"], problem["businessTerm"]) == ("status.details[0].reasonCode", "MDT-113")
        assert f"status {code}" in problem["message"]


# two reasons of each status's list, and two of none of them
_REASONS = sorted({r for reasons in cdar.REASONS_OF.values() for r in reasons[:2]} | {"AUTRE", "JUSTIF_ABS"})


@pytest.mark.parametrize("sender", ["platform", "state"])
@pytest.mark.parametrize("top", ["204", "207", "210", "213"])
def test_the_model_and_the_official_rules_agree_on_every_detail_status_and_reason(top, sender):
    """The message written without the model's checks, for each detail status (none, or one of the statuses with a
    reason list) and reason: the model refuses it exactly when the official chain does (a refusal by the State's
    platform, sender 9999, has its own list)."""
    disagree = []
    for own in (None, "200", "206", "207", "208", "210", "213", "221", "501"):
        for reason in _REASONS:
            request = copy.deepcopy(DISPUTE)
            request["status"] = {"code": top, "dateTime": "2026-09-18T14:30:00",
                                 "details": [{"reasonCode": reason} | ({"statusCode": own} if own else {})]}
            if top == "213":   # a platform's status
                request["message"].update(sender={"role": "WK"}, issuer={"role": "WK"})
            if sender == "state":
                request["message"]["sender"].update(id="9999", idScheme="0238")
            model = cdar.StatusRequest.model_validate(request)
            refused = bool(cdar.request_errors(model))
            valid, rules, _, _ = official_chain(writing.to_cdar(writing.to_canonical(cdar.with_derived(model))).xml)
            if refused == valid:
                disagree.append((own, reason, dict(rules)))
    assert disagree == []


def test_without_its_own_status_a_detail_s_reason_is_the_message_s():
    error = _refusal(_with_detail(reasonCode="JUSTIF_ABS"))
    assert [(e.field, e.businessTerm) for e in error.errors] == [("status.details[0].reasonCode", "MDT-113")]
    assert "status 207" in error.errors[0].message


@pytest.mark.parametrize("fields, field, term", [
    ({"statusCode": "208", "statusName": "Refusée", "reasonCode": "JUSTIF_ABS"}, "status.details[0].statusName",
     "MDT-116"),
    ({"statusName": "Suspendue"}, "status.details[0].statusCode", "MDT-115"),
    ({"statusCode": "20B"}, "status.details[0].statusCode", "MDT-115"),
])
def test_a_detail_s_status_name_contradicting_or_without_its_code_is_a_400_naming_the_term(fields, field, term):
    error = _refusal(_with_detail(**fields))
    assert [(e.field, e.businessTerm) for e in error.errors] == [(field, term)]


def test_a_detail_s_status_outside_the_list_is_sent_with_the_rules_warning():
    request = _with_detail(statusCode="299", statusName="Statut convenu", reasonCode="AUTRE")
    xml, report = status_generate.generate_status(dump_request(request))
    valid, rules, _, _ = official_chain(xml)
    assert valid and set(rules) == {"BR-FR-CDV-CL-06_MDT-115"}
    assert report.warnings == sum(rules.values())
    assert {i.code for i in report.issues} == {"BR-FR-CDV-CL-06_MDT-115"}


def _facts(html: bytes) -> set[tuple[str, str]]:
    """The page's (label with term, value) pairs: each dt and its dd."""
    root = lxml_html.document_fromstring(html)
    return {(" ".join(dt.text_content().split()), " ".join(dt.getnext().text_content().split()))
            for dt in root.iter("dt")}


@pytest.mark.parametrize("lang, shown", [
    ("en", [("Invoice status code MDT-115", "208 – Suspended"), ("Invoice status name MDT-116", "Suspendue"),
            ("Business process type (billing frame) MDT-2", "REGULATED – Regulated e-invoicing (B2B in France)")]),
    ("fr", [("Code de statut de facture MDT-115", "208 – Suspendue"),
            ("Libellé de statut de facture MDT-116", "Suspendue"),
            ("Type de processus métier (cadre de facturation) MDT-2",
             "REGULATED – Facturation électronique réglementée (B2B en France)")]),
])
def test_the_page_names_the_detail_s_status_and_the_business_process(lang, shown, tmp_path):
    request = _with_detail(statusCode="208", statusName="Suspendue", reasonCode="JUSTIF_ABS")
    xml = status_generate.generate_status(dump_request(request))[0]
    facts = _facts(status_read.render_status([("207.xml", xml)], lang, html=True))
    for fact in shown:
        assert fact in facts, fact
    assert layout_faults(status_read.render_status([("207.xml", xml)], lang), tmp_path) == []


@pytest.mark.parametrize("process, fr, en, de", [
    ("REGULATED", "Facturation électronique réglementée (B2B en France)", "Regulated e-invoicing (B2B in France)",
     "Regulierte E-Rechnungsstellung (B2B in Frankreich)"),
    ("B2BINT", "Opération internationale entre entreprises (B2B)", "International business-to-business (B2B)",
     "Internationales Geschäft zwischen Unternehmen (B2B)"),
    ("OUTOFSCOPE", "Hors du champ de la réforme", "Outside the reform's scope",
     "Außerhalb des Geltungsbereichs der Reform"),
])
def test_parse_names_the_business_process_and_the_other_codes(client, process, fr, en, de):
    request = copy.deepcopy(DISPUTE)
    request["message"]["businessProcess"] = process
    xml = status_generate.generate_status(dump_request(request))[0]
    body = json.loads(post(client, BASE + "/parse", file=xml).content)
    names = body["names"]
    assert names["message.businessProcess"] == {"code": process, "fr": fr, "en": en, "de": de}
    assert names["status.code"] == {"code": "207", "fr": "En litige", "en": "Disputed", "de": "Strittig"}
    assert names["message.recipients[0].role"]["en"] == "Seller"
    assert names["status.details[0].reasonCode"]["fr"] == "Taux de TVA erroné"
    # free texts and identifiers are no codes: not named
    assert not {path for path in names if path.endswith((".id", ".name", ".reason", ".number"))}


def _ppf_message(process: str) -> bytes:
    request = copy.deepcopy(load_request((REPO / "fixtures" / "fr-status-212.json").read_bytes()))
    request["message"].update(businessProcess=process, guidelineId="urn.cpro.gouv.fr:1p0:CDV:einvoicingF2",
                              recipients=[{"role": "DFH", "id": "0000", "idScheme": "0238", "name": "PPF"}])
    return status_generate.generate_status(dump_request(request))[0]


def test_a_ppf_message_s_short_business_process_is_named_as_the_billing_frame_it_is():
    """A message to the PPF alone carries its own short MDT-2 (at most 3 characters, BR-FR-CDV-CL-01): FNFE's examples
    name MDT-2 "Type de processus métier (cadre de facturation)", and a frame of BR-FR-08 is named as XP Z12-012 lists
    it (S1: "Dépôt d'une facture de prestation de service"), in parse, the timeline and the page; it was shown as a
    bare code, then under a label of ours."""
    xml = _ppf_message("S1")
    read = status_read.parse_status(xml)
    assert read["message"]["businessProcess"] == "S1"
    assert read["names"]["message.businessProcess"] == {
        "code": "S1", "fr": "Dépôt d'une facture de prestation de service",
        "en": "Submission of an invoice for services", "de": "Einreichung einer Rechnung über Dienstleistungen"}
    [status] = status_read.timeline([("212.xml", xml)])["invoices"][0]["statuses"]
    assert status["names"]["message.businessProcess"]["en"] == "Submission of an invoice for services"
    facts = {language: _facts(status_read.render_status([("212.xml", xml)], language, html=True))
             for language in ("en", "de")}
    assert ("Business process type (billing frame) MDT-2", "S1 – Submission of an invoice for services") \
        in facts["en"]
    assert ("Art des Geschäftsprozesses (Abrechnungsrahmen) MDT-2",
            "S1 – Einreichung einer Rechnung über Dienstleistungen, frz. „Dépôt d'une facture de prestation de service“") \
        in facts["de"]


def test_a_short_business_process_that_is_no_billing_frame_is_shown_as_sent():
    xml = _ppf_message("X9")
    assert "message.businessProcess" not in status_read.parse_status(xml)["names"]
    assert ("Business process type (billing frame) MDT-2", "X9") in _facts(
        status_read.render_status([("212.xml", xml)], "en", html=True))


def test_a_billing_frame_is_still_no_business_process_of_a_message_to_a_business():
    """Named for reading only: a message to a seller keeps CL-01's list (400 before generation)."""
    request = copy.deepcopy(DISPUTE)
    request["message"]["businessProcess"] = "S1"
    with pytest.raises(ApiError) as refused:
        status_generate.generate_status(dump_request(request))
    assert refused.value.http_status == 400
    assert [e.field for e in refused.value.errors] == ["message.businessProcess"]


def test_the_timeline_row_names_a_detail_s_own_status_before_its_reason():
    suspended = _with_detail(statusCode="208", statusName="Suspendue", reasonCode="JUSTIF_ABS")
    earlier = copy.deepcopy(DISPUTE)
    earlier["message"]["id"] += "-1"
    earlier["status"]["dateTime"] = "2026-09-18T14:00:00"
    files = [(f"{n}.xml", status_generate.generate_status(dump_request(r))[0]) for n, r in
             (("suspended", suspended), ("disputed", earlier))]
    root = lxml_html.document_fromstring(status_read.render_status(files, "en", html=True))
    cells = [" ".join(td.text_content().split()) for td in root.iter("td")]
    assert "208 – Suspended; JUSTIF_ABS – Supporting document missing or insufficient; CNF – Create a full credit " \
           "note" in cells
