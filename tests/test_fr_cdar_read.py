"""Reading France's lifecycle status messages (CDV): the JSON generation takes (POST /v1/invoice/fr-ctc/status/parse),
an invoice's statuses in time order (.../timeline) and the readable page of one message or of several, in French
and English (.../render), judged by what the PDF paints (pdftotext) and the HTML shows."""
from __future__ import annotations

import json
import random
import uuid

import falcon.testing
import pytest
from lxml import etree

from cdar_cases import MUTATIONS, NS, example, examples, mutated, official_chain
from conftest import CORPUS, REPO
from pipeline.flows import status_generate, status_read
from pipeline.invoice.request_json import dump_request, load_request
from pipeline.service.app import create_app
from test_render_page import layout_faults, page_text, pdftotext
from test_validate_batch import limits  # noqa: F401 - the fixture  # pyflakes: ignore
from test_validate_endpoints import post

BASE = "/v1/invoice/fr-ctc/status"
UC1 = [p for p in examples() if p.name.startswith("UC1_")]   # one invoice from Déposée to Encaissée


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def _files(client, path, files: list[tuple[str, bytes]], request: dict | None = None, headers=None):
    """Several `file` parts (and a `request` part) in one multipart body."""
    boundary = uuid.uuid4().hex
    out = []
    for name, data in files:
        out.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
                   f"Content-Type: application/xml\r\n\r\n".encode() + data + b"\r\n")
    if request is not None:
        out.append(f'--{boundary}\r\nContent-Disposition: form-data; name="request"\r\n'
                   f"Content-Type: application/json\r\n\r\n{json.dumps(request)}\r\n".encode())
    out.append(f"--{boundary}--\r\n".encode())
    return client.simulate_post(path, body=b"".join(out), headers={
        "Content-Type": f"multipart/form-data; boundary={boundary}", **(headers or {})})


# ---------------------------------------------------------------- parse

def test_parse_gives_the_json_generation_takes_and_generation_writes_it_again(client):
    xml = status_generate.generate_status((REPO / "fixtures" / "fr-status-210.json").read_bytes())[0]
    r = post(client, BASE + "/parse", file=xml, request='{"validate": true}')
    assert r.status_code == 200
    body = load_request(r.content)
    assert body["complete"] and body["missing"] == [] and body["unmapped"] == []
    assert body["validation"]["valid"] and body["validation"]["syntax"] == "CDAR"
    assert body["status"]["details"][0]["reasonCode"] == "DOUBLON"
    request = {k: body[k] for k in ("message", "status", "invoice")}
    again = client.simulate_post(BASE, body=dump_request(request), headers={"Content-Type": "application/json"})
    assert again.status_code == 200 and again.content == xml


def test_amounts_are_read_as_numbers_digit_for_digit(client):
    r = post(client, BASE + "/parse", file=example("212").read_bytes())
    characteristic = load_request(r.content)["status"]["details"][0]["characteristics"][0]
    assert b'"amount": 12000,' in r.content and b'"percent": 20.00' in r.content
    assert characteristic["changed"] is False and characteristic["typeCode"] == "MEN"


def test_what_the_json_cannot_carry_is_listed_as_unmapped():
    tree = etree.parse(str(example("204")))
    ack = tree.find(f"{{{NS['rsm']}}}AcknowledgementDocument")
    second = etree.fromstring(etree.tostring(ack))
    second.find(f".//{{{NS['ram']}}}IssuerAssignedID").text = "F202500099"
    ack.addnext(second)   # a message about two invoices
    sender = tree.find(f".//{{{NS['ram']}}}SenderTradeParty")
    for n, value in enumerate(("0042", "0043")):   # a party with two identifiers
        extra = etree.Element(f"{{{NS['ram']}}}GlobalID", schemeID="0238")
        extra.text = value
        sender.insert(n, extra)
    data = etree.tostring(tree, encoding="UTF-8", xml_declaration=True)
    read = status_read.parse_status(data)
    lost = {(u["xpath"], u["value"]) for u in read["unmapped"]}
    sender_id = "/rsm:CrossDomainAcknowledgementAndResponse/rsm:ExchangedDocument/ram:SenderTradeParty/ram:GlobalID[2]"
    assert (sender_id, "0043") in lost and (sender_id + "/@schemeID", "0238") in lost
    assert ("/rsm:CrossDomainAcknowledgementAndResponse/rsm:AcknowledgementDocument[2]/"
            "ram:ReferenceReferencedDocument/ram:IssuerAssignedID", "F202500099") in lost
    assert read["message"]["sender"] == {"role": "WK", "id": "0042", "idScheme": "0238"}  # its first GlobalID


def test_a_message_missing_required_data_is_read_and_says_what_is_missing():
    from cdar_cases import MUTATIONS
    no_seller = next(m for m in MUTATIONS if m[3] == "BR-FR-CDV-13_MDT-129")
    read = status_read.parse_status(mutated(no_seller[2], no_seller[1]))
    assert not read["complete"] and read["missing"] == ["invoice.sellerSiren"]


