"""A CDAR message whose `ram` prefix is bound to a wrong URI inside a right root (rsm:CrossDomainAcknowledgement-
AndResponse) was read as an empty status: the timeline and the page showed a status without code, date or invoice
beside the real ones. It is now a file the reading refuses, listed as unread with its code and the namespace found."""
from __future__ import annotations

import falcon.testing
import pytest

from cdar_cases import examples, example
from pipeline.check import cdar as rules, xmlinput
from pipeline.flows import status_read
from pipeline.service.app import create_app
from test_fr_cdar_read import BASE, _files
from test_validate_endpoints import post

RAM = b"ReusableAggregateBusinessInformationEntity:100"
CODE = "CDAR-CONTENT-NAMESPACE"


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def _wrong_ram(status: str = "204") -> bytes:
    data = example(status).read_bytes()
    assert data.count(RAM) == 1   # declared once, on the root
    return data.replace(RAM, b"ReusableAggregateBusinessInformationEntity:99")


def _wrong_on_acknowledgement() -> bytes:
    """Only the AcknowledgementDocument's content (the status and its invoice) in a wrong `ram` namespace."""
    data = example("204").read_bytes()
    assert data.count(b"<rsm:AcknowledgementDocument>") == 1
    return data.replace(b"<rsm:AcknowledgementDocument>",
                        b'<rsm:AcknowledgementDocument xmlns:ram="urn:example:not-ram">')


@pytest.mark.parametrize("data", [_wrong_ram(), _wrong_on_acknowledgement()], ids=["root", "acknowledgement"])
def test_a_wrong_ram_namespace_is_an_unread_file_on_the_timeline(data):
    found = status_read.timeline([("wrong.xml", data), ("good.xml", example("204").read_bytes())], names=False)
    [unread] = found["unread"]
    assert unread["file"] == "wrong.xml" and unread["error"]["code"] == CODE
    assert "another namespace" in unread["error"]["message"]
    assert rules.RAM_NS in unread["error"]["message"]   # what was expected, beside what was found
    [invoice] = found["invoices"]   # the good message alone: no empty status beside it
    assert [s["file"] for s in invoice["statuses"]] == ["good.xml"] and invoice["invoice"]["number"]


def test_the_parse_endpoint_refuses_it_with_the_code_and_the_place(client):
    r = post(client, BASE + "/parse", file=_wrong_ram())
    assert r.status_code == 400, r.text[:300]
    assert r.json["errorCode"] == status_read.NOT_A_STATUS_MESSAGE
    [detail] = r.json["errors"]
    assert detail["code"] == CODE and "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformation" \
        "Entity:99" in detail["message"]
    issue = rules.content_issue(xmlinput.load(_wrong_ram()))
    assert issue.location.line and issue.location.xpath == "/*[1]/*[1]/*[1]"


def test_the_page_lists_it_as_unread(client):
    files = [("wrong.xml", _wrong_ram("207")), ("good.xml", example("204").read_bytes())]
    page = _files(client, BASE + "/render", files, headers={"Accept": "text/html"})
    assert page.status_code == 200
    assert "wrong.xml" in page.text and "another namespace" in page.text
    alone = _files(client, BASE + "/render", [("wrong.xml", _wrong_ram("207"))], headers={"Accept": "text/html"})
    assert alone.status_code == 400 and alone.json["errors"][0]["code"] == CODE


def test_no_official_example_is_taken_for_one():
    assert all(rules.content_issue(xmlinput.load(path.read_bytes())) is None for path in examples())
