"""A status message a receiver gets is not always valid: one that repeats an element the XSD allows once (a second
recipient name, role or address, a second sender) was a 500 READ_FAILED on parse and render and an "unread" file in
the timeline, and a data characteristic without its type code (MDT-207) broke the page (500). The reader takes the
first value, lists the repeated ones as unmapped, and the report is the official chain's."""
from __future__ import annotations

import copy

import falcon.testing
import pytest
from lxml import etree

from cdar_cases import NS, example, examples, official_chain
from pipeline.flows import status_read
from pipeline.invoice.request_json import load_request
from pipeline.service.app import create_app
from test_fr_cdar_read import BASE, _files
from test_render_page import page_text
from test_validate_endpoints import post


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def _leaves(path) -> list[int]:
    """The positions (document order) of the example's elements that hold a value."""
    tree = etree.parse(str(path))
    return [n for n, e in enumerate(tree.iter(etree.Element)) if len(e) == 0 and (e.text or "").strip()]


def _doubled(path, position: int) -> tuple[bytes, str, str]:
    """The example with its element at `position` written twice, the second time with another value: (message,
    the element's name, the second value)."""
    tree = etree.parse(str(path))
    element = list(tree.iter(etree.Element))[position]
    twin = copy.deepcopy(element)
    twin.text = f"{element.text.strip()}X"
    element.addnext(twin)
    return etree.tostring(tree, encoding="UTF-8", xml_declaration=True), etree.QName(element).localname, twin.text


@pytest.mark.parametrize("path", examples(), ids=lambda p: p.name)
def test_every_value_written_twice_is_read_from_its_first_and_the_second_listed_as_unmapped(path):
    for position in _leaves(path):
        data, name, second = _doubled(path, position)
        found = status_read.parse_status(data, validate=True)
        assert {"value": second} in [{"value": u["value"]} for u in found["unmapped"]], (name, found["unmapped"])
        assert found["validation"]["valid"] == official_chain(data)[0], name   # (a party may have several ids)
        assert status_read.timeline([("doubled.xml", data)])["unread"] == [], name


def test_the_buyer_of_a_referenced_invoice_with_two_roles_is_read(client):
    tree = etree.parse(str(example("207")))
    [seller] = tree.xpath("//ram:ReferenceReferencedDocument/ram:IssuerTradeParty", namespaces=NS)
    buyer = etree.fromstring(f'<ram:RecipientTradeParty xmlns:ram="{NS["ram"]}"><ram:GlobalID schemeID="0002">'
                             "200000008</ram:GlobalID><ram:RoleCode>BY</ram:RoleCode><ram:RoleCode>BY</ram:RoleCode>"
                             "</ram:RecipientTradeParty>")
    seller.addnext(buyer)
    r = post(client, BASE + "/parse", file=etree.tostring(tree, encoding="UTF-8", xml_declaration=True))
    assert r.status_code == 200, r.text
    assert load_request(r.content)["invoice"]["buyerSiren"] == "200000008"


def test_a_characteristic_without_its_type_code_is_drawn(client):
    tree = etree.parse(str(example("207")))
    for code in tree.xpath("//ram:SpecifiedDocumentCharacteristic/ram:TypeCode", namespaces=NS):
        code.getparent().remove(code)
    data = etree.tostring(tree, encoding="UTF-8", xml_declaration=True)
    for accept in ("text/html", "application/pdf"):
        r = _files(client, BASE + "/render", [("207.xml", data)], {"language": "fr"}, headers={"Accept": accept})
        assert r.status_code == 200, r.text
    assert "Taux TVA" in page_text(status_read.render_status([("207.xml", data)], "en", html=True))
