"""The identifiers and codes of a status request (the message's UN/CEFACT IDType and CodeType, xs:token) are written
as a schema-aware reader takes them: line breaks and tabs as spaces, runs of spaces as one, none at either end.

Written as sent, an invoice number "  F-1\\nA  " went into the message with its line break (no invoice has it), the
reader trimmed it, and generating what it read gave another message; a PPF recipient " 0000 " was no PPF to the
rules, which compare the raw text. A name or a reason is text (xs:string) and keeps its spaces."""
from __future__ import annotations

import copy

from lxml import etree

from cdar_cases import NS, official_chain
from conftest import REPO
from pipeline.flows import status_generate, status_read
from pipeline.invoice.request_json import dump_request, load_request


def _fixture(status: str) -> dict:
    return load_request((REPO / "fixtures" / f"fr-status-{status}.json").read_bytes())


def _generate(request: dict) -> bytes:
    return status_generate.generate_status(dump_request(request))[0]


def _text(xml: bytes, xpath: str) -> str:
    [node] = etree.fromstring(xml).xpath(xpath, namespaces=NS)
    return node if isinstance(node, str) else node.text


def test_identifiers_are_written_as_tokens_and_read_back_to_the_same_message():
    request = _fixture("207")
    request["message"]["id"] = " F202600042_207\t20260918 "
    request["invoice"]["number"] = "  F2026\n00042  "
    request["message"]["issuer"]["id"] = " 200000008 "
    request["message"]["recipients"][0]["electronicAddress"] = "100000009_STATUTS\n"
    request["status"]["details"][0]["characteristics"][0]["id"] = "BT-152 "
    request["status"]["details"][0]["reason"] = "  Taux de TVA erroné  "   # text: kept as sent
    xml = _generate(request)
    assert _text(xml, "//rsm:ExchangedDocument/ram:ID") == "F202600042_207 20260918"
    assert _text(xml, "//ram:ReferenceReferencedDocument/ram:IssuerAssignedID") == "F2026 00042"
    assert _text(xml, "//rsm:ExchangedDocument/ram:IssuerTradeParty/ram:GlobalID") == "200000008"
    assert _text(xml, "//rsm:ExchangedDocument/ram:RecipientTradeParty/ram:URIUniversalCommunication/ram:URIID") \
        == "100000009_STATUTS"
    assert _text(xml, "//ram:SpecifiedDocumentCharacteristic[1]/ram:ID") == "BT-152"
    assert _text(xml, "//ram:SpecifiedDocumentStatus/ram:Reason") == "  Taux de TVA erroné  "
    found = status_read.parse_status(xml)
    assert found["invoice"]["number"] == "F2026 00042"
    assert _generate({key: found[key] for key in ("message", "status", "invoice")}) == xml


def test_a_ppf_recipient_with_spaces_around_its_id_is_the_ppf():
    request = _fixture("212")   # profile einvoicingF2: its one recipient is the PPF (BR-FR-CDV-02)
    recipient = request["message"]["recipients"][0]
    recipient.update(id=" 0000 ", idScheme="0238 ")
    xml = _generate(request)
    assert official_chain(xml)[0]
    assert xml == _generate(_fixture("212"))


def test_names_and_texts_keep_their_spaces():
    request = _fixture("207")
    plain = _generate(copy.deepcopy(request))
    request["message"]["recipients"][0]["name"] = "Ateliers  Dupont SA"
    xml = _generate(request)
    assert xml != plain
    assert _text(xml, "//rsm:ExchangedDocument/ram:RecipientTradeParty/ram:Name") == "Ateliers  Dupont SA"