@pytest.mark.parametrize("data, code", [
    (b"just text", "XML-MALFORMED"), (b"", "XML-EMPTY"),
    (b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e "e">]><x>&e;</x>', "XML-DTD-FORBIDDEN"),
    ((CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml").read_bytes(),
     "XML-UNKNOWN-ROOT"),   # an invoice
])
def test_what_is_no_status_message_is_a_400_saying_what_it_is(client, data, code):
    r = post(client, BASE + "/parse", file=data)
    assert r.status_code == 400 and r.json["errorCode"] == "NOT_A_STATUS_MESSAGE"
    assert r.json["errors"][0]["code"] == code and r.json["errors"][0]["field"] == "file"


# ---------------------------------------------------------------- timeline

def test_the_timeline_groups_by_invoice_and_orders_by_status_time(client):
    files = [(p.name, p.read_bytes()) for p in examples()] + [("notes.txt", b"not a message")]
    random.Random(39).shuffle(files)
    r = _files(client, BASE + "/timeline", files, {"validate": True})
    assert r.status_code == 200
    body = load_request(r.content)
    assert [(i["invoice"]["number"], [s["status"]["code"] for s in i["statuses"]]) for i in body["invoices"]] == \
        [("F202500003", ["200", "202", "204", "211", "212"]), ("F202500007", ["207"])]
    assert [s["file"] for s in body["invoices"][0]["statuses"]] == [p.name for p in UC1]
    # each step's receipt time (MDT-95) and reference type (MDT-97) are its status's (tests/test_fr_cdar_steps.py)
    assert body["invoices"][0]["invoice"] == {"number": "F202500003", "issueDate": "2025-07-01", "typeCode": "380",
                                              "sellerSiren": "100000009"}
    assert all(s["validation"]["valid"] for i in body["invoices"] for s in i["statuses"])
    assert body["unread"] == [{"file": "notes.txt", "error": {"code": "XML-MALFORMED", "message":
                                                             body["unread"][0]["error"]["message"]}}]


def test_each_status_of_a_timeline_carries_the_verdict_the_official_chain_gives(client):
    """`validation` had `valid` alone; every report gives `verdict` beside it (issue 37), the timeline's too."""
    name, status, edit, rule = MUTATIONS[2]   # a refusal without its reason
    broken = mutated(edit, status)
    files = [(p.name, p.read_bytes()) for p in UC1] + [("broken.xml", broken)]
    body = load_request(_files(client, BASE + "/timeline", files, {"validate": True}).content)
    statuses = {s["file"]: s["validation"] for i in body["invoices"] for s in i["statuses"]}
    data = dict(files)
    for file, validation in statuses.items():
        valid = official_chain(data[file])[0]
        assert (validation["valid"], validation["verdict"]) == (valid, "valid" if valid else "invalid"), file
    assert statuses["broken.xml"]["failed"] == [rule]


def test_a_message_read_twice_is_one_status_naming_both_files(client):
    """The same message from the mailbox and from the platform: one status, its copies named (JSON and page)."""
    first, second = UC1[:2]
    files = [(first.name, first.read_bytes()), (second.name, second.read_bytes()),
             ("from-mail.xml", first.read_bytes())]
    body = load_request(_files(client, BASE + "/timeline", files, {"validate": True}).content)
    (invoice,) = body["invoices"]
    assert [(s["file"], s.get("copies")) for s in invoice["statuses"]] == [(first.name, ["from-mail.xml"]),
                                                                         (second.name, None)]
    page = _files(client, BASE + "/render", files, {"language": "en"}, headers={"Accept": "text/html"})
    assert page.status_code == 200 and f"{first.name}, from-mail.xml" in page_text(page.content)
    assert page_text(page.content).count("from-mail.xml") == 1


def test_too_many_files_are_refused(client, limits, monkeypatch):
    limits(EINVOICE_MAX_BATCH_FILES=2)
    r = _files(client, BASE + "/timeline", [(p.name, p.read_bytes()) for p in UC1[:3]])
    assert r.status_code == 400 and r.json["errorCode"] == "TOO_MANY_FILES"
    limits(EINVOICE_MAX_BATCH_FILES=200)
    monkeypatch.setattr(status_read, "MAX_PDF_MESSAGES", 2)   # a PDF lays out at most so many; HTML any number
    r = _files(client, BASE + "/render", [(p.name, p.read_bytes()) for p in UC1[:3]])
    assert r.status_code == 400 and r.json["errorCode"] == "TOO_MANY_FILES" and "text/html" in r.json["message"]
    r = _files(client, BASE + "/render", [(p.name, p.read_bytes()) for p in UC1[:3]], headers={"Accept": "text/html"})
    assert r.status_code == 200


# ---------------------------------------------------------------- the page

def _pdf_text(pdf: bytes, tmp_path) -> str:
    return " ".join(pdftotext(pdf, tmp_path, "-raw").split())


@pytest.mark.parametrize("lang, labels", [
    ("en", ["Invoice status", "The invoice", "Reasons and data", "Rejection reason code MDT-113",
            "TX_TVA_ERR – Wrong VAT rate",
            "CNF – Create a full credit note", "207 – Disputed", "Recipient MDG-23", "2026-09-18 14:30",
            "10.00 %"]),
    ("fr", ["Statut de facture", "La facture", "Motifs et données", "Code motif rejet MDT-113",
            "TX_TVA_ERR – Taux de TVA erroné", "CNF – Créer un Avoir total", "207 – En litige",
            "Destinataire MDG-23", "18/09/2026 14:30", "10,00 %"]),
])
def test_a_message_s_page_shows_every_value_with_its_term_in_its_language(client, tmp_path, lang, labels):
    request = load_request((REPO / "fixtures" / "fr-status-207.json").read_bytes())
    xml = status_generate.generate_status(dump_request(request))[0]
    r = post(client, BASE + "/render", file=xml, request=json.dumps({"language": lang}))
    assert r.status_code == 200 and r.headers["content-type"] == "application/pdf"
    painted = _pdf_text(r.content, tmp_path)
    for label in labels:   # (headings are painted in capitals)
        assert label.lower() in painted.lower(), label
    for text in ("F202600042", "100000009_STATUTS (0225 –", "Librairie Martin SARL", "200000008 (0002 – SIREN)",
                 "Taux de TVA erroné sur la ligne 2 : 10 % au lieu de 20 %", "MDT-4",
                 "F202600042_207_20260918143000#380_20260912"):
        assert " ".join(text.split()) in painted.replace("- ", "-") or text in page_text(
            status_read.render_status([("207.xml", xml)], lang, html=True)), text
    assert layout_faults(r.content, tmp_path) == []


def test_several_messages_paint_a_timeline_in_order(client, tmp_path):
    files = [(p.name, p.read_bytes()) for p in reversed(UC1)]
    r = _files(client, BASE + "/render", files, {"language": "fr", "validate": True})
    assert r.status_code == 200
    painted = _pdf_text(r.content, tmp_path)
    assert "Cycle de vie de la facture" in painted and "statuts dans l’ordre du temps" in painted.lower()
    order = [painted.index(f"{code} {name}") for code, name in (("200", "Déposée"), ("202", "Reçue"),
                                                                  ("204", "Prise en charge"),
                                                                  ("211", "Paiement transmis"), ("212", "Encaissée"))]
    assert order == sorted(order)
    assert "MEN – Montant encaissé (TTC) 12 000 EUR 20,00 %" in painted.replace("\u00a0", " ") and "Valide" in painted
    assert layout_faults(r.content, tmp_path) == []


def test_the_page_as_html_and_what_is_refused(client):
    r = _files(client, BASE + "/render", [("204.xml", example("204").read_bytes())], {"language": "en"},
               headers={"Accept": "text/html"})
    assert r.status_code == 200 and r.headers["content-type"] == "text/html; charset=utf-8"
    text = page_text(r.content)
    assert "Invoice status" in text and "204 – In process" in text and "<style>" in r.text
    # the heading names the status in the page's language, not the message's own French label (MDT-106)
    assert "204 In process ·" in text and "204 Prise" not in text
    r = _files(client, BASE + "/render", [("a.txt", b"nothing")], {"language": "en"})
    assert r.status_code == 400 and r.json["errorCode"] == "NOT_A_STATUS_MESSAGE"
    r = _files(client, BASE + "/render", [("204.xml", example("204").read_bytes())], {"language": "it"})
    assert r.status_code == 400 and r.json["errors"][0]["field"] == "request.language"
    r = _files(client, BASE + "/render", [("204.xml", example("204").read_bytes())], headers={"Accept": "image/png"})
    assert r.status_code == 406


@pytest.mark.parametrize("code, reason, fr, en", [
    ("213", "REJ_SEMAN", "Rejet pour erreur sémantique", "Rejected for a semantic error"),
    ("501", "IRR_ANTIVIRUS", "Contrôle anti-virus", "Virus check"),
    ("207", "NON_CONFORME", "Mention légale manquante", "Legal mention missing"),
    ("210", "ADR_ERR", "Adresse de facturation électronique erronée", "Wrong electronic invoicing address"),
])
def test_a_rejection_s_or_refusal_s_reason_is_named_on_the_page(code, reason, fr, en):
    """The reasons of a platform's rejection (213) and of an inadmissible file (501) were shown as bare codes, and
    two labels said something else than the reform's tables: NON_CONFORME read "Non conforme" (it is a missing legal
    mention), ADR_ERR "Adresse erronée" (it is the electronic invoicing address, not a postal one)."""
    from test_fr_cdar_every_status import request_for
    request = request_for(code, False)
    request["status"]["details"] = [{"reasonCode": reason}]
    xml = status_generate.generate_status(dump_request(request))[0]
    assert official_chain(xml)[0]
    for language, label in (("fr", fr), ("en", en)):
        shown = page_text(status_read.render_status([(f"{code}.xml", xml)], language, html=True))
        assert f"{reason} – {label}" in shown, language
